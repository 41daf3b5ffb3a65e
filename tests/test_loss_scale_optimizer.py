"""TPU403's findings say what the loss-scale argument is: a literal (fixed), a name bound once
to a literal (fixed, the name kept), a `LossScale` object, or a value known only at run time
(a flag, a parameter, a call), each reported in its own words."""

import ast

import pytest

from migrate_tpu.codemod.migration.api import Options, migrate

HEADER = "import tensorflow as tf\n\nopt = tf.keras.optimizers.SGD(0.1)\n"
OLD = "tf.keras.mixed_precision.experimental.LossScaleOptimizer"
RUN_TIME = "is known only when the program runs"


def _fix(source):
    outcome = migrate(source, Options(mode="fix", select=("TPU403",)))
    ast.parse(outcome.code)
    assert migrate(outcome.code, Options(mode="fix", select=("TPU403",))).code == outcome.code
    return outcome


@pytest.mark.parametrize(
    "binding, after",
    [
        ("scale = 128\n", "tf.keras.mixed_precision.LossScaleOptimizer(opt, dynamic=False, initial_scale=scale)"),
        ("scale = 'dynamic'\n", "tf.keras.mixed_precision.LossScaleOptimizer(opt)"),
    ],
)
def test_a_name_bound_once_to_a_literal_is_that_literal(binding, after):
    source = HEADER + binding + f"scaled = {OLD}(opt, scale)\n"
    outcome = _fix(source)
    assert outcome.code == HEADER + binding + f"scaled = {after}\n"
    assert [(r.rule, r.applied) for r in outcome.reports] == [("TPU403", True)]
    checked = migrate(source, Options(mode="check", select=("TPU403",)))
    assert [(r.rule, r.line, r.column, r.safety) for r in checked.reports] == [("TPU403", 5, 10, "safe")]


@pytest.mark.parametrize(
    "prelude, argument",
    [
        ("", "FLAGS.loss_scale"),
        ("", "params['loss_scale']"),
        ("", "get_scale()"),
        ("scale = 128\nif fp16:\n    scale = 'dynamic'\n", "scale"),  # bound twice: not one value
    ],
)
def test_a_value_known_only_at_run_time_is_named_as_such(prelude, argument):
    source = HEADER + prelude + f"scaled = {OLD}(opt, {argument})\n"
    outcome = _fix(source)
    assert outcome.code == source
    [report] = outcome.reports
    assert (report.rule, report.line, report.safety) == ("TPU403", source.count("\n"), "manual")
    assert report.message.startswith(f"the loss scale `{argument}` {RUN_TIME}")
    assert "LossScale` object" not in report.message and "argument" not in report.message


def test_a_loss_scale_object_is_named_as_one():
    source = HEADER + f"scaled = {OLD}(opt, tf.mixed_precision.experimental.FixedLossScale(128))\n"
    [report] = _fix(source).reports
    assert (report.rule, report.line, report.safety) == ("TPU403", 4, "manual")
    assert report.message.startswith("a `LossScale` object has no direct equivalent")
    assert RUN_TIME not in report.message
