"""verify's comparison of two records (no TensorFlow): tolerances, what is and is not a
divergence, and when tracing is a regression.  The records are shaped as
migrate_tpu/runtime/record/recorder.py writes them."""

from pathlib import Path

from migrate_tpu.verify import RunResult, compare
from migrate_tpu.verify.judge.compare import CompareContext


def scalar(x):
    return {"dtype": "float32", "shape": [], "value": x}


def record(losses, variables=(), traces=None, per_step=None):
    return {"steps": len(losses), "exit_status": 0, "exception": None,
            "events": [{"step": k + 1, "kind": "function", "where": "/nowhere/t.py:9", "value": scalar(x)} for k, x in enumerate(losses)],
            "variables": [{"name": n, "shape": [], "dtype": "float32", "replicas": [scalar(v), scalar(v)]} for n, v in variables],
            "traces": {name: {"count": c, "where": "/nowhere/t.py:3"} for name, c in (traces or {}).items()},
            "traces_per_step": per_step or [1] * len(losses)}


def result(rec):
    return RunResult(0, 1.0, rec, "", "", Path("/nowhere"))


def test_one_interpreter_compares_exactly_two_use_the_tolerance():
    before, after = record([0.5, 0.25]), record([0.5, 0.25000001])
    exact = compare(result(before), result(after), 0.0, 0.0, "t.py")
    assert (exact.verdict, exact.first_divergence["step"]) == ("diverged", 2)
    assert compare(result(before), result(after), 1e-5, 1e-6, "t.py").verdict == "same"


def test_a_variable_of_one_side_only_is_listed_not_a_divergence_but_a_changed_one_is():
    before = record([1.0], [("kernel:0", 2.0), ("SGD/decay:0", 0.0)])
    after = record([1.0], [("kernel:0", 2.0), ("SGD/iteration:0", 1.0)])
    verdict = compare(result(before), result(after), 0.0, 0.0, "t.py")
    assert verdict.verdict == "same"
    assert verdict.variables_only_in == {"before": ["SGD/decay:0"], "after": ["SGD/iteration:0"]}
    changed = compare(result(before), result(record([1.0], [("kernel:0", 4.0)])), 0.0, 0.0, "t.py")
    assert (changed.verdict, changed.first_divergence["kind"], changed.first_divergence["replica"]) == ("diverged", "variable", 0)


def test_tracing_once_warm_is_a_regression_a_first_trace_is_not():
    before = record([1.0, 1.0, 1.0], traces={"step": 1}, per_step=[1, 1, 1])
    # the codemod wraps a plain step in tf.function: one trace where there was none
    wrapped = record([1.0, 1.0, 1.0], traces={"train.<locals>.step": 1}, per_step=[1, 1, 1])
    assert compare(result(record([1.0] * 3, per_step=[0, 0, 0])), result(wrapped), 0.0, 0.0, "t.py").verdict == "same"
    again = record([1.0, 1.0, 1.0], traces={"train.<locals>.step": 3}, per_step=[1, 2, 3])
    verdict = compare(result(before), result(again), 0.0, 0.0, "t.py")
    assert verdict.verdict == "retraced"
    assert verdict.retraced["function"] == "train.<locals>.step"
    assert verdict.retraced["traces_after_first_step"] == {"before": 0, "after": 2}


