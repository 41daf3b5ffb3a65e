"""TPU501: the TF 2.0 ``auto_shard`` switch became ``auto_shard_policy``."""

from __future__ import annotations

from typing import Iterable, List, Tuple, cast

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Analysis, Scope
from migrate_tpu.codemod.framework.fixes import RewriteRule
from migrate_tpu.codemod.framework.rule import Finding, Safety, register, tf_example
from migrate_tpu.codemod.stages.prefilter import Evidence

POLICY = "tensorflow.data.experimental.AutoShardPolicy"


@register
class AutoShardBool(RewriteRule):
    id = "TPU501"
    name = "auto-shard-bool"
    title = "`experimental_distribute.auto_shard` was replaced by `auto_shard_policy`"
    safety = Safety.SAFE
    since = "2.1"
    source = "v2.0.0 vs v2.1.0 data/experimental/ops/distribute_options.py; TF 2.1.0 release notes"
    # ``options`` may come from another module; the attribute chain is always written here.
    evidence = (Evidence("experimental_distribute", r"experimental_distribute\s*\.\s*auto_shard\b", without_tensorflow=True),)
    what = """
Rewrites `options.experimental_distribute.auto_shard = False` to
`options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF`
(and `True` to `AUTO`). Other values are reported.
"""
    why = """
The boolean was TF 2.0's spelling; from 2.1 on, setting it raises
`AttributeError: Cannot set the property auto_shard on DistributeOptions.`
"""
    fix_safety = "Safe for the literals True and False."
    examples = (
        tf_example(
            before="""\
options = tf.data.Options()
options.experimental_distribute.auto_shard = False
""",
            after="""\
options = tf.data.Options()
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
""",
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self._assignments: List[Tuple[cst.Assign, Scope]] = []

    def visit_Assign(self, node: cst.Assign, analysis: Analysis) -> None:
        if len(node.targets) == 1:
            target = node.targets[0].target
            if (
                isinstance(target, cst.Attribute)
                and target.attr.value == "auto_shard"
                and isinstance(target.value, cst.Attribute)
                and target.value.attr.value == "experimental_distribute"
            ):
                analysis.remember(node)
                self._assignments.append((node, analysis.scope))

    def finish(self, analysis: Analysis) -> Iterable[Finding]:
        for node, scope in self._assignments:
            value = node.value
            member = {"True": "AUTO", "False": "OFF"}.get(value.value) if isinstance(value, cst.Name) else None
            if member is None:
                self.report(node, "`auto_shard` no longer exists; set `auto_shard_policy` to a `tf.data.experimental.AutoShardPolicy`", analysis=analysis)
                continue
            self.propose(
                node,
                # A member was found: ``value`` is the Name ``True`` or ``False``.
                f"`auto_shard` was replaced by `auto_shard_policy`; `{cast(cst.Name, value).value}` means `AutoShardPolicy.{member}`",
                analysis=analysis,
                scope=scope,
                uses=[f"{POLICY}.{member}"],
                manual="`auto_shard` no longer exists; use `auto_shard_policy`",
                rewrite=_set_policy,
                fix_title="Set `auto_shard_policy = {0}`",
            )
        return self.findings


def _set_policy(assignment: cst.Assign, policy: cst.BaseExpression) -> cst.Assign:
    target = assignment.targets[0]
    new_target = target.with_changes(target=target.target.with_changes(attr=cst.Name("auto_shard_policy")))
    return assignment.with_changes(targets=[new_target], value=policy)
