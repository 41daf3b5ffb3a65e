"""Round trip of TPU301's hoisting (issue 19): steps made anew in a loop or on every call,
made once by the fix, run on the emulated TPU with the numbers the program means and are
traced once, however many batches run.

``programs/hoisted_steps.py`` (TF 2.1 form) counts each step's traces with a Python
counter in its body, which runs only while tracing. That counter is a side effect, so the
fixes it needs are unsafe ones: the program is migrated with ``--unsafe-fixes``; the
unit tests of ``tests/test_eager_run.py`` show the same fixes applied by plain ``fix``
where the body is pure.
"""

import pytest

from roundtrip_helpers import PROGRAMS, TF21, TF24, TF221, assert_same, migrate, require_python, start

pytestmark = pytest.mark.roundtrip

MESSAGE_2_1 = "TPUStrategy.experimental_run_v2(fn, ...) does not support eager execution."


def test_hoisted_steps_run_on_the_emulated_tpu_and_trace_once(tmp_path):
    py21, py24, py221 = require_python(TF21), require_python(TF24), require_python(TF221)
    original = PROGRAMS / "hoisted_steps.py"
    status, migrated_source, report = migrate(original.read_text(), unsafe_fixes=True)
    # Each step is made once: the lambda and the factory call before the loop, the loop's def
    # moved before it, the def nested in `halved` moved to the module.
    assert "step_fn = tf.function(lambda v: tf.reduce_sum(v) * scale + count(\"lambda\"))\n" in migrated_source
    assert "step_2 = tf.function(make_step(2.0))\n" in migrated_source
    assert "@tf.function\ndef square_sum(x):" in migrated_source
    assert "@tf.function\ndef replica_half(x):" in migrated_source
    migrated = tmp_path / "hoisted_steps.py"
    migrated.write_text(migrated_source)
    # The same program with the lambda wrapped in the loop (what TPU301 never does): a new
    # tf.function, traced again, on every iteration. It shows the counter sees retracing.
    in_loop = tmp_path / "wrapped_in_loop.py"
    in_loop.write_text(migrated_source.replace(
        "strategy.run(step_fn, args=(batch,))",
        "strategy.run(tf.function(lambda v: tf.reduce_sum(v) * scale + count(\"lambda\")), args=(batch,))"))
    runs = [
        start(py21, original, tf_api="2.1", label="original on TF 2.1.0"),
        start(py24, migrated, label="migrated on TF 2.4.1"),
        start(py221, migrated, label="migrated on TF 2.21"),
        start(py24, in_loop, label="wrapped in the loop on TF 2.4.1"),
    ]
    # The original's eager plain functions are refused on a TPU, as TF 2.1 did.
    assert runs[0].returncode == 1 and MESSAGE_2_1 in runs[0].stderr, runs[0].describe()
    # one trace of each step, as tpu.replicate traces it once for all the TPU's cores
    once = {"lambda": 1, "factory": 1, "loop def": 1, "nested def": 1}
    for run in runs[1:3]:
        result = run.result()
        assert result["batches"] == 3, run.describe()
        assert_same(result["reference"], result["totals"], where=run.label)
        # One trace, the same for 3 batches as for one: never per batch.
        assert result["traces"] == once, (run.label, result["traces"])
    wrapped = runs[3].result()
    assert_same(wrapped["reference"], wrapped["totals"], where=runs[3].label)
    assert wrapped["traces"] == dict(once, **{"lambda": 3}), wrapped["traces"]


def test_plain_fix_makes_pure_steps_once_and_tensorflow_counts_one_trace_each(tmp_path):
    """The same steps with pure bodies: plain `fix` (safe fixes only) makes each once, at the
    module's level, and the program gives the NumPy reference."""
    py24, py221 = require_python(TF24), require_python(TF221)
    original = PROGRAMS / "hoisted_steps_pure.py"
    status, migrated_source, report = migrate(original.read_text())
    assert ".experimental_run_v2(" not in migrated_source and "TPU301" not in report, report
    migrated = tmp_path / "hoisted_steps_pure.py"
    migrated.write_text(migrated_source)
    runs = [start(py24, migrated, label="migrated on TF 2.4.1"), start(py221, migrated, label="migrated on TF 2.21")]
    for run in runs:
        result = run.result()
        assert result["batches"] == 3, run.describe()
        assert_same(result["reference"], result["totals"], where=run.label)
        assert result["compiled"] == ["replica_half", "square_sum", "step_2", "step_fn"], (run.label, result)
