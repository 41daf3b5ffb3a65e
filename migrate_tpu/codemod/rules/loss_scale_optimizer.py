"""TPU403: the experimental ``LossScaleOptimizer(opt, loss_scale)`` constructor."""

from __future__ import annotations

import libcst as cst

from migrate_tpu.codemod.analysis import Analysis
from migrate_tpu.codemod.helpers import argument, has_star_arguments, is_literal
from migrate_tpu.codemod.names import expression_for
from migrate_tpu.codemod.rule import CallRule, Change, Safety, register, tf_example

OLD = "tensorflow.keras.mixed_precision.experimental.LossScaleOptimizer"
NEW = "tensorflow.keras.mixed_precision.LossScaleOptimizer"


@register
class ExperimentalLossScaleOptimizer(CallRule):
    id = "TPU403"
    name = "experimental-loss-scale-optimizer"
    title = "`mixed_precision.experimental.LossScaleOptimizer(opt, loss_scale)` became `mixed_precision.LossScaleOptimizer`"
    safety = Safety.SAFE
    callees = frozenset({OLD})
    since = "2.4"
    source = "v2.1.0 experimental/loss_scale_optimizer.py; v2.4.1 loss_scale_optimizer.py; TF 2.4.0 and 2.9.0 release notes"
    triggers = ("LossScaleOptimizer",)
    what = """
Rewrites `LossScaleOptimizer(opt, 'dynamic')` to
`tf.keras.mixed_precision.LossScaleOptimizer(opt)` and a fixed scale
`LossScaleOptimizer(opt, N)` to `LossScaleOptimizer(opt, dynamic=False, initial_scale=N)`.
"""
    why = """
The experimental class was deprecated in 2.4 and removed in 2.9. The stable one
takes `dynamic`/`initial_scale` instead of a `loss_scale` argument.
"""
    use_instead = "A `LossScale` object has no direct equivalent: it is reported for manual work. bfloat16 training on TPU needs no loss scaling at all."
    fix_safety = "Safe for `'dynamic'` and numeric literals."
    examples = (
        tf_example(
            before="""\
optimizer = tf.keras.mixed_precision.experimental.LossScaleOptimizer(optimizer, "dynamic")
""",
            after="""\
optimizer = tf.keras.mixed_precision.LossScaleOptimizer(optimizer)
""",
        ),
        tf_example(
            before="""\
optimizer = tf.keras.mixed_precision.experimental.LossScaleOptimizer(optimizer, 128)
""",
            after="""\
optimizer = tf.keras.mixed_precision.LossScaleOptimizer(optimizer, dynamic=False, initial_scale=128)
""",
        ),
    )

    def finish(self, analysis: Analysis):
        for call, scope in self.calls():
            optimizer = argument(call, 0, "optimizer")
            scale = argument(call, 1, "loss_scale")
            if optimizer is None or has_star_arguments(call) or len(call.args) > 2:
                self.report(call, "use `tf.keras.mixed_precision.LossScaleOptimizer(inner_optimizer, dynamic=..., initial_scale=...)`", analysis=analysis)
                continue
            if scale is None or is_literal(scale.value, ("dynamic",)):
                extra = []
            elif isinstance(scale.value, (cst.Integer, cst.Float)):
                extra = [
                    cst.Arg(cst.Name("False"), keyword=cst.Name("dynamic"), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                    cst.Arg(scale.value, keyword=cst.Name("initial_scale"), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))),
                ]
            else:
                self.report(call, "a `LossScale` argument has no direct equivalent in `tf.keras.mixed_precision.LossScaleOptimizer`; set `dynamic`/`initial_scale` by hand", analysis=analysis)
                continue
            try:
                text, needed = expression_for(NEW, scope)
            except LookupError:
                self.report(call, "use `tf.keras.mixed_precision.LossScaleOptimizer`", analysis=analysis)
                continue
            new_func = cst.parse_expression(text)

            def rewrite(updated, new_func=new_func, extra=extra):
                first = argument(updated, 0, "optimizer")
                first = first.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
                if extra:
                    args = [first.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))] + extra
                else:
                    args = [first.with_changes(comma=cst.MaybeSentinel.DEFAULT)]
                return updated.with_changes(func=new_func, args=args)

            finding = self.report(
                call,
                "`mixed_precision.experimental.LossScaleOptimizer` was replaced by `mixed_precision.LossScaleOptimizer` (removed in TF 2.9)",
                analysis=analysis,
                changes=[Change(call, rewrite)],
                imports=[needed] if needed else [],
                fix_title=f"Use `{text}`",
            )
            head = call.func
            while isinstance(head, cst.Attribute):
                head = head.value
            if isinstance(head, cst.Name):
                finding.releases.append(head.value)
        return self.findings
