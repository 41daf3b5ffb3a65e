"""TPU204: ``ReplicaContext.devices`` is deprecated since TF 2.4."""

from __future__ import annotations

from typing import Iterable, List, Tuple

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Analysis, Scope
from migrate_tpu.codemod.analysis.names import lookup, qualified_name
from migrate_tpu.codemod.framework.rule import Finding, Rule, Safety, register, tf_example
from migrate_tpu.codemod.stages.prefilter import Evidence

CONTEXTS = ("tensorflow.distribute.get_replica_context", "tensorflow.compat.v1.distribute.get_replica_context")


@register
class ReplicaContextDevices(Rule):
    id = "TPU204"
    name = "replica-context-devices"
    title = "`ReplicaContext.devices` is deprecated since TF 2.4"
    safety = Safety.MANUAL
    since = "2.4"
    source = "v2.4.1 distribute_lib.py (\"Please avoid relying on devices property.\")"
    evidence = (Evidence(".devices", r"\.devices\b", code_only=True),)
    what = "Reports reads of `.devices` on a replica context (`tf.distribute.get_replica_context()`)."
    why = "TF 2.4 deprecated the property; code that places ops by hand per replica breaks on TPU, where placement belongs to the strategy."
    use_instead = "Let the strategy place ops; use `replica_id_in_sync_group` to tell replicas apart."
    examples = (
        tf_example(
            before="""\
context = tf.distribute.get_replica_context()
device = context.devices[0]
""",
            findings=1,
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self._reads: List[Tuple[cst.Attribute, Scope]] = []

    def visit_Attribute(self, node: cst.Attribute, analysis: Analysis) -> None:
        if node.attr.value == "devices":
            analysis.remember(node)
            self._reads.append((node, analysis.scope))

    def _is_context(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        if isinstance(expr, cst.Call):
            return qualified_name(expr.func, scope) in CONTEXTS
        if isinstance(expr, cst.Name):
            found = lookup(scope, expr.value)
            if found:
                return any(b.kind == "assign" and b.value is not None and self._is_context(b.value, b.scope) for b in found[1])
        return False

    def finish(self, analysis: Analysis) -> Iterable[Finding]:
        for node, scope in self._reads:
            if self._is_context(node.value, scope):
                self.report(node, "`ReplicaContext.devices` is deprecated since TF 2.4; avoid placing ops by device per replica", analysis=analysis)
        return self.findings