def test_a_failing_migration_diverges_and_an_original_failing_before_its_first_step_is_an_error():
    failing = dict(record([1.0]), exit_status=1, exception={"type": "ValueError", "message": "boom"})
    verdict = compare(result(record([1.0])), result(failing), 0.0, 0.0, "t.py")
    assert (verdict.verdict, verdict.first_divergence["kind"], verdict.first_divergence["after"]) == ("diverged", "exception", "ValueError: boom")
    at_once = dict(record([]), exit_status=1, exception={"type": "ValueError", "message": "boom"})
    error = compare(result(at_once), result(record([1.0])), 0.0, 0.0, "t.py")
    assert error.verdict == "error" and "ValueError: boom" in error.error
    missing = dict(record([]), exit_status=1, exception={"type": "ModuleNotFoundError", "message": "No module named 'matplotlib.pyplot'"})
    advice = compare(result(missing), result(record([1.0])), 0.0, 0.0, "t.py").advice
    assert "'matplotlib'" in advice and "install" in advice and "make `migrate-tpu run" not in advice
    # a library's own ImportError that says what to install (Keras' ImageDataGenerator without SciPy)
    for message, package in [("Image transformations require SciPy. Install SciPy.", "'scipy'"),
                             ("Failed to import pydot. You must `pip install pydot` and install graphviz", "'pydot'")]:
        needs = dict(record([]), exit_status=1, exception={"type": "ImportError", "message": message})
        assert package in compare(result(needs), result(record([1.0])), 0.0, 0.0, "t.py").advice
    unrelated = dict(record([]), exit_status=1, exception={"type": "ImportError", "message": "cannot import name 'x' from 'y'"})
    assert "lacks the package" not in compare(result(unrelated), result(record([1.0])), 0.0, 0.0, "t.py").advice


def test_printed_numbers_are_compared_where_the_words_agree():
    same_values = record([1.0])
    before = RunResult(0, 1.0, same_values, "epoch 1 loss 0.50\ndone in 3.1 s\n", "", Path("/nowhere"))
    after = RunResult(0, 1.0, same_values, "epoch 1 loss 0.75\nfinished after 2.0 s\n", "", Path("/nowhere"))
    verdict = compare(before, after, 0.0, 0.0, "t.py")
    assert (verdict.verdict, verdict.first_divergence["kind"]) == ("diverged", "printed")
    assert verdict.first_divergence["before"] == "epoch 1 loss 0.50"  # the reworded line is not compared
    reworded_only = RunResult(0, 1.0, same_values, "epoch 1 loss 0.50\nfinished after 2.0 s\n", "", Path("/nowhere"))
    assert compare(before, reworded_only, 0.0, 0.0, "t.py").verdict == "same"
    timings = [RunResult(0, 1.0, same_values, text, "", Path("/nowhere")) for text in
               ("step 3: 0.21s, 450 examples/s\nelapsed 12\n", "step 3: 0.34s, 300 examples/s\nelapsed 15\n")]
    assert compare(*timings, 0.0, 0.0, "t.py").verdict == "same"  # times and speeds differ from run to run


def test_a_printed_line_more_in_one_run_leaves_the_others_compared():
    # the repository's own migration of a guide prints a policy line more, then the loss
    same_values = record([1.0])
    before = RunResult(0, 1.0, same_values, "Loss scale: 32768.0\nEpoch 0: loss=2.3759775\n", "", Path("/nowhere"))
    after = RunResult(0, 1.0, same_values, "<Policy mixed_float16>\ncompute float16, variables float32\nEpoch 0: loss=2.3762006\n", "", Path("/nowhere"))
    verdict = compare(before, after, 0.0, 0.0, "t.py")
    assert (verdict.verdict, verdict.first_divergence["before"], verdict.first_divergence["after"]) == (
        "diverged", "Epoch 0: loss=2.3759775", "Epoch 0: loss=2.3762006")
    right = RunResult(0, 1.0, same_values, "x\nprinted 1 more\nEpoch 0: loss=2.3759775\n", "", Path("/nowhere"))
    assert compare(before, right, 0.0, 0.0, "t.py").verdict == "same"


