"""``--tf-api 2.1`` shows user code what TF 2.1.0 had, no more: compared with the real
TF 2.1.0 interpreter, introspected here (a missing one fails the test under CI=true)."""

import ast
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
from roundtrip_helpers import TF24, TF221, Run, require_python, start

from migrate_tpu.runtime import envs

pytestmark = pytest.mark.roundtrip

SURFACE = Path(__file__).resolve().parent / "programs" / "surface.py"
_runs = {}


def real_tf_2_1():
    python = envs.interpreter("tf2.1")
    if python is None:
        message = "no TF 2.1.0 interpreter under {} (scripts/tf-envs tf2.1)".format(envs.envs_dir())
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    return python


def runs():
    if not _runs:
        python21 = real_tf_2_1()
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
        _runs["real"] = Run("surface.py on real TF 2.1.0", [python21, str(SURFACE)], env)
        for name in (TF24, TF221):
            _runs[name] = start(require_python(name), SURFACE, tf_api="2.1",
                                label="surface.py on {} --tf-api 2.1".format(name))
    return _runs


def recorded_surface():
    """``legacy.SURFACE_2_1``, read without importing TensorFlow."""
    path = Path(__file__).resolve().parents[2] / "migrate_tpu" / "runtime" / "legacy.py"
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "SURFACE_2_1":
            return ast.literal_eval(node.value)
    raise AssertionError("no SURFACE_2_1 in legacy.py")


def test_the_recorded_surface_is_tf_2_1_0s():
    legacy_surface_data = recorded_surface()
    real = runs()["real"].result()
    assert list(legacy_surface_data["distribute"]) == real["tf.distribute"]
    assert list(legacy_surface_data["distribute.experimental"]) == real["tf.distribute.experimental"]
    assert list(legacy_surface_data["Strategy"]) == real["TPUStrategy"] == real["MirroredStrategy"]
    assert sorted(legacy_surface_data["Strategy"] + legacy_surface_data["TPUStrategyV1"]) == real["compat.v1 TPUStrategy"]
    assert list(legacy_surface_data["ReplicaContext"]) == real["ReplicaContext"]


@pytest.mark.parametrize("name", [TF24, TF221])
def test_emulated_surface_has_what_tf_2_1_had_and_nothing_more(name):
    real = runs()["real"].result()
    emulated = runs()[name].result()
    for key in ("tf.distribute", "tf.distribute.experimental", "TPUStrategy", "MirroredStrategy", "compat.v1 TPUStrategy",
                "ReplicaContext"):
        assert emulated[key] == real[key], (key, sorted(set(emulated[key]) ^ set(real[key])))
    # the error names TensorFlow's class, not the emulation's
    assert emulated["_run_error"] == "'TPUStrategy' object has no attribute 'run'"
    # also from a tf.function (AutoGraph-converted user code)
    assert emulated["_graph_run_error"] == "AttributeError: 'TPUStrategy' object has no attribute 'run'"
    assert emulated["_axis_sum"] == 8 * 2.0  # TensorFlow's own use of run still works
