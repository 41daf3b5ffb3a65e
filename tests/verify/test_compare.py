"""verify's comparison of two records (no TensorFlow): tolerances, what is and is not a
divergence, and when tracing is a regression.  The records are shaped as
migrate_tpu/runtime/recorder.py writes them."""

from pathlib import Path

from migrate_tpu.verify import RunResult, compare


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


def test_a_failing_migration_diverges_and_a_failing_original_is_an_error():
    failing = dict(record([1.0]), exit_status=1, exception={"type": "ValueError", "message": "boom"})
    verdict = compare(result(record([1.0])), result(failing), 0.0, 0.0, "t.py")
    assert (verdict.verdict, verdict.first_divergence["kind"], verdict.first_divergence["after"]) == ("diverged", "exception", "ValueError: boom")
    error = compare(result(failing), result(record([1.0])), 0.0, 0.0, "t.py")
    assert error.verdict == "error" and "ValueError: boom" in error.error


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


def test_a_pod_divergence_names_the_host():
    def pod(losses_per_host):
        first, *others = [record(losses) for losses in losses_per_host]
        return RunResult(0, 1.0, first, "", "", Path("/nowhere"), others)

    verdict = compare(pod([[1.0], [2.0]]), pod([[1.0], [2.5]]), 0.0, 0.0, "t.py", hosts=2)
    assert (verdict.verdict, verdict.first_divergence["host"], verdict.first_divergence["step"]) == ("diverged", 1, 1)
    assert compare(pod([[1.0], [2.0]]), pod([[1.0], [2.0]]), 0.0, 0.0, "t.py", hosts=2).verdict == "same"


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