def test_a_pod_divergence_names_the_host():
    def pod(losses_per_host):
        first, *others = [record(losses) for losses in losses_per_host]
        return RunResult(0, 1.0, first, "", "", Path("/nowhere"), others)

    verdict = compare(pod([[1.0], [2.0]]), pod([[1.0], [2.5]]), 0.0, 0.0, "t.py", CompareContext(hosts=2))
    assert (verdict.verdict, verdict.first_divergence["host"], verdict.first_divergence["step"]) == ("diverged", 1, 1)
    assert compare(pod([[1.0], [2.0]]), pod([[1.0], [2.0]]), 0.0, 0.0, "t.py", CompareContext(hosts=2)).verdict == "same"


def test_reports_show_the_verdict_and_the_first_divergence():
    from migrate_tpu.verify import report

    verdict = compare(result(record([0.5, 0.25])), result(record([0.5, 0.75])), 0.0, 0.0, "t.py")
    markdown = report(verdict, "markdown", "t.py")
    assert markdown.startswith("### ❌ migrate-tpu verify: diverged")
    assert "first divergence at step 2" in markdown and "before: 0.25" in markdown and "after:  0.75" in markdown
    github = report(verdict, "github", "t.py")
    assert github.splitlines()[-1].startswith("::error") and "diverged at step 2" in github.splitlines()[-1]
    import json
    assert json.loads(report(verdict, "json", "t.py"))["first_divergence"]["step"] == 2


# --------------------------------------------------------------------------
# What pins the verdict (each would pass a loosened comparator without these)
# --------------------------------------------------------------------------


def test_a_difference_just_above_the_tolerance_diverges_and_just_below_it_does_not():
    # |after - before| <= atol + rtol * |after|: with rtol 1e-5, atol 0 and values near 1.0
    before = record([1.0, 1.0])
    below = record([1.0, 1.0 + 0.9e-5])
    above = record([1.0, 1.0 + 1.1e-5])
    assert compare(result(before), result(below), 1e-5, 0.0, "t.py").verdict == "same"
    verdict = compare(result(before), result(above), 1e-5, 0.0, "t.py")
    assert (verdict.verdict, verdict.first_divergence["step"]) == ("diverged", 2)
    # atol alone, for values near zero
    assert compare(result(record([0.0])), result(record([0.9e-6])), 0.0, 1e-6, "t.py").verdict == "same"
    assert compare(result(record([0.0])), result(record([1.1e-6])), 0.0, 1e-6, "t.py").verdict == "diverged"


def test_a_function_traced_more_often_after_under_the_same_name_is_retraced():
    before = record([1.0] * 3, traces={"train_step": 1}, per_step=[1, 1, 1])
    after = record([1.0] * 3, traces={"train_step": 2}, per_step=[1, 1, 2])
    verdict = compare(result(before), result(after), 0.0, 0.0, "t.py")
    assert verdict.verdict == "retraced"
    assert (verdict.retraced["function"], verdict.retraced["before"], verdict.retraced["after"]) == ("train_step", 1, 2)
    assert compare(result(before), result(before), 0.0, 0.0, "t.py").verdict == "same"


def test_variables_of_one_name_are_matched_in_creation_order_and_none_is_dropped():
    before = record([1.0], [("acc:0", 1.0), ("acc:0", 5.0)])
    first_changed = record([1.0], [("acc:0", 2.0), ("acc:0", 5.0)])
    verdict = compare(result(before), result(first_changed), 0.0, 0.0, "t.py")
    assert verdict.verdict == "diverged"
    assert verdict.first_divergence["what"] == "variable acc:0 (the 1st of 2 of that name)"
    second_changed = record([1.0], [("acc:0", 1.0), ("acc:0", 6.0)])
    assert "2nd of 2" in compare(result(before), result(second_changed), 0.0, 0.0, "t.py").first_divergence["what"]
    same = compare(result(before), result(before), 0.0, 0.0, "t.py")
    assert (same.verdict, same.variables_compared) == ("same", 2)


