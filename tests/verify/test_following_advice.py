"""Advice an `error` or a divergence gives that a user can follow (no TensorFlow): the
interpreter that runs an original of a later release, n/a for a release no interpreter has,
library paths without the interpreter's folders, the line a migrated run died on, the shapes
that differ."""


from migrate_tpu.verify.judge.advice import failure_advice
from pathlib import Path

from migrate_tpu.verify import RunResult, compare
from migrate_tpu.verify.judge.advice import no_record_advice
from migrate_tpu.verify.command.session import _with_stderr_tail


def test_an_original_of_a_later_release_on_an_older_interpreter_is_told_the_interpreter_that_runs_it():
    stderr = "migrate-tpu run: --tf-api 2.2 needs TensorFlow >= 2.2; this interpreter has TensorFlow 2.1.0\n"
    advice = no_record_advice(stderr)
    assert "--before-python tf2.2" in advice and "tf2.21" not in advice


def test_a_tf_2_0_name_is_not_applicable_with_the_fix_that_moves_it():
    record = {"exception": {"type": "AttributeError", "message": "Cannot set the property auto_shard on DistributeOptions."}}
    advice = failure_advice(record, "train.py")
    assert "TF 2.0 name" in advice and "n/a" in advice and "--select TPU501" in advice and "auto_shard_policy" in advice
    assert "pick the original's interpreter" not in advice


def test_a_lone_library_frame_shows_no_interpreter_folder():
    stderr = ('Traceback (most recent call last):\n  File "/work/t/as20.py", line 4, in <module>\n    options.x = False\n'
              '  File "/opt/interpreters/tf2.1/lib/python3.7/site-packages/tensorflow_core/python/data/util/options.py", '
              'line 56, in __setattr__\n    "Cannot set the property %s on %s." % (name, type(self).__name__))\n')
    run = RunResult(1, 1.0, None, "", stderr, Path("/work/t"), shown_root="t", program=Path("/work/t/as20.py"), shown_program="t/as20.py")
    excerpt = _with_stderr_tail("the original fails", stderr, [run])
    assert '"<installed>/tensorflow_core/python/data/util/options.py", line 56' in excerpt
    assert "/opt/interpreters" not in excerpt and 'File "t/as20.py", line 4' in excerpt


def _record(step_value, exception=None, traceback=""):
    return {"steps": 1, "exit_status": 1 if exception else 0, "traces": {}, "traces_per_step": [1],
            "exception": dict(exception, traceback=traceback) if exception else None,
            "events": [{"step": 1, "kind": "function", "where": "/work/t/train.py:3", "value": step_value}], "variables": []}


def test_an_exception_the_migration_raises_names_its_line_even_from_a_bare_except(tmp_path):
    program = tmp_path / "train.py"
    program.write_text("try:\n    step()\nexcept:\n    fallback()\n")
    traceback = (f'Traceback (most recent call last):\n  File "{program}", line 4, in <module>\n    fallback()\n'
                 '  File "/usr/lib/python3.11/site-packages/x.py", line 9, in fallback\nValueError: no\n')
    scalar = {"dtype": "float32", "shape": [], "value": 1.0}
    before = RunResult(0, 1.0, _record(scalar), "", "", tmp_path, program=program, shown_program="train.py", shown_root=".")
    after = RunResult(1, 1.0, _record(scalar, {"type": "ValueError", "message": "no"}, traceback), "", "", tmp_path, program=program,
                      shown_program="train.py", shown_root=".")
    divergence = compare(before, after, 0.0, 0.0, "train.py").first_divergence
    assert divergence["kind"] == "exception"
    assert divergence["where"]["after"] == {"file": "train.py", "line": 4, "source": "fallback()"}


def test_a_divergence_in_shape_shows_the_shapes():
    before = _record({"dtype": "float32", "shape": [2], "value": [1.0, 1.0]})
    after = _record({"dtype": "float32", "shape": [1, 2], "value": [[1.0, 1.0]]})
    divergence = compare(RunResult(0, 1.0, before, "", "", Path("/w")), RunResult(0, 1.0, after, "", "", Path("/w")), 0.0, 0.0,
                         "t.py").first_divergence
    assert divergence["what"].endswith("the shapes differ")
    assert (divergence["before"]["shape"], divergence["after"]["shape"]) == ([2], [1, 2])
