"""What a rule is, what it reports, and the registry rules add themselves to.

A rule carries everything about itself: a stable id, a title, its docs in the
sections users know from ruff (What it does / Why / Example / Use instead /
Fix safety), before/after examples that the test suite runs, the TensorFlow
version its new form needs, and how safe its fix is.

Rules see the module through one shared traversal (see ``analysis/walk.py``): they
declare which node types they care about, note candidates while the walk goes
on, and turn them into findings in ``finish`` once every binding of the file is
known. Which rules exist is the catalogue's business (``catalogue.py`` loads
them); this module only keeps the registry they add themselves to.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple, Type, TypeVar, Union, cast

import libcst as cst

from migrate_tpu.codemod.analysis.names import qualified_name
from migrate_tpu.codemod.stages.prefilter import Evidence
from migrate_tpu.codemod.foundation.spelling import may_name

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.analysis.walk import Analysis, ProjectFacts, Scope


class Safety(str, enum.Enum):
    """How a finding may be fixed.

    SAFE fixes keep behaviour and are applied by ``fix``; UNSAFE fixes may change
    behaviour and are applied only with ``--unsafe-fixes`` (otherwise reported with
    the suggested code); MANUAL findings have no mechanical fix.
    """

    SAFE = "safe"
    UNSAFE = "unsafe"
    MANUAL = "manual"


@dataclass(frozen=True)
class Expected:
    """One finding an example expects, as ``check`` reports it (Fixit's ``range`` and
    ``expected_message``): its safety, where it starts (line of the example's ``before``,
    1-based column) and, when given, its whole message. ``rule`` is the example's own
    rule unless it names another."""

    safety: str  # "safe", "unsafe" or "manual"
    line: int
    column: int
    message: Optional[str] = None
    rule: Optional[str] = None


@dataclass(frozen=True)
class Example:
    """A before/after pair; ``after is None`` means the rule must leave the code as it is.

    ``findings`` is how many findings the rule reports on ``before``: 0 for code
    it must not touch, 1 or more for a fix (with ``after``) or for manual work
    (without). When it is not given, an example with ``after`` expects one finding
    at least and one without expects none (the examples test states which).

    ``expected`` states each finding (:class:`Expected`), in the order ``check``
    reports them; then their number is ``findings``. An example with
    ``unsafe_fixes`` is also run without them: the code must then be ``safe_after``
    (the ``before`` itself when not given), so a fix that became safe by mistake fails.
    What ``check`` prints for every example is pinned besides, in its rule's snapshot
    (``tests/rule_snapshots/<ID>.txt``, ``tests/test_rule_snapshots.py``).
    """

    before: str
    after: Optional[str] = None
    unsafe_fixes: bool = False
    target: str = "2.4"
    findings: Optional[int] = None
    expected: Tuple[Expected, ...] = ()
    safe_after: Optional[str] = None


# Most examples start from the same import; it is written once here.
TF_IMPORT = "import tensorflow as tf\n\n"


def tf_example(before: str, after: Optional[str] = None, **options: Any) -> Example:
    """An :class:`Example` whose code follows ``import tensorflow as tf``; the lines of its
    ``expected`` findings are lines of ``before`` as written here."""
    shift = TF_IMPORT.count("\n")
    if options.get("expected"):
        options["expected"] = tuple(replace(e, line=e.line + shift) for e in options["expected"])
    if options.get("safe_after") is not None:
        options["safe_after"] = TF_IMPORT + options["safe_after"]
    return Example(TF_IMPORT + before, None if after is None else TF_IMPORT + after, **options)


# A change rewrites one node of the original tree: it receives the node as it is
# after the changes below it were applied, and returns its replacement, or the statements
# that replace a statement (``cst.FlattenSentinel``: an import split in two, a line put above
# a loop), or ``cst.RemovalSentinel.REMOVE`` (a branch no release takes). The node it
# receives is of the type of ``Change.node`` (a rewrite may declare it: ``def
# rewrite(updated: cst.Call) -> cst.Call``), or the sentinel an earlier change of the same
# statement returned (``framework.hoisting.insert_before`` takes both).
Rewritten = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel[cst.CSTNode]]
NodeRewrite = Callable[[Any], Rewritten]


@dataclass
class Change:
    node: cst.CSTNode
    rewrite: NodeRewrite
    # Two findings that want the very same edit (say, one function passed to two
    # eager ``run`` calls) share a key so the edit is made once.
    key: Optional[Tuple[object, ...]] = None
    # The node is a call whose rewrite may lengthen its lines: where one grows past the
    # file's longest line, its arguments go one to a line (``edits.wrap_call``).
    wrap: bool = False


@dataclass
class Finding:
    rule_id: str
    message: str
    node: cst.CSTNode
    safety: Safety
    changes: List[Change] = field(default_factory=list)
    # Modules to import for the changes (``("tensorflow", "tf")`` means
    # ``import tensorflow as tf``), added once per file.
    imports: List[Tuple[str, Optional[str]]] = field(default_factory=list)
    # Shown to the user when the fix is not applied (unsafe without
    # --unsafe-fixes, or manual work).
    suggestion: Optional[str] = None
    fix_title: Optional[str] = None
    # Filled in by the driver once positions are computed.
    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0
    applied: bool = False
    # Source text of the statement the finding sits in (for suppressions).
    statement: Optional[cst.CSTNode] = None
    # Imported names the changes stop using; their import goes if nothing else uses them.
    releases: List[str] = field(default_factory=list)


# Rule class -> {node type name: hook method name}, filled by ``Rule.hooks``.
_HOOKS: Dict[type, Dict[str, str]] = {}


class Rule:
    """Base class of every rule.

    Subclasses set the class attributes and implement the ``visit_<Node>``
    hooks they need (called by the shared traversal with the node and the
    :class:`~migrate_tpu.codemod.analysis.walk.Analysis`), then ``finish``.

    The API, typed (mypy holds this module and every rule module to ``disallow_untyped_defs``):

    - ``visit_<Node>(self, node: cst.<Node>, analysis: Analysis) -> None``, a hook of the walk;
    - ``finish(self, analysis: Analysis) -> Iterable[Finding]``, then ``settle`` (below);
    - two classmethods a rule may define, which the syntax stage asks before any parse
      (``stages/syntax_stage.py``, ``MayFire`` and ``RuledOutByText``; a rule with neither is
      assumed to fire wherever its evidence is): ``ruled_out_by_text(cls, source: str,
      lookup: Optional[ProjectFacts] = None, path: str = "") -> bool`` (the text alone rules the
      evidence out) and ``may_fire(cls, index: SourceIndex) -> bool`` (the ``ast`` facts may).
    """

    id: ClassVar[str]
    name: ClassVar[str]
    title: ClassVar[str]
    safety: ClassVar[Safety] = Safety.SAFE
    # Version of TensorFlow that the new form needs; the rule runs for every
    # target at or above it.
    since: ClassVar[str] = "2.4"
    # Targets the rule is for: "2.4" and/or "latest".
    targets: ClassVar[Tuple[str, ...]] = ("2.4", "latest")
    source: ClassVar[str] = ""
    # Docs, in ruff's sections.
    what: ClassVar[str] = ""
    why: ClassVar[str] = ""
    use_instead: ClassVar[str] = ""
    fix_safety: ClassVar[str] = ""
    examples: ClassVar[Sequence[Example]] = ()
    # Text at least one of which must occur in a file for the rule to have
    # anything to do there: the prefilter is built from it (``prefilter.py``).
    evidence: ClassVar[Tuple[Evidence, ...]] = ()

    def __init__(self) -> None:
        self.findings: List[Finding] = []

    # Hook names the traversal dispatches to, derived once per class.
    @classmethod
    def hooks(cls) -> Dict[str, str]:
        found = _HOOKS.get(cls)
        if found is None:
            found = _HOOKS[cls] = {
                name[len("visit_") :]: name
                for name in dir(cls)
                if name.startswith("visit_") and callable(getattr(cls, name))
            }
        return found

    def finish(self, analysis: "Analysis") -> Iterable[Finding]:
        return self.findings

    def settle(self, analysis: "Analysis", findings: Sequence[Finding]) -> Iterable[Finding]:
        """Findings that depend on what every rule found (``findings``, after each ``finish``):
        for instance an import that stays because another rule left one of its uses to a person."""
        return ()

    def report(  # noqa: PLR0913
        self,
        node: cst.CSTNode,
        message: str,
        *,
        analysis: "Analysis",
        changes: Sequence[Change] = (),
        safety: Optional[Safety] = None,
        imports: Sequence[Tuple[str, Optional[str]]] = (),
        suggestion: Optional[str] = None,
        fix_title: Optional[str] = None,
    ) -> Finding:
        if safety is None:
            safety = self.safety if changes else Safety.MANUAL
        finding = Finding(
            rule_id=self.id,
            message=message,
            node=node,
            safety=safety,
            changes=list(changes),
            imports=list(imports),
            suggestion=suggestion,
            fix_title=fix_title,
            statement=analysis.statement_of(node),
        )
        self.findings.append(finding)
        return finding

    @classmethod
    def docs(cls) -> str:
        """The rule's documentation as Markdown, in ruff's sections."""
        parts = [f"# {cls.id} {cls.name}", "", cls.title, ""]
        parts += ["## What it does", cls.what.strip(), ""]
        parts += ["## Why", cls.why.strip(), ""]
        # Every rule has the same five sections, manual ones too: what a finding is,
        # why, an example, what to write instead (the fixed example and/or advice),
        # and how safe the fix is, with how to keep a line as it is.
        fixed = [e for e in cls.examples if e.after is not None]
        reported = [e for e in cls.examples if e.after is None and e.findings != 0]
        shown = fixed[0] if fixed else (reported or list(cls.examples))[0] if cls.examples else None
        if shown is not None:
            parts += ["## Example", "```python", shown.before.rstrip(), "```", ""]
        parts += ["## Use instead"]
        if fixed:
            parts += ["```python", cast(str, fixed[0].after).rstrip(), "```", ""]  # ``fixed`` holds only examples with an ``after``
        if cls.use_instead.strip():
            parts += [cls.use_instead.strip(), ""]
        elif not fixed:
            parts += ["No one form fits every program: see *Why* for what changed and decide per call.", ""]
        parts += ["## Fix safety", cls.fix_safety.strip() or _default_fix_safety(cls.safety), ""]
        parts += [
            f"To keep a line as it is, end it with `# migrate-tpu: ignore[{cls.id}]`; for a whole "
            f"file, list `{cls.id}` under `[tool.migrate-tpu.per-file-ignores]` in `pyproject.toml`.",
            "",
        ]
        parts += [f"New form needs TensorFlow {cls.since} or later."]
        if cls.source:
            parts += ["", f"Source: {cls.source.strip()}"]
        return "\n".join(parts).rstrip() + "\n"


class CallRule(Rule):
    """A rule about calls of some TensorFlow callables, however they are imported.

    Subclasses set ``callees`` (canonical dotted names); calls whose callee's
    last name matches are kept during the walk, and :meth:`calls` yields those
    that really resolve to one of the ``callees`` once the file is analysed.
    """

    callees: ClassVar[FrozenSet[str]] = frozenset()

    def __init__(self) -> None:
        super().__init__()
        self._candidates: List[Tuple[cst.Call, Scope]] = []
        self._last_names = {name.rsplit(".", 1)[-1] for name in self.callees}

    def visit_Call(self, node: cst.Call, analysis: "Analysis") -> None:
        func = node.func
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        # A callee imported under another name (``from ... import
        # LossScaleOptimizer as LSO``) is called by that name: keep the call
        # too, and let :meth:`calls` resolve it.
        if last in self._last_names or (isinstance(func, cst.Name) and last in analysis.renamed_imports):
            analysis.remember(node)
            self._candidates.append((node, analysis.scope))

    @classmethod
    def ruled_out_by_text(cls, source: str, lookup: Optional[ProjectFacts] = None, path: str = "") -> bool:
        """Whether the text names none of the ``callees`` (``spelling.may_name``): then no call
        resolves to one, and a rule that reports only what :meth:`calls` yields has nothing
        to do in the file (``syntax_stage.py`` asks before any parse)."""
        return not may_name(source, cls.callees)

    def calls(self) -> Iterable[Tuple[cst.Call, Scope]]:
        for call, scope in self._candidates:
            if qualified_name(call.func, scope) in self.callees:
                yield call, scope


def _default_fix_safety(safety: Safety) -> str:
    return {
        Safety.SAFE: "The fix keeps behaviour and is applied by `migrate-tpu fix`.",
        Safety.UNSAFE: "The fix may change behaviour; it is applied only with `--unsafe-fixes`.",
        Safety.MANUAL: "There is no mechanical fix: the finding is reported for manual work.",
    }[safety]


_REGISTRY: Dict[str, Type[Rule]] = {}
# ``register`` hands back the class it is given: a decorated rule keeps its own type.
_RuleT = TypeVar("_RuleT", bound=Rule)


def register(rule_class: Type[_RuleT]) -> Type[_RuleT]:
    """Class decorator: add a rule to the catalogue (ids are unique)."""
    if rule_class.id in _REGISTRY:
        raise ValueError(f"duplicate rule id {rule_class.id}")
    _REGISTRY[rule_class.id] = rule_class
    return rule_class


def registered_rules() -> List[Type[Rule]]:
    """The rules registered so far, by id. ``catalogue.all_rules`` loads them all first;
    a rule asking about its peers while it runs finds them here, already loaded."""
    return [_REGISTRY[key] for key in sorted(_REGISTRY)]