def test_a_variable_of_one_version_only_diverges_unless_it_is_optimizer_bookkeeping():
    before = record([1.0], [("dense/kernel:0", 1.0), ("Adam/iter:0", 3.0)])
    after = record([1.0], [("dense/kernel:0", 1.0), ("iteration:0", 3.0), ("extra/bias:0", 0.0)])
    verdict = compare(result(before), result(after), 0.0, 0.0, "t.py")
    assert verdict.verdict == "diverged"
    assert verdict.first_divergence["what"] == "variable extra/bias:0 exists in the migrated program only"
    bookkeeping_only = record([1.0], [("dense/kernel:0", 1.0), ("iteration:0", 3.0)])
    verdict = compare(result(before), result(bookkeeping_only), 0.0, 0.0, "t.py")
    assert verdict.verdict == "same"
    assert verdict.variables_not_compared == ({"name": "Adam/iter:0", "side": "before", "why": "optimizer bookkeeping"},
                                              {"name": "iteration:0", "side": "after", "why": "optimizer bookkeeping"})
    assert any("not compared: Adam/iter:0, iteration:0" in note for note in verdict.notes)


def test_one_replica_is_stated_and_warned_of():
    one = dict(record([1.0]), replicas=[1])
    verdict = compare(result(one), result(one), 0.0, 0.0, "t.py")
    assert verdict.verdict == "same" and any("one replica" in note for note in verdict.notes)
    eight = dict(record([1.0]), replicas=[8])
    verdict = compare(result(eight), result(eight), 0.0, 0.0, "t.py")
    assert not any("one replica" in note for note in verdict.notes)
    from migrate_tpu.verify import report
    assert "each run 8 replicas; 1 host" in report(verdict, "text", "t.py")


def test_a_printed_tensorflow_version_is_no_divergence_but_a_number_beside_it_is():
    before_record = dict(record([1.0]), tensorflow="2.1.0")
    after_record = dict(record([1.0]), tensorflow="2.4.1")
    before = RunResult(0, 1.0, before_record, "TensorFlow 2.1.0\nloss 0.5\n", "", Path("/nowhere"))
    after = RunResult(0, 1.0, after_record, "TensorFlow 2.4.1\nloss 0.5\n", "", Path("/nowhere"))
    assert compare(before, after, 0.0, 0.0, "t.py").verdict == "same"
    # one interpreter, two surfaces: the program reads its surface's release
    surfaces = [RunResult(0, 1.0, dict(record([1.0]), tensorflow="2.21.0"), f"version {v}, loss 0.5\n", "", Path("/nowhere"))
                for v in ("2.1.0", "2.4.1")]
    assert compare(*surfaces, 0.0, 0.0, "t.py").verdict == "same"
    changed = RunResult(0, 1.0, after_record, "TensorFlow 2.4.1\nloss 0.75\n", "", Path("/nowhere"))
    verdict = compare(before, changed, 0.0, 0.0, "t.py")
    assert (verdict.verdict, verdict.first_divergence["after"]) == ("diverged", "loss 0.75")


def test_the_same_late_failure_in_both_runs_is_same_and_another_one_diverges_at_that_step():
    def failing(losses, message):
        return dict(record(losses), exit_status=1, exception={"type": "ModuleNotFoundError", "message": message})

    before = failing([1.0, 2.0], "No module named 'matplotlib'")
    verdict = compare(result(before), result(failing([1.0, 2.0], "No module named 'matplotlib'")), 0.0, 0.0, "t.py")
    assert (verdict.verdict, verdict.steps) == ("same", 2)
    assert any("same exception after step 2" in note for note in verdict.notes)
    other = compare(result(before), result(failing([1.0, 2.0], "No module named 'seaborn'")), 0.0, 0.0, "t.py")
    assert (other.verdict, other.first_divergence["step"], other.first_divergence["kind"]) == ("diverged", 3, "exception")
    went_on = compare(result(before), result(record([1.0, 2.0, 3.0])), 0.0, 0.0, "t.py")
    assert (went_on.verdict, went_on.first_divergence["step"], went_on.first_divergence["kind"]) == ("diverged", 3, "exception")
    assert went_on.first_divergence["after"] is None  # the migrated program did not fail there
    earlier = compare(result(before), result(failing([1.0, 2.5], "No module named 'matplotlib'")), 0.0, 0.0, "t.py")
    assert (earlier.verdict, earlier.first_divergence["step"]) == ("diverged", 2)  # the values first


