"""TPU203: ``extended.experimental_enable_dynamic_batch_size`` is ignored since TF 2.2."""

from __future__ import annotations

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Analysis
from migrate_tpu.codemod.framework.rule import Example, Rule, Safety, register
from migrate_tpu.codemod.stages.prefilter import Evidence


@register
class DynamicBatchSizeAttribute(Rule):
    id = "TPU203"
    name = "dynamic-batch-size-attribute"
    title = "Setting `extended.experimental_enable_dynamic_batch_size` silently does nothing since TF 2.2"
    safety = Safety.MANUAL
    since = "2.2"
    source = "v2.1.0 tpu_strategy.py; v2.2.0 distribute_lib.py (`RunOptions`); probe on 2.4.1 and 2.21"
    evidence = (Evidence("experimental_enable_dynamic_batch_size", without_tensorflow=True),)
    what = "Reports assignments to `experimental_enable_dynamic_batch_size`."
    why = """
TF 2.2 moved the switch to `tf.distribute.RunOptions`. The attribute can still
be set (it becomes a plain Python attribute) but nothing reads it: dynamic
padding stays on whatever it says.
"""
    use_instead = "`strategy.run(fn, args, options=tf.distribute.RunOptions(experimental_enable_dynamic_batch_size=False))` on every `run` call."
    examples = (
        Example(
            before="""\
strategy.extended.experimental_enable_dynamic_batch_size = False
""",
            findings=1,
        ),
    )

    def _check(self, target: cst.BaseExpression, node: cst.CSTNode, analysis: Analysis) -> None:
        if isinstance(target, cst.Attribute) and target.attr.value == "experimental_enable_dynamic_batch_size":
            analysis.remember(node)
            self.report(
                node,
                "`experimental_enable_dynamic_batch_size` is ignored since TF 2.2 (dynamic padding stays on); "
                "pass `options=tf.distribute.RunOptions(experimental_enable_dynamic_batch_size=...)` to each `run`",
                analysis=analysis,
                suggestion="strategy.run(fn, args=..., options=tf.distribute.RunOptions(experimental_enable_dynamic_batch_size=False))",
            )

    def visit_Assign(self, node: cst.Assign, analysis: Analysis) -> None:
        for target in node.targets:
            self._check(target.target, node, analysis)

    def visit_AnnAssign(self, node: cst.AnnAssign, analysis: Analysis) -> None:
        self._check(node.target, node, analysis)

    def visit_Call(self, node: cst.Call, analysis: Analysis) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "setattr" and len(node.args) >= 2:
            name = node.args[1].value
            if isinstance(name, cst.SimpleString) and name.evaluated_value == "experimental_enable_dynamic_batch_size":
                analysis.remember(node)
                self.report(node, "`experimental_enable_dynamic_batch_size` is ignored since TF 2.2; use `tf.distribute.RunOptions`", analysis=analysis)
