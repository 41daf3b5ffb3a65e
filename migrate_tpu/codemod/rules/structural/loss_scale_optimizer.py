"""TPU403: the experimental ``LossScaleOptimizer(opt, loss_scale)`` constructor."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, List, cast

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Analysis, Scope
from migrate_tpu.codemod.framework.fixes import RewriteRule, comma, head_name, keyword
from migrate_tpu.codemod.foundation.helpers import argument, has_star_arguments, is_literal
from migrate_tpu.codemod.framework.rule import CallRule, Expected, Finding, Safety, register, tf_example
from migrate_tpu.codemod.stages.prefilter import Evidence

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.stages.source_index import SourceIndex

OLD = "tensorflow.keras.mixed_precision.experimental.LossScaleOptimizer"
NEW = "tensorflow.keras.mixed_precision.LossScaleOptimizer"


_MOVED = "`mixed_precision.experimental.LossScaleOptimizer` was replaced by `mixed_precision.LossScaleOptimizer` (removed in TF 2.9)"
_LOSS_SCALES = ("LossScale", "FixedLossScale", "DynamicLossScale")


def _is_loss_scale_object(value: cst.BaseExpression, scope: Scope) -> bool:
    """``DynamicLossScale(...)`` (any spelling TensorFlow exports it under), or a name bound to one."""
    from migrate_tpu.codemod.analysis.names import lookup, qualified_name

    if isinstance(value, cst.Name):
        found = lookup(scope, value.value)
        if found is not None and len(found[1]) == 1 and found[1][0].kind == "assign" and found[1][0].value is not None:
            return _is_loss_scale_object(found[1][0].value, found[1][0].scope)
        return False
    if not isinstance(value, cst.Call):
        return False
    name = qualified_name(value.func, scope) or ""
    return name.startswith("tensorflow.") and name.rpartition(".")[2] in _LOSS_SCALES


def _constant(value: cst.BaseExpression, scope: Scope) -> cst.BaseExpression:
    """The literal a name bound once to a literal stands for (``scale = 128``), else ``value``."""
    from migrate_tpu.codemod.analysis.names import lookup

    if isinstance(value, cst.Name):
        found = lookup(scope, value.value)
        if found is not None and len(found[1]) == 1 and found[1][0].kind == "assign":
            bound = found[1][0].value
            if isinstance(bound, (cst.SimpleString, cst.Integer, cst.Float)):
                return bound
    return value


@register
class ExperimentalLossScaleOptimizer(RewriteRule, CallRule):
    id = "TPU403"
    name = "experimental-loss-scale-optimizer"
    title = "`mixed_precision.experimental.LossScaleOptimizer(opt, loss_scale)` became `mixed_precision.LossScaleOptimizer`"
    safety = Safety.SAFE
    callees = frozenset({OLD})
    since = "2.4"
    source = "v2.1.0 experimental/loss_scale_optimizer.py; v2.4.1 loss_scale_optimizer.py; TF 2.4.0 and 2.9.0 release notes"
    evidence = (Evidence("LossScaleOptimizer"),)
    what = """
Rewrites `LossScaleOptimizer(opt, 'dynamic')` to
`tf.keras.mixed_precision.LossScaleOptimizer(opt)` and a fixed scale
`LossScaleOptimizer(opt, N)` to `LossScaleOptimizer(opt, dynamic=False, initial_scale=N)`.
"""
    why = """
The experimental class was deprecated in 2.4 and removed in 2.9. The stable one
takes `dynamic`/`initial_scale` instead of a `loss_scale` argument.
"""
    use_instead = ("A `LossScale` object has no direct equivalent, and a loss scale known only at run time (a flag) may be either form: "
                   "both are reported for manual work. bfloat16 training on TPU needs no loss scaling at all.")
    fix_safety = "Safe for `'dynamic'` and numeric literals, and for a name bound once to one (the name is kept)."
    examples = (
        tf_example(
            before="""\
optimizer = tf.keras.mixed_precision.experimental.LossScaleOptimizer(optimizer, "dynamic")
""",
            after="""\
optimizer = tf.keras.mixed_precision.LossScaleOptimizer(optimizer)
""",
            expected=(Expected("safe", 1, 13, _MOVED),),
        ),
        tf_example(
            before="""\
optimizer = tf.keras.mixed_precision.experimental.LossScaleOptimizer(optimizer, 128)
""",
            after="""\