def test_release_drift_is_the_largest_difference_between_the_releases():
    from migrate_tpu.verify.judge.spread import release_drift

    before = result(dict(record([1.0, 2.0], [("w:0", 4.0)]), tensorflow="2.1.0"))
    control = result(dict(record([1.0, 2.002], [("w:0", 4.0)]), tensorflow="2.4.1"))
    drift = release_drift(before, control, 2)
    assert drift["tensorflow"] == {"before": "2.1.0", "control": "2.4.1"}
    assert abs(drift["absolute"] - 0.002) < 1e-12 and abs(drift["relative"] - 0.002 / 2.002) < 1e-12
    assert drift["where"].startswith("step 2")


def test_a_notebook_divergence_annotates_the_notebook_with_its_cell_and_both_values(tmp_path):
    import json

    from migrate_tpu.verify import report

    notebook = tmp_path / "copy" / "nb.ipynb"
    notebook.parent.mkdir()
    notebook.write_text(json.dumps({"cells": [{"cell_type": "code", "source": ["x = 1\n", "y = strategy.reduce('MEAN', v)\n"]}]}))
    rec_before, rec_after = record([0.5]), record([0.75])
    for rec in (rec_before, rec_after):
        rec["events"][0]["where"] = f"{notebook}:cell1:2"
    runs = [RunResult(0, 1.0, rec, "", "", notebook.parent, shown_root="work", program=notebook, shown_program="work/nb.ipynb")
            for rec in (rec_before, rec_after)]
    verdict = compare(*runs, 0.0, 0.0, "work/nb.ipynb")
    place = verdict.first_divergence["where"]["after"]
    assert (place["file"], place["cell"], place["line"], place["source"]) == ("work/nb.ipynb", 1, 2, "y = strategy.reduce('MEAN', v)")
    annotation = report(verdict, "github", "work/nb.ipynb").splitlines()[-1]
    assert annotation.startswith("::error file=work/nb.ipynb::")
    assert "(cell 1, line 2)" in annotation and "before 0.5, after 0.75" in annotation
    assert "nb.ipynb cell 1:2" in report(verdict, "text", "work/nb.ipynb")


def test_arrays_stored_as_bytes_are_compared_number_by_number(tmp_path):
    import struct

    from migrate_tpu.verify.values.arrays import attach_blobs

    def stored(name, numbers):
        data = struct.pack("<%df" % len(numbers), *numbers)
        path = tmp_path / name
        path.write_bytes(b"\0" * 8 + data)  # another array before it
        import hashlib
        rec = record([1.0])
        rec["variables"] = [{"name": "kernel:0", "shape": [len(numbers)], "dtype": "float32",
                             "replicas": [{"dtype": "float32", "shape": [len(numbers)], "blob": [8, len(data)],
                                           "sha1": hashlib.sha1(data).hexdigest()}] * 2}]
        rec["blob_file"] = str(path)
        attach_blobs(rec)
        return result(rec)

    numbers = [0.5 * k for k in range(100)]
    assert compare(stored("a.bin", numbers), stored("b.bin", numbers), 0.0, 0.0, "t.py").verdict == "same"
    changed = list(numbers)
    changed[70] = 35.25
    verdict = compare(stored("a.bin", numbers), stored("c.bin", changed), 0.0, 0.0, "t.py")
    assert (verdict.verdict, verdict.first_divergence["what"], verdict.first_divergence["replica"]) == ("diverged", "variable kernel:0", 0)
    assert verdict.first_divergence["before"][:3] == [0.0, 0.5, 1.0] and verdict.first_divergence["before"][-1] == "..."
    assert compare(stored("a.bin", numbers), stored("c.bin", changed), 0.01, 0.0, "t.py").verdict == "same"  # 35.25 vs 35.0
    # how far two runs' stored arrays are apart (a release's drift, an original's own spread)
    from migrate_tpu.verify.judge.spread import release_drift
    drift = release_drift(stored("a.bin", numbers), stored("c.bin", changed), 1)
    assert (drift["absolute"], drift["relative"], drift["where"]) == (0.25, 0.25 / 35.25, "variable kernel:0")
    nan = list(numbers)
    nan[3] = float("nan")
    assert compare(stored("a.bin", nan), stored("d.bin", nan), 0.01, 0.0, "t.py").verdict == "same"
    assert compare(stored("a.bin", numbers), stored("d.bin", nan), 0.01, 0.0, "t.py").verdict == "diverged"


