"""TPU104: type checks against the experimental TPUStrategy class."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable, List, Optional, Tuple

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Analysis, ProjectFacts, Scope
from migrate_tpu.codemod.framework.fixes import RewriteRule, comma
from migrate_tpu.codemod.analysis.names import qualified_name
from migrate_tpu.codemod.framework.rule import Example, Finding, Safety, register, tf_example
from migrate_tpu.codemod.stages.prefilter import Evidence
from migrate_tpu.codemod.foundation.spelling import may_name

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.stages.source_index import SourceIndex

EXPERIMENTAL = "tensorflow.distribute.experimental.TPUStrategy"
# A string literal that may be ``'TPUStrategy'`` (a prefix such as ``r`` comes before the quote).
_QUOTED_NAME = re.compile(r"""["']TPUStrategy["']""")
STABLE = "tensorflow.distribute.TPUStrategy"


@register
class ExperimentalTPUStrategyTypeCheck(RewriteRule):
    id = "TPU104"
    name = "isinstance-experimental-tpu-strategy"
    title = "Type checks against the experimental TPUStrategy miss the stable class"
    safety = Safety.SAFE
    since = "2.3"
    source = "v2.4.1 tpu_strategy.py (sibling classes); v2.4.1 keras/backend.py"
    evidence = (Evidence("TPUStrategy", without_tensorflow=True),)
    what = """
Rewrites `isinstance(x, tf.distribute.experimental.TPUStrategy)` (and
`issubclass`) to accept both classes:
`isinstance(x, (tf.distribute.TPUStrategy, tf.distribute.experimental.TPUStrategy))`.
Reports comparisons of a class name with `'TPUStrategy'`.
"""
    why = """
`tf.distribute.TPUStrategy` and `tf.distribute.experimental.TPUStrategy` are
siblings: an object of one is not an instance of the other (checked on 2.4.1
and 2.21). Once constructors move to the stable class (TPU103), a check against
the experimental class silently turns false. The stable class's
`type(s).__name__` is `'TPUStrategyV2'`, so name comparisons break too.
"""
    use_instead = "Keras itself tests `type(s).__name__.startswith('TPUStrategy')`."
    fix_safety = "Safe: the check accepts exactly what it accepted before, plus the stable class."
    examples = (
        tf_example(
            before="""\
if isinstance(strategy, tf.distribute.experimental.TPUStrategy):
    batch_size *= 8
""",
            after="""\
if isinstance(strategy, (tf.distribute.TPUStrategy, tf.distribute.experimental.TPUStrategy)):
    batch_size *= 8
""",
        ),
        Example(
            before="""\
if type(strategy).__name__ == "TPUStrategy":
    pass
""",
            findings=1,
        ),
    )

    @classmethod
    def ruled_out_by_text(cls, source: str, lookup: Optional[ProjectFacts] = None, path: str = "") -> bool:
        """Whether the text names the experimental class nowhere (``spelling.may_name``) and
        holds no string ``'TPUStrategy'``: then no type check can hold it and no comparison
        names it, as code written for TF 2.4 and later has it."""
        return not may_name(source, [EXPERIMENTAL]) and _QUOTED_NAME.search(source) is None

    @classmethod
    def may_fire(cls, index: SourceIndex) -> bool:
        """The string ``'TPUStrategy'``, or a type check whose classes may hold the experimental
        class and surely do not hold the stable one (``finish`` passes those by: code that
        already accepts both, as tf-models-official 2.5 and later writes it)."""
        if "TPUStrategy" in index.identifier_strings:
            return True
        return index.may_name([EXPERIMENTAL]) and any(
            any(index.may_name_here(element, [EXPERIMENTAL]) for element in elements)
            and not any(index.surely_names(element, STABLE) for element in elements)
            for elements in index.type_checks
        )

    def __init__(self) -> None:
        super().__init__()
        self._checks: List[Tuple[cst.Call, Scope]] = []
        self._names: List[Tuple[cst.Comparison, Scope]] = []

    def visit_Call(self, node: cst.Call, analysis: Analysis) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in ("isinstance", "issubclass") and len(node.args) == 2:
            analysis.remember(node)
            self._checks.append((node, analysis.scope))

    def visit_Comparison(self, node: cst.Comparison, analysis: Analysis) -> None:
        for part in [node.left] + [c.comparator for c in node.comparisons]:
            if isinstance(part, cst.SimpleString) and part.evaluated_value == "TPUStrategy":
                analysis.remember(node)
                self._names.append((node, analysis.scope))
                return

    def finish(self, analysis: Analysis) -> Iterable[Finding]:
        for call, scope in self._checks:
            self._check(call, scope, analysis)
        for comparison, _scope in self._names:
            self.report(
                comparison,
                "comparing a class name with 'TPUStrategy' misses the stable class (named 'TPUStrategyV2'); "
                "use `isinstance` with both classes or `.startswith('TPUStrategy')`",
                analysis=analysis,
            )
        return self.findings

    def _check(self, call: cst.Call, scope: Scope, analysis: Analysis) -> None:
        classes = call.args[1].value
        elements = classes.elements if isinstance(classes, cst.Tuple) else None
        candidates = [e.value for e in elements] if elements is not None else [classes]
        names = [qualified_name(c, scope) for c in candidates]
        if EXPERIMENTAL not in names or STABLE in names:
            return
        index = names.index(EXPERIMENTAL)

        def widen(updated: cst.Call, stable: cst.BaseExpression) -> cst.Call:
            value = updated.args[1].value
            if isinstance(value, cst.Tuple):
                items = list(value.elements)
                items.insert(index, cst.Element(stable, comma=comma()))
                new_value = value.with_changes(elements=items)
            else:
                new_value = cst.Tuple([cst.Element(stable, comma=comma()), cst.Element(value)])
            args = list(updated.args)
            args[1] = args[1].with_changes(value=new_value)
            return updated.with_changes(args=args)

        self.propose(
            call,
            "`tf.distribute.experimental.TPUStrategy` and `tf.distribute.TPUStrategy` are unrelated classes; "
            "this check misses strategies built with the stable class",
            at=call.args[1].value,
            analysis=analysis,
            scope=scope,
            uses=[STABLE],
            manual="also accept `tf.distribute.TPUStrategy` in this check",
            rewrite=widen,
            fix_title="Accept both classes",
        )
