"""Round trip: a TF 2.1 TPU program, executed before and after migration, gives the same numbers.

For each program in ``programs/`` (written in TF 2.1 form):

* the original runs on TF 2.1.0 / Python 3.7 with ``--tf-api 2.1``;
* the same original runs with ``--tf-api 2.1`` on TF 2.4.1 (the runtime's TF
  2.1 surface on a newer TensorFlow);
* the output of the real codemod CLI (``python -m migrate_tpu fix -``) runs on
  TF 2.4.1 / Python 3.8 and TF 2.21 / Python 3.11 with TPU semantics;
* every run's ``RESULT`` JSON must agree with the TF 2.1 run (floats within
  tolerance), and the unmigrated original must fail on TF 2.4 where a TPU would.

All runs of one program start together (one process per program per
interpreter); the TPU is emulated with 8 replicas.
"""

import pytest

from roundtrip_helpers import (PROGRAMS, TF21, TF24, TF221, assert_same, migrate, require_python,
                      start)

pytestmark = pytest.mark.roundtrip

ROUND_TRIP = ["custom_loop", "dataset_fn", "device_assignment", "keras_fit", "keras_optimizer_lr",
              "numpy_dataset", "reduce_axis", "tpu_guide_metrics"]

_cache = {}


def _plan(name, tmp_path_factory):
    py21, py24, py221 = require_python(TF21), require_python(TF24), require_python(TF221)
    original = PROGRAMS / (name + ".py")
    status, migrated_source, report = migrate(original.read_text())
    folder = tmp_path_factory.mktemp(name)
    migrated = folder / (name + ".py")
    migrated.write_text(migrated_source)
    runs = {
        "before@2.1": start(py21, original, tf_api="2.1", label="original on TF 2.1.0"),
        "after@2.4": start(py24, migrated, label="migrated on TF 2.4.1"),
        "after@2.21": start(py221, migrated, label="migrated on TF 2.21"),
        # the TF 2.1 surface on a newer TF (TF 2.21's is covered by tests/runtime)
        "before@2.4(api 2.1)": start(py24, original, tf_api="2.1",
                                     label="original on TF 2.4.1 --tf-api 2.1"),
    }
    return runs, status, migrated_source, report


def runs_for(name, tmp_path_factory):
    """The five runs of one program; the first call queues every program's runs at once."""
    if not _cache:
        for other in ROUND_TRIP:
            _cache[other] = _plan(other, tmp_path_factory)
    return _cache[name]


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_migrated_program_gives_the_same_results(name, tmp_path_factory):
    runs, status, migrated_source, report = runs_for(name, tmp_path_factory)
    before = runs["before@2.1"].result()
    for key in ("after@2.4", "after@2.21"):
        run = runs[key]
        # A migrated source that keeps `lr=` (TPU405 renames it only for --target latest) gives the
        # same results on TF 2.21 too: the 2.4 surface hands out TF 2.4.1's optimizers, which honour
        # it, where Keras >= 2.11's own would ignore it (runtime/surfaces/releases.py)
        if run.returncode != 0:
            pytest.fail("{}\n--- codemod exit {} report:\n{}\n--- migrated source:\n{}".format(
                run.describe(), status, report, migrated_source))
        assert_same(before, run.result(), where="{}: {}".format(name, key))


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_original_runs_on_newer_tf_with_the_2_1_api(name, tmp_path_factory):
    runs = runs_for(name, tmp_path_factory)[0]
    before = runs["before@2.1"].result()
    for key in ("before@2.4(api 2.1)",):
        assert_same(before, runs[key].result(), where="{}: {}".format(name, key))


def test_migration_changed_every_program(tmp_path_factory):
    for name in ROUND_TRIP:
        migrated_source = runs_for(name, tmp_path_factory)[2]
        assert "tf.distribute.experimental.TPUStrategy(" not in migrated_source, name
        assert ".experimental_run_v2(" not in migrated_source, name