def test_a_keras_divergence_names_the_log_key():
    def keras(loss, accuracy):
        rec = record([1.0])
        rec["events"] = [{"step": 1, "kind": "keras", "where": "/nowhere/t.py:20",
                          "value": {"dict": [["accuracy", scalar(accuracy)], ["loss", scalar(loss)]]}}]
        return result(rec)

    verdict = compare(keras(0.5, 0.25), keras(0.75, 0.25), 0.0, 0.0, "t.py")
    assert verdict.first_divergence["what"] == "a Keras execution's logs ['loss']: the values differ"
    assert (verdict.first_divergence["key"], verdict.first_divergence["before"], verdict.first_divergence["after"]) == ("loss", 0.5, 0.75)


def test_a_printed_divergence_names_the_print_and_the_steps_done_by_then(tmp_path):
    program = tmp_path / "t.py"
    program.write_text("import tensorflow as tf\nprint('start', 1)\nfor k in range(3):\n    print('loss', k)\n")

    def run(loss):
        rec = record([1.0, 1.0])
        rec["printed"] = [{"step": 0, "where": f"{program}:2", "text": "start 1"},
                          {"step": 2, "where": f"{program}:4", "text": f"loss {loss}"}]
        return RunResult(0, 1.0, rec, "", "", tmp_path, shown_root="work")

    verdict = compare(run(0.5), run(0.75), 0.0, 0.0, "work/t.py")
    divergence = verdict.first_divergence
    assert (divergence["kind"], divergence["what"], divergence["step"]) == ("printed", "a printed line, after step 2", 2)
    assert divergence["where"]["after"] == {"file": "work/t.py", "line": 4, "source": "print('loss', k)"}
    assert (divergence["before"], divergence["after"]) == ("loss 0.5", "loss 0.75")
    assert compare(run(0.5), run(0.5), 0.0, 0.0, "work/t.py").verdict == "same"


def test_nan_agrees_only_with_nan():
    assert compare(result(record([float("nan")])), result(record([float("nan")])), 0.0, 0.0, "t.py").verdict == "same"
    assert compare(result(record([float("nan")])), result(record([1.0])), 1e-5, 1e-6, "t.py").verdict == "diverged"
    assert compare(result(record([1.0])), result(record([float("nan")])), 1e-5, 1e-6, "t.py").verdict == "diverged"


def test_the_documented_tolerance_across_releases():
    # docs/verify.md: the fallback across two releases compares within rtol=1e-5, atol=1e-6
    from migrate_tpu.verify.values.verdict import DEFAULT_ATOL, DEFAULT_RTOL

    assert (DEFAULT_RTOL, DEFAULT_ATOL) == (1e-5, 1e-6)


