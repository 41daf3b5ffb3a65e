"""``--tf-api 2.1``, ``2.2`` and ``2.3`` show user code what TF 2.1.0, 2.2.3 and 2.3.4 had, no
more, and do what those releases did: compared with the real interpreters, introspected here
(a missing one fails the test under CI=true).

``programs/surface.py`` runs once per configuration: bare on each real release (the truth),
under each surface on TF 2.4.1 and 2.21, and under ``--tf-api 2.2``/``2.3`` on the real 2.2.3
and 2.3.4 themselves (their own surface plus the emulated TPU).  Under the 2.2 and 2.3 surfaces
it also trains ``programs/custom_loop_2_2.py``, a TF 2.2-era custom loop, whose losses must be
the bits that real TF 2.2.3 computes.
"""

import ast
import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
from roundtrip_helpers import TF24, TF221, Run, require_python, start

from migrate_tpu.runtime.process import envs

pytestmark = pytest.mark.roundtrip

SURFACE = Path(__file__).resolve().parent / "programs" / "surface.py"
SHIM = Path(__file__).resolve().parent / "programs" / "run_shim.py"
RUNTIME = Path(__file__).resolve().parents[2] / "migrate_tpu" / "runtime"
TF22, TF23 = "tf2.2", "tf2.3"
#: surface -> the env of its real release
REAL = {"2.1": "tf2.1", "2.2": TF22, "2.3": TF23}
#: (interpreter, surface) under the runtime
EMULATED = [(name, api) for api in REAL for name in (TF24, TF221)] + [(TF22, "2.2"), (TF23, "2.3")]
NAMES = ("tf.distribute", "tf.distribute.experimental", "TPUStrategy", "MirroredStrategy", "compat.v1 TPUStrategy",
         "TPUStrategyV2", "ReplicaContext")
# What a surface shows that its release did not, on purpose (docs/runtime.md says why): on TF 2.4.1
# the experimental mixed-precision API is TF 2.4.1's own.
KEPT_DIFFERENCES = {
    (TF24, "2.1"): {"mixed_precision.experimental", "experimental LossScaleOptimizer", "LossScaleOptimizer(opt, 'bogus')"},
    (TF24, "2.2"): {"experimental LossScaleOptimizer", "LossScaleOptimizer(opt, 'bogus')"},
    (TF24, "2.3"): {"experimental LossScaleOptimizer", "LossScaleOptimizer(opt, 'bogus')"},
}
_runs = {}


def real_tf_2_1():
    python = envs.interpreter("tf2.1")
    if python is None:
        message = "no TF 2.1.0 interpreter under {} (scripts/tf-envs tf2.1)".format(envs.envs_dir())
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    return python


def _python(name):
    return real_tf_2_1() if name == "tf2.1" else require_python(name)


def runs():
    """Every configuration's run, started at the first call (a missing interpreter: its skip)."""
    if not _runs:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
        for api, name in REAL.items():
            try:
                _runs[api] = Run("surface.py on real {}".format(name), [_python(name), str(SURFACE)], env)
            except pytest.skip.Exception as skipped:
                _runs[api] = skipped
        for name, api in EMULATED:
            try:
                _runs[name, api] = start(_python(name), SURFACE, tf_api=api,
                                         label="surface.py on {} --tf-api {}".format(name, api))
            except pytest.skip.Exception as skipped:
                _runs[name, api] = skipped
    return _runs


def result(key):
    run = runs()[key]
    if isinstance(run, BaseException):
        pytest.skip(str(run))
    return run.result()


