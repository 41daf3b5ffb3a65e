"""A surface is the release it names, whatever interpreter runs it (docs/runtime.md, "What
a program of the release sees"), and verify's seeded runs compute the same bits twice.

* ``programs/release.py`` reads versions, Keras optimizers (by class, name and compile),
  seeded Keras initializers and the mixed-precision API: bare on real TF 2.1.0 and 2.4.1
  (the truth), and under ``--tf-api 2.1`` on TF 2.4.1 and 2.21 and ``--tf-api 2.4`` on
  TF 2.21, which must read the same (the differences kept are listed here and there).
* ``programs/training.py`` (every randomness source of a 2020 program, unseeded, a custom
  loop with ``experimental_run_v2``) runs with verify's seeding: twice on TF 2.1.0, and on
  TF 2.4.1 and 2.21 once as is under ``--tf-api 2.1`` and once with ``experimental_run_v2``
  renamed ``run`` under ``--tf-api 2.4``.  Each pair prints the same bits.
"""

import ast
import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
from roundtrip_helpers import TF24, TF221, Run, require_python, start
from test_surface import real_tf_2_1

pytestmark = pytest.mark.roundtrip

PROGRAMS = Path(__file__).resolve().parent / "programs"
RELEASE, TRAINING = PROGRAMS / "release.py", PROGRAMS / "training.py"
_runs = {}

# What a surface shows that its release did not, on purpose (docs/runtime.md says why):
# the 2.1 surface keeps TF 2.4's non-experimental mixed-precision API where the
# interpreter has it, and on TF 2.4.1 its experimental class is TF 2.4.1's own.
KEPT_DIFFERENCES = {
    (TF24, "2.1"): {"LSO(opt, 'bogus')", "from tensorflow.keras.mixed_precision import experimental", "repr(Policy('mixed_float16'))",
                    "mixed_precision.LossScaleOptimizer(opt, dynamic=, initial_scale=, dynamic_growth_steps=)",
                    "mixed_precision.LossScaleOptimizer(opt, dynamic=False, initial_scale=8)"},
    (TF221, "2.1"): {"mixed_precision.LossScaleOptimizer(opt, dynamic=, initial_scale=, dynamic_growth_steps=)",
                     "mixed_precision.LossScaleOptimizer(opt, dynamic=False, initial_scale=8)"},
    (TF221, "2.4"): set(),
}
# Python >= 3.10 names the class in a missing argument's TypeError: the type is compared
SAME_ERROR_TYPE = {"LSO(opt)"}


def releases_table():
    """``releases.RELEASES``, read without importing TensorFlow."""
    path = Path(__file__).resolve().parents[2] / "migrate_tpu" / "runtime" / "surfaces" / "releases.py"
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "RELEASES":
            return ast.literal_eval(node.value)
    raise AssertionError("no RELEASES in releases.py")


def runs():
    if not _runs:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
        _runs["2.1"] = Run("release.py on real TF 2.1.0", [real_tf_2_1(), str(RELEASE)], env)
        _runs["2.4"] = Run("release.py on real TF 2.4.1", [require_python(TF24), str(RELEASE)], env)
        for name, api in KEPT_DIFFERENCES:
            _runs[name, api] = start(require_python(name), RELEASE, tf_api=api,
                                     label="release.py on {} --tf-api {}".format(name, api))
        folder = Path(tempfile.mkdtemp(prefix="migrate-tpu-releases-"))
        renamed = folder / "training_migrated.py"
        renamed.write_text(TRAINING.read_text().replace("experimental_run_v2", "run"))

        def seeded(python, script, api, tag):
            record = {"MIGRATE_TPU_SEED": "0", "MIGRATE_TPU_RECORD": str(folder / (tag + ".json"))}
            return start(python, script, tf_api=api, extra_env=record, label="{} ({})".format(script.name, tag))

        _runs["training", "2.1", "A"] = seeded(real_tf_2_1(), TRAINING, "2.1", "tf2.1 A")
        _runs["training", "2.1", "A'"] = seeded(real_tf_2_1(), TRAINING, "2.1", "tf2.1 A'")
        for name in (TF24, TF221):
            _runs["training", name, "2.1"] = seeded(require_python(name), TRAINING, "2.1", name + " --tf-api 2.1")
            _runs["training", name, "2.4"] = seeded(require_python(name), renamed, "2.4", name + " --tf-api 2.4, migrated")
    return _runs


@pytest.mark.parametrize("api", ["2.1", "2.4"])
def test_the_recorded_release_is_the_real_one(api):
    real, recorded = runs()[api].result(), releases_table()[api]
    assert real["tf.__version__"] == real["tf.version.VERSION"] == recorded["version"]
    assert real["tf.version.GIT_VERSION"] == recorded["git_version"]
    assert real["tf.keras.__version__"] == recorded["keras_version"]
    # what the emulation must reproduce: the version guard's branch, TF 2.1/2.4's optimizers
    assert real["version guard"] == ("strategy.experimental_run_v2" if api == "2.1" else "strategy.run")
    assert real["compile(optimizer='adam') iterations"] == "Adam/iter"
    assert real["GlorotUniform after tf.random.set_seed(3)"]["second differs"]


@pytest.mark.parametrize("name, api", sorted(KEPT_DIFFERENCES))
def test_a_surface_shows_its_release(name, api):
    real, emulated = runs()[api].result(), runs()[name, api].result()
    differences = []
    for key in sorted(real):
        if key.startswith("_") or key in KEPT_DIFFERENCES[name, api]:
            continue
        if key in SAME_ERROR_TYPE:
            assert emulated[key]["error"] == real[key]["error"], key
        elif emulated.get(key) != real[key]:
            differences.append("{}: {!r} on the release, {!r} emulated".format(key, real[key], emulated.get(key)))
    assert differences == []
    # TensorFlow's and the runtime's own code still read the interpreter's version
    real_version = emulated["_real version, as TensorFlow reads it"]
    assert real_version != releases_table()[api]["version"]
    assert ".".join(map(str, emulated["_runtime's version"])) == ".".join(real_version.split(".")[:2])


def test_seeded_runs_print_the_same_bits_on_tf_2_1():
    """An unseeded shuffle distributed by experimental_distribute_dataset lost its seeds
    on TF 2.1 (tf.data's make_stateless rewrite): the losses differed from run to run."""
    first, second = runs()["training", "2.1", "A"], runs()["training", "2.1", "A'"]
    assert first.returncode == 0, first.describe()
    assert second.returncode == 0, second.describe()
    assert "epoch 1 step 3" in first.stdout
    assert first.stdout == second.stdout


@pytest.mark.parametrize("name", [TF24, TF221])
def test_a_program_and_its_migrated_twin_print_the_same_bits(name):
    before, after = runs()["training", name, "2.1"], runs()["training", name, "2.4"]
    assert before.returncode == 0, before.describe()
    assert after.returncode == 0, after.describe()
    assert "optimizer Adam Adam/iter:0 8" in before.stdout  # TF 2.1's optimizer, 8 steps
    assert before.stdout == after.stdout