def test_more_traces_of_one_function_is_retraced_even_when_all_come_at_the_first_step():
    before = record([1.0] * 3, traces={"train_step": 1}, per_step=[1, 1, 1])
    twice_at_once = record([1.0] * 3, traces={"train_step": 2}, per_step=[2, 2, 2])
    verdict = compare(result(before), result(twice_at_once), 0.0, 0.0, "t.py")
    assert (verdict.verdict, verdict.retraced["function"]) == ("retraced", "train_step")
    assert verdict.retraced["traces_after_first_step"] == {"before": 0, "after": 0}


def test_traces_that_come_later_once_warm_are_retraced_though_the_totals_agree():
    before = record([1.0] * 3, traces={"f": 3}, per_step=[3, 3, 3])
    later = record([1.0] * 3, traces={"f": 3}, per_step=[1, 2, 3])
    verdict = compare(result(before), result(later), 0.0, 0.0, "t.py")
    assert verdict.verdict == "retraced"
    assert verdict.retraced["traces_after_first_step"] == {"before": 0, "after": 2}


def test_a_run_that_stops_for_a_later_releases_name_is_told_from_a_program_error_at_any_step():
    # --before-api auto tries the next surface for such an original, also when it trained first
    from migrate_tpu.verify.judge.advice import stopped_for_lack_of_an_api

    def stopped(steps, message, kind="AttributeError"):
        return {"steps": steps, "exit_status": 1, "exception": {"type": kind, "message": message}}

    later_name = "'CollectiveAllReduceStrategy' object has no attribute 'cluster_resolver'"
    assert stopped_for_lack_of_an_api(stopped(0, later_name))
    assert stopped_for_lack_of_an_api(stopped(2, later_name))
    assert stopped_for_lack_of_an_api(stopped(1, "module 'tensorflow' has no attribute 'random'"))
    assert not stopped_for_lack_of_an_api(stopped(2, "'Trainer' object has no attribute 'epochs'"))
    assert not stopped_for_lack_of_an_api(stopped(2, later_name, kind="ValueError"))
    assert not stopped_for_lack_of_an_api({"steps": 2, "exit_status": 0, "exception": None})
    assert not stopped_for_lack_of_an_api(None)


def test_a_run_killed_by_sigkill_is_an_error_that_names_memory_not_a_divergence():
    after_killed = compare(result(record([1.0, 0.5])), RunResult(137, 80.0, None, "", "rename to run\n", Path("/nowhere")), 0.0, 0.0, "t.py")
    assert (after_killed.verdict, after_killed.first_divergence) == ("error", None)
    assert "migrated program was killed" in after_killed.error and "out-of-memory" in after_killed.error
    before_killed = compare(RunResult(-9, 80.0, None, "", "Instructions for updating:\n", Path("/nowhere")), result(record([1.0])), 0.0, 0.0, "t.py")
    assert before_killed.verdict == "error" and before_killed.error.startswith("the original was killed")


def test_a_missing_tensorboard_is_named_as_a_missing_package():
    # TF 2.21 no longer installs TensorBoard: tf.summary.image in a layer stops the original
    failing = record([])
    failing.update(exit_status=1, exception={"type": "StagingError", "message": "in user code:\n    TBNotInstalledError: "
                                             "TensorBoard is not installed, missing implementation for tf.summary.image"})
    verdict = compare(result(failing), result(record([1.0])), 0.0, 0.0, "t.py")
    assert verdict.verdict == "error" and "lacks the package 'tensorboard'" in verdict.advice, verdict.advice


def test_a_release_drift_is_called_rounding_only_while_it_is_small():
    # a Keras default that changed between releases (the batch size fit infers) puts the runs
    # far apart from the first step: the note must not call that rounding
    from migrate_tpu.verify.command.session import _note_drift
    from migrate_tpu.verify.values.verdict import Verdict

    def drift_note(control_loss):
        verdict = Verdict("same", steps=1)
        noted = _note_drift(verdict, result(dict(record([2.0]), tensorflow="2.1.0")),
                            result(dict(record([control_loss]), tensorflow="2.4.1")))
        assert verdict.notes == ()  # a new verdict: the one given is a value, unchanged
        return noted.notes[-1]

    assert "the releases' rounding" in drift_note(2.0000002)
    far = drift_note(5.0)
    assert "more than rounding" in far and "rounding, so" not in far
    assert "compared on TF 2.4.1 alone, exactly" in far


