"""The prefilter's second stage: the standard library's parser, before LibCST.

The textual prefilter (``prefilter.py``) lets a file through when some rule's
evidence occurs in it: ``.run(`` for TPU301, ``.compile(`` for TPU401, ``lr=``
for TPU405. On real trees most of those files hold nothing to change
(``app.run(main)``, ``re.compile(...)``, ``def schedule(lr=0.1)``). This stage
parses the file with ``ast`` (about ten times cheaper than LibCST) and asks
each rule whose evidence is present whether it may fire: a rule answers
through ``may_fire(index)`` with facts a syntax tree gives, and a rule that
declares no such test is assumed to fire. When no rule may fire, the file is
left as it is without a LibCST parse; the findings are the same either way,
which the rule examples and the position tests check on every run.

Each answer must be conservative: ``False`` only where the rule's own logic
can find nothing. A file the standard parser refuses goes on to LibCST,
which reports the error as before.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from migrate_tpu.codemod.stages.prefilter import Prefilter
from migrate_tpu.codemod.stages.source_index import SourceIndex

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.analysis.walk import ProjectFacts


# A rule's two questions, as classmethods (``rule.Rule`` says more): ``may_fire(index)`` and
# ``ruled_out_by_text(source, lookup, path)``.
MayFire = Callable[[SourceIndex], bool]
RuledOutByText = Callable[[str, Optional["ProjectFacts"], str], bool]


_EVIDENCE: Dict[Tuple[type, Optional[str]], Prefilter] = {}


def _evidence_present(rule_class: Any, data: bytes, target: Optional[str] = None) -> bool:
    """Whether the rule's evidence for ``target`` (None: any) is in ``data``."""
    prefilter = _EVIDENCE.get((rule_class, target))
    if prefilter is None:
        prefilter = _EVIDENCE[rule_class, target] = Prefilter(e for e in rule_class.evidence if e.counts_for(target))
    return prefilter(data)


def parse(source: str) -> Optional[ast.AST]:
    """The standard library's tree of ``source``, or None when it refuses it."""
    try:
        return compile(source, "<source>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def may_fire(
    source: str,
    rule_classes: Sequence[type],
    lookup: Optional[ProjectFacts] = None,
    path: str = "",
    tree: Optional[ast.AST] = None,
    target: Optional[str] = None,
) -> Tuple[bool, Optional[ast.AST]]:
    """Whether any of ``rule_classes`` may find something in ``source`` for ``target`` (None:
    for any), and its ``ast`` tree when one was made or given (the caller reuses it). The tree
    is made only when every rule whose evidence is present has a ``may_fire`` test: otherwise
    LibCST parses the file anyway."""
    data = source.encode("utf-8", "surrogatepass")
    tested: List[MayFire] = []
    for rule_class in rule_classes:
        test: Optional[MayFire] = getattr(rule_class, "may_fire", None)
        if not getattr(rule_class, "evidence", ()):
            return True, tree  # a rule that declares no evidence may fire anywhere
        if not _evidence_present(rule_class, data, target):
            continue
        # A rule may tell from the text alone that its evidence here is a false lead.
        ruled_out: Optional[RuledOutByText] = getattr(rule_class, "ruled_out_by_text", None)
        if ruled_out is not None and ruled_out(source, lookup, path):
            continue
        if test is None:
            return True, tree
        tested.append(test)
    if not tested:
        return False, tree
    if tree is None:
        tree = parse(source)
    if tree is None:
        return True, None  # LibCST reports what the standard parser refused
    index = SourceIndex(tree, lookup, path)
    index.target = target
    return any(test(index) for test in tested), tree