optimizer = tf.keras.mixed_precision.LossScaleOptimizer(optimizer, dynamic=False, initial_scale=128)
""",
            expected=(Expected("safe", 1, 13, _MOVED),),
        ),
        # Imported under another name: the call does not spell `LossScaleOptimizer`.
        tf_example(
            before=(
                "from tensorflow.keras.mixed_precision.experimental import LossScaleOptimizer as LSO\n"
                "\n"
                'optimizer = LSO(optimizer, "dynamic")\n'
            ),
            after="""\
optimizer = tf.keras.mixed_precision.LossScaleOptimizer(optimizer)
""",
            expected=(Expected("safe", 3, 13, _MOVED),),
        ),
        # A flag's value may be "dynamic", a number or a LossScale: each needs its own form.
        tf_example(
            before="""\
optimizer = tf.keras.mixed_precision.experimental.LossScaleOptimizer(optimizer, FLAGS.loss_scale)
scaled = tf.keras.mixed_precision.experimental.LossScaleOptimizer(
    optimizer, tf.mixed_precision.experimental.DynamicLossScale(initial_loss_scale=2**15)
)
""",
            expected=(
                Expected(
                    "manual",
                    1,
                    13,
                    'the loss scale `FLAGS.loss_scale` is known only when the program runs: `"dynamic"` becomes '
                    "`LossScaleOptimizer(opt)` and a number `N` becomes `LossScaleOptimizer(opt, dynamic=False, initial_scale=N)`; "
                    "write the form its value needs",
                ),
                Expected(
                    "manual",
                    2,
                    10,
                    "a `LossScale` object has no direct equivalent in `tf.keras.mixed_precision.LossScaleOptimizer`; "
                    "set `dynamic`/`initial_scale`/`dynamic_growth_steps` by hand",
                ),
            ),
        ),
    )

    @classmethod
    def may_fire(cls, index: SourceIndex) -> bool:
        """A call that may be of the old class: every finding is one (``syntax_stage.py``)."""
        return index.may_name(cls.callees)

    def finish(self, analysis: Analysis) -> Iterable[Finding]:
        for call, scope in self.calls():
            optimizer = argument(call, 0, "optimizer")
            scale = argument(call, 1, "loss_scale")
            if optimizer is None or has_star_arguments(call) or len(call.args) > 2:
                self.report(call, "use `tf.keras.mixed_precision.LossScaleOptimizer(inner_optimizer, dynamic=..., initial_scale=...)`", analysis=analysis)
                continue
            # A name bound once to a literal (``scale = 128``) is that literal, not a run-time value;
            # the fix keeps the name, so the value stays where it is set.
            known = None if scale is None else _constant(scale.value, scope)
            if scale is None or is_literal(cast(cst.BaseExpression, known), ("dynamic",)):  # known is None only without a scale
                extra = []
            elif isinstance(known, (cst.Integer, cst.Float)):
                extra = [keyword("dynamic", cst.Name("False"), comma=comma()), keyword("initial_scale", scale.value)]
            elif _is_loss_scale_object(scale.value, scope):
                self.report(call, "a `LossScale` object has no direct equivalent in `tf.keras.mixed_precision.LossScaleOptimizer`; "
                            "set `dynamic`/`initial_scale`/`dynamic_growth_steps` by hand", analysis=analysis)
                continue
            else:
                # A flag, a parameter, a call: its value ("dynamic", a number or a LossScale) is known
                # only at run time, so the message names the expression, not a kind of argument.
                shown = analysis.module.code_for_node(scale.value).strip()
                self.report(
                    call,
                    f"the loss scale `{shown}` is known only when the program runs: `\"dynamic\"` becomes "
                    "`LossScaleOptimizer(opt)` and a number `N` becomes `LossScaleOptimizer(opt, dynamic=False, initial_scale=N)`; "
                    "write the form its value needs",
                    analysis=analysis,
                )
                continue

            def rewrite(updated: cst.Call, new_func: cst.BaseExpression, extra: List[cst.Arg] = extra) -> cst.Call:
                first = cast(cst.Arg, argument(updated, 0, "optimizer"))  # the call has one: checked above
                first = first.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
                if extra:
                    args = [first.with_changes(comma=comma())] + extra
                else:
                    args = [first.with_changes(comma=cst.MaybeSentinel.DEFAULT)]
                return updated.with_changes(func=new_func, args=args)

            self.propose(
                call,
                _MOVED,
                analysis=analysis,
                scope=scope,
                uses=[NEW],
                manual="use `tf.keras.mixed_precision.LossScaleOptimizer`",
                rewrite=rewrite,
                fix_title="Use `{0}`",
                releases=[head_name(call.func)],
            )
        return self.findings