def recorded(module, name):
    """A literal assigned in ``migrate_tpu/runtime/<folder>/<module>.py``, read without importing TensorFlow."""
    for node in ast.parse((RUNTIME / (module.replace(".", "/") + ".py")).read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            return ast.literal_eval(node.value)
    raise AssertionError("no {} in {}.py".format(name, module))


def test_the_recorded_surface_is_tf_2_1_0s():
    legacy_surface_data = recorded("surfaces.legacy", "SURFACE_2_1")
    real = result("2.1")
    assert list(legacy_surface_data["distribute"]) == real["tf.distribute"]
    assert list(legacy_surface_data["distribute.experimental"]) == real["tf.distribute.experimental"]
    assert list(legacy_surface_data["Strategy"]) == real["TPUStrategy"] == real["MirroredStrategy"]
    assert sorted(legacy_surface_data["Strategy"] + legacy_surface_data["TPUStrategyV1"]) == real["compat.v1 TPUStrategy"]
    assert list(legacy_surface_data["ReplicaContext"]) == real["ReplicaContext"]
    assert real["TPUStrategyV2"] is None
    # the classes have what their instances have (hasattr(tf.distribute.Strategy, 'run') is False)
    classes = real["classes"]
    for key in ("tf.distribute.Strategy", "tf.distribute.MirroredStrategy", "tf.distribute.OneDeviceStrategy",
                "tf.distribute.experimental.TPUStrategy", "tf.compat.v1.distribute.Strategy",
                "tf.compat.v1.distribute.MirroredStrategy"):
        assert classes[key] == list(legacy_surface_data["Strategy"]), key
    assert classes["tf.compat.v1.distribute.experimental.TPUStrategy"] == real["compat.v1 TPUStrategy"]
    assert classes["tf.distribute.ReplicaContext"] == real["ReplicaContext"]
    assert classes["tf.distribute.TPUStrategy"] is None


@pytest.mark.parametrize("api", ["2.2", "2.3"])
def test_the_recorded_surface_and_release_are_the_real_ones(api):
    surface, real = recorded("surfaces.legacy", "SURFACE_" + api.replace(".", "_")), result(api)
    assert list(surface["distribute"]) == real["tf.distribute"]
    assert list(surface["distribute.experimental"]) == real["tf.distribute.experimental"]
    assert list(surface["Strategy"]) == real["TPUStrategy"] == real["MirroredStrategy"]
    assert real["TPUStrategyV2"] == (list(surface["Strategy"]) if api == "2.3" else None)  # tf.distribute.TPUStrategy: TF 2.3
    assert list(surface["compat.v1 TPUStrategy"]) == real["compat.v1 TPUStrategy"]
    assert list(surface["ReplicaContext"]) == real["ReplicaContext"]
    classes = real["classes"]
    for key in ("tf.distribute.Strategy", "tf.distribute.MirroredStrategy", "tf.distribute.experimental.TPUStrategy"):
        assert classes[key] == list(surface["Strategy"]), key
    assert classes["tf.compat.v1.distribute.experimental.TPUStrategy"] == list(surface["compat.v1 TPUStrategy"])
    assert classes["tf.distribute.TPUStrategy"] == real["TPUStrategyV2"]
    # what user code reads of the release (releases.RELEASES; verify compares these as versions)
    release = recorded("surfaces.releases", "RELEASES")[api]
    assert real["facts"]["versions"] == [release["version"], release["version"], release["git_version"],
                                         release["keras_version"]]
    assert release["version"] == {"2.2": "2.2.3", "2.3": "2.3.4"}[api]


def test_what_differs_between_the_releases():
    """The behaviours the surfaces encode, as the real releases show them."""
    facts = {api: result(api)["facts"] for api in REAL}
    assert [facts[api]["topology rank"] for api in REAL] == [3, 3, 4]  # TF 2.3's Topology is 4-D
    assert facts["2.1"]["TPUClusterResolver(tpu='').master(), no TPU_NAME"] == ""  # the local TPU
    for api in ("2.2", "2.3"):
        assert facts[api]["TPUClusterResolver(tpu='').master(), no TPU_NAME"]["error"] == "ValueError"
        assert facts[api]["experimental_run_v2 calls run"] == "run"
        assert facts[api]["eager run refusal"]["message"].startswith("TPUStrategy.run(fn, ...) does not support pure eager")
        assert facts[api]["MirroredStrategy.experimental_assign_to_logical_device"]["error"] == "NotImplementedError"
    assert facts["2.2"]["experimental TPUStrategy logs its deprecation"] is False
    assert facts["2.3"]["experimental TPUStrategy logs its deprecation"] is True


@pytest.mark.parametrize("name, api", EMULATED)
def test_emulated_surface_has_what_the_release_had_and_nothing_more(name, api):
    real, emulated = result(api), result((name, api))
    for key in NAMES:
        assert emulated[key] == real[key], (key, sorted(set(emulated[key] or ()) ^ set(real[key] or ())))
    # the classes too: hasattr(tf.distribute.Strategy, 'run') is False under 2.1
    for key in sorted(real["classes"]):
        emulated_names, real_names = emulated["classes"][key], real["classes"][key]
        assert emulated_names == real_names, (key, sorted(set(emulated_names or ()) ^ set(real_names or ())))
    kept = KEPT_DIFFERENCES.get((name, api), set())
    differences = ["{}: {!r} on the release, {!r} emulated".format(key, real["facts"][key], emulated["facts"].get(key))
                   for key in sorted(real["facts"]) if key not in kept and emulated["facts"].get(key) != real["facts"][key]]
    assert differences == []
    assert sorted(emulated["facts"]) == sorted(real["facts"])
    # the error names TensorFlow's class, not the emulation's, also from a tf.function
    # (AutoGraph-converted user code); run came with TF 2.2, gather with 2.4
    hidden = emulated["_hidden"]
    assert hidden == ("run" if api == "2.1" else "gather")
    message = "'TPUStrategy' object has no attribute '{}'".format(hidden)
    assert emulated["_hidden_error"] == {"error": "AttributeError", "message": message}
    assert emulated["_graph_hidden_error"]["message"] == "AttributeError: " + message
    if name == TF22:  # TF 2.2's reduce(axis=...) calls run with a plain function: a TPU refuses it eagerly
        assert emulated["_axis_sum"]["error"] == "NotImplementedError"
    else:
        assert emulated["_axis_sum"] == 8 * 2.0  # TensorFlow's own use of run still works


@pytest.mark.parametrize("name, api", [config for config in EMULATED if config[1] != "2.1"])
def test_a_tf_2_2_program_computes_the_bits_of_tf_2_2_3(name, api):
    """strategy.run and experimental_distribute_datasets_from_function on the experimental
    TPUStrategy in a tf.function: the losses real TF 2.2.3 computes under its own surface."""
    reference = result((TF22, "2.2"))["losses"]
    assert len(reference) == 6
    assert result((name, api))["losses"] == reference


#: (interpreter, surface) that run programs/run_shim.py; the truth is the bare real release
SHIM_RUNS = [("tf2.1", "2.1"), (TF24, "2.1"), (TF221, "2.1"), (TF24, "2.4"), (TF221, "2.4")]
_shim_runs = {}


def shim_result(key):
    if not _shim_runs:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
        for api, name in (("2.1", "tf2.1"), ("2.4", TF24)):
            try:
                _shim_runs[api] = Run("run_shim.py on real {}".format(name), [_python(name), str(SHIM)], env)
            except pytest.skip.Exception as skipped:
                _shim_runs[api] = skipped
        for name, api in SHIM_RUNS:
            try:
                _shim_runs[name, api] = start(_python(name), SHIM, tf_api=api,
                                              label="run_shim.py on {} --tf-api {}".format(name, api))
            except pytest.skip.Exception as skipped:
                _shim_runs[name, api] = skipped
    run = _shim_runs[key]
    if isinstance(run, BaseException):
        pytest.skip(str(run))
    return run.result()


@pytest.mark.parametrize("name, api", SHIM_RUNS)
def test_the_2020_run_shim_does_what_it_did_on_the_release(name, api):
    """``if not hasattr(tf.distribute.Strategy, 'run'): tf.distribute.Strategy.run =
    tf.distribute.Strategy.experimental_run_v2`` (mead-baseline and others): the classes have
    ``run`` after it and not before, as on TF 2.1.0, and ``strategy.run`` of a tf.function step
    works, on the emulated TPUStrategy too, and so does Keras's fit (TensorFlow's own run, whose
    ``super().run`` finds the shim); under 2.4 the shim does nothing, as on TF 2.4.1."""
    real, emulated = shim_result(api), shim_result((name, api))
    assert {k: v for k, v in emulated.items() if not k.startswith("_")} == real
    if api == "2.1":
        assert real["before"]["run"] == [] and "tf.distribute.experimental.TPUStrategy" in real["after"]["run"]
    else:
        assert real["before"]["experimental_run_v2"] == [] and real["before"] == real["after"]
    assert emulated["_tpu has run, before"] is (api != "2.1")
    assert emulated["_tpu has run, after"] is True
    assert emulated["_tpu.run(step)"] == [3.0] * 8
    assert emulated["_tpu fit"] == real["OneDeviceStrategy fit"]  # Keras's own use of run


@pytest.mark.parametrize("name", ["tf2.1", TF24, TF221])
def test_the_shim_under_verify_s_recorder_is_recorded_and_still_hidden(name, tmp_path):
    """verify records every run (runtime/record/recorder.py wraps TensorFlow's run where the class
    defines it): under the 2.1 surface that is the surface's hiding descriptor, whose value the
    recorder wraps; the emulated TPU's run goes through that wrapper (so its steps are recorded)
    and never through the program's shim (which would call itself). The program sees what it
    sees unrecorded."""
    record = tmp_path / "record.json"
    recorded = start(_python(name), SHIM, tf_api="2.1", label="run_shim.py recorded on {}".format(name),
                     extra_env={"MIGRATE_TPU_RECORD": str(record), "MIGRATE_TPU_SEED": "0"}).result()
    assert {k: v for k, v in recorded.items() if not k.startswith("_")} == shim_result("2.1")
    assert recorded["_tpu has run, before"] is False and recorded["_tpu.run(step)"] == [3.0] * 8
    written = json.loads(record.read_text())
    assert written["steps"] >= 1 and 8 in written["replicas"], {k: written[k] for k in ("steps", "replicas", "exception")}
