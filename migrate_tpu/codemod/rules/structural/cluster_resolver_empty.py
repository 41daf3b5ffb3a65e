"""TPU202: ``TPUClusterResolver('')`` changed meaning in TF 2.2."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from migrate_tpu.codemod.analysis.walk import Analysis
from migrate_tpu.codemod.foundation.helpers import argument, is_literal
from migrate_tpu.codemod.framework.rule import CallRule, Finding, Safety, register, tf_example
from migrate_tpu.codemod.stages.prefilter import Evidence

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.stages.source_index import SourceIndex

RESOLVERS = (
    "tensorflow.distribute.cluster_resolver.TPUClusterResolver",
    "tensorflow.compat.v1.distribute.cluster_resolver.TPUClusterResolver",
    "tensorflow.python.distribute.cluster_resolver.TPUClusterResolver",
    "tensorflow.python.distribute.cluster_resolver.tpu_cluster_resolver.TPUClusterResolver",
    "tensorflow.python.distribute.cluster_resolver.tpu.tpu_cluster_resolver.TPUClusterResolver",
)


@register
class EmptyTPUName(CallRule):
    id = "TPU202"
    name = "tpu-cluster-resolver-empty-name"
    title = "`TPUClusterResolver(tpu='')` no longer means the local TPU"
    safety = Safety.MANUAL
    callees = frozenset(RESOLVERS)
    since = "2.4"
    source = "v2.1.0 vs v2.4.1 tpu_cluster_resolver.py; TF 2.2.0 release notes (Cloud TPU client)"
    evidence = (Evidence("TPUClusterResolver"),)
    what = "Reports `TPUClusterResolver('')` and `TPUClusterResolver(tpu='')`."
    why = """
In TF 2.1 an empty name meant a TPU attached to this machine. Since 2.2 it means
"find the name in `TPU_NAME`", and without that variable it raises
`ValueError: Please provide a TPU Name to connect to.` Colab and Cloud TPU
setups export `TPU_NAME`, so the call still works there; on a TPU VM the
attached TPU is now spelled `tpu='local'` (TF 2.4).
"""
    use_instead = "`TPUClusterResolver(tpu='local')` for an attached TPU (TPU VM); leave it as is where `TPU_NAME` is set."
    fix_safety = "No fix: which meaning is right depends on where the code runs."
    examples = (
        tf_example(
            before="""\
resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
""",
            findings=1,
        ),
        # Imported under another name: the call does not spell `TPUClusterResolver`.
        tf_example(
            before=(
                "from tensorflow.distribute.cluster_resolver import TPUClusterResolver as Resolver\n"
                "\n"
                "resolver = Resolver('')\n"
            ),
            findings=1,
        ),
    )

    @classmethod
    def may_fire(cls, index: SourceIndex) -> bool:
        """A call whose first positional argument or ``tpu=`` is the literal ``''`` (``syntax_stage.py``):
        the callee is not checked here (an alias of the class may call it), nor a call with ``*args``."""
        return any((0, "") in call.literals or ("tpu", "") in call.literals or call.starred for call in index.calls)

    def finish(self, analysis: Analysis) -> Iterable[Finding]:
        for call, _scope in self.calls():
            arg = argument(call, 0, "tpu")
            if arg is not None and is_literal(arg.value, ("",)):
                self.report(
                    call,
                    "`TPUClusterResolver(tpu='')` meant the local TPU in TF 2.1; since 2.2 it reads `TPU_NAME` "
                    "and raises `ValueError` without it",
                    analysis=analysis,
                    suggestion="TPUClusterResolver(tpu='local')  # a TPU attached to this machine (TPU VM)",
                )
        return self.findings