def test_unmigrated_original_fails_on_tf24_where_a_tpu_would(tmp_path_factory):
    """TF 2.4 removed experimental_run_v2: the original stops right there."""
    py24 = require_python(TF24)
    run = start(py24, PROGRAMS / "custom_loop.py", tf_api="2.4")
    assert run.returncode == 1, run.describe()
    assert "AttributeError" in run.stderr and "experimental_run_v2" in run.stderr, run.describe()
    assert "RESULT" not in run.stdout


def test_device_assignment_topology_rank_follows_the_api(tmp_path_factory):
    runs = runs_for("device_assignment", tmp_path_factory)[0]
    assert runs["before@2.1"].result()["_mesh_rank"] == 3
    assert runs["before@2.1"].result()["_has_logical_device_helpers"] is False
    for key in ("after@2.4", "after@2.21"):
        assert runs[key].result()["_mesh_rank"] == 4
        assert runs[key].result()["_has_logical_device_helpers"] is True


# --------------------------------------------------------------------------
# A plain Python function handed to an eager run
# --------------------------------------------------------------------------

MESSAGE_2_1 = ("TPUStrategy.experimental_run_v2(fn, ...) does not support eager execution. "
               "Either convert `fn` into a tf.function or consider calling "
               "strategy.experimental_run_v2 inside a tf.function.")
MESSAGE_2_4 = ("TPUStrategy.run(fn, ...) does not support pure eager execution. please make "
               "sure the function passed into `strategy.run` is a `tf.function` or "
               "`strategy.run` is called inside a `tf.function` if eager behavior is enabled.")


def _assert_refused(run, message, line_text):
    assert run.returncode == 1, run.describe()
    assert "NotImplementedError: " + message in run.stderr, run.describe()
    # the traceback points at the user's call, as on a TPU
    assert line_text in run.stderr, run.describe()
    assert "RESULT" not in run.stdout, run.describe()


def _assert_matches_reference(run):
    result = run.result()
    assert_same(result["reference"], result["totals"], where=run.label)


def test_eager_plain_function_2_1_program(tmp_path):
    py21, py24, py221 = require_python(TF21), require_python(TF24), require_python(TF221)
    original = PROGRAMS / "eager_run.py"
    status, migrated_source, report = migrate(original.read_text(), unsafe_fixes=True)
    migrated = tmp_path / "eager_run.py"
    migrated.write_text(migrated_source)
    runs = [
        start(py21, original, tf_api="2.1", label="original on TF 2.1.0"),
        start(py24, original, tf_api="2.4", label="original on TF 2.4.1"),
        start(py24, migrated, label="migrated on TF 2.4.1"),
        start(py221, migrated, label="migrated on TF 2.21"),
    ]
    # TF 2.1 on a TPU refuses the eager plain function, with its own words
    _assert_refused(runs[0], MESSAGE_2_1, "strategy.experimental_run_v2(replica_step")
    # TF 2.4 does not even have the method any more
    assert runs[1].returncode == 1 and "experimental_run_v2" in runs[1].stderr, runs[1].describe()
    # migrated (the function wrapped in tf.function): runs, right numbers
    _assert_matches_reference(runs[2])
    _assert_matches_reference(runs[3])
    assert_same(runs[2].result(), runs[3].result(), where="eager_run after")


def test_eager_plain_function_fails_unmigrated_on_tf24_and_passes_migrated(tmp_path):
    py24, py221 = require_python(TF24), require_python(TF221)
    original = PROGRAMS / "eager_run_v24.py"
    status, migrated_source, report = migrate(original.read_text(), unsafe_fixes=True)
    migrated = tmp_path / "eager_run_v24.py"
    migrated.write_text(migrated_source)
    runs = [
        start(py24, original, label="unmigrated on TF 2.4.1"),
        start(py221, original, label="unmigrated on TF 2.21"),
        start(py24, migrated, label="migrated on TF 2.4.1"),
        start(py221, migrated, label="migrated on TF 2.21"),
    ]
    _assert_refused(runs[0], MESSAGE_2_4, "strategy.run(score")
    _assert_refused(runs[1], MESSAGE_2_4, "strategy.run(score")
    _assert_matches_reference(runs[2])
    _assert_matches_reference(runs[3])