def test_an_error_excerpt_shows_the_users_frames_and_paths_not_the_copy_the_log_or_the_libraries():
    from migrate_tpu.verify.command.session import _with_stderr_tail

    copy = Path("/tmp/migrate-tpu-verify-x/before")
    run = RunResult(1, 1.0, None, "", "", copy, shown_root="work", program=copy / "train.py", shown_program="work/train.py")
    stderr = "\n".join([
        "2020-01-01 10:00:00.000001: I tensorflow/core/platform/cpu_feature_guard.cc:142] Your CPU supports",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.8/site-packages/migrate_tpu/runtime/process/runner.py", line 9, in run',
        "    exec(code, namespace)",
        f'  File "{copy}/train.py", line 100, in <module>',
        "    batch_loss = distributed_train_step(next(train_dataset))",
        '  File "/e/lib/python3.8/site-packages/keras_preprocessing/image/iterator.py", line 104, in __next__',
        "    return self.next(*args, **kwargs)",
        '  File "/e/lib/python3.8/site-packages/keras_preprocessing/image/iterator.py", line 116, in next',
        "    return self._get_batches_of_transformed_samples(index_array)",
        '  File "/e/lib/python3.8/site-packages/keras_preprocessing/image/affine_transformations.py", line 281, in apply',
        "    raise ImportError('Image transformations require SciPy. '",
        "ImportError: Image transformations require SciPy. Install SciPy."])
    excerpt = _with_stderr_tail("the original fails: ImportError: Image transformations require SciPy. Install SciPy.", stderr, [run])
    lines = excerpt.splitlines()
    assert lines[0].startswith("the original fails")
    assert '  File "work/train.py", line 100, in <module>' in lines  # the user's path, not the copy's
    assert "  ... 2 frames of installed libraries ..." in lines
    assert any("affine_transformations.py" in line for line in lines)  # where it raised
    assert not any("iterator.py" in line or "migrate_tpu" in line or "cpu_feature_guard" in line for line in lines)
    assert str(copy) not in excerpt and not lines[-1].startswith("ImportError")  # the headline is not said twice


def test_the_tpu_node_note_needs_the_nodes_own_error_words_all_of_them():
    """Pins tpu_machine.node_refusal's ``all(word in text for word in words)``, which verify's
    Node words (the ``error`` of an original, the note of two runs stopped alike) stand on: a
    py_function that raised (its op is ``EagerPyFunc``) or a custom op with no CPU kernel is no
    TPU Node's worker refusing local files or Python; a looser match would send the user off to
    gs:// and --tpu-env vm for an ordinary error."""
    def failing(losses, kind, message):
        return dict(record(losses), exit_status=1, exception={"type": kind, "message": message})

    node = ("NotFoundError", "No registered 'PyFunc' OpKernel for 'CPU' devices compatible with node {{node PyFunc}}")
    others = [("InvalidArgumentError", "ValueError: bad row\nTraceback (most recent call last):\n  [[{{node EagerPyFunc}}]]"),
              ("NotFoundError", "No registered 'MyOp' OpKernel for 'CPU' devices compatible with node {{node MyOp}}")]
    for error, named in [(node, True)] + [(other, False) for other in others]:
        at_once = compare(result(failing([], *error)), result(record([1.0])), 0.0, 0.0, "t.py")
        alike = compare(result(failing([1.0], *error)), result(failing([1.0], *error)), 0.0, 0.0, "t.py")
        assert ("TPU Node" in at_once.error, "TPU Node" in alike.notes[0]) == (named, named), error
