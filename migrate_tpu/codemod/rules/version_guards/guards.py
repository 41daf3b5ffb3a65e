"""The version guards of a module (``find_guards``): version tests, feature tests and
fallbacks, and which of their branches serve an older TensorFlow; every rule's findings kept
out of those branches (``confine``, ``guard_note``); a decided guard collapsed (``collapse``).
See the package's docstring.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union, cast

import libcst as cst

from migrate_tpu.codemod.analysis.tree import iter_tree
from migrate_tpu.codemod.analysis.walk import Analysis, BranchPoint, Scope
from migrate_tpu.codemod.analysis.names import canonical, lookup, qualified_name
from migrate_tpu.codemod.rules.version_guards.values import (
    OLDER_VERSIONS,
    SOURCE_VERSION,
    TARGET_VERSIONS,
    Evaluator,
    Undecided,
    evaluate,
    reads_version,
)

if TYPE_CHECKING:  # annotations only: typing has TypeGuard from Python 3.10
    from typing_extensions import TypeGuard

    from migrate_tpu.codemod.framework.rule import Finding, NodeRewrite, Rewritten

# Errors a ``try`` catches when it falls back from one API to the other.
_FALLBACK_ERRORS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError"})


@dataclass
class Guard:
    """One branch point on the TensorFlow version or on a feature."""

    node: cst.CSTNode  # If, IfExp or Try
    text: str  # how the note names it: "if hasattr(strategy, 'run')"
    kind: str  # "version", "feature" or "fallback"
    # Subtrees that serve an older TensorFlow (or may): no rule rewrites them.
    legacy: List[cst.CSTNode] = field(default_factory=list)
    # A decided version guard: the value its test has on every release of the target.
    value: Optional[bool] = None
    # Names only the test used (``LooseVersion``): their import may go with it.
    test_names: List[str] = field(default_factory=list)
    # Set by the version-guard rule when it reports the collapse.
    collapsed: bool = False
    # ``if <always True>: return ...`` with no ``else``: the statements after it in its block,
    # which the collapse removes with the test.
    unreachable: List[cst.CSTNode] = field(default_factory=list)
    # How a string comparison orders some release of the target against its number
    # ("2.10.0" < "2.2"): such a guard is reported, never collapsed.
    misordered: Optional[str] = None

    @property
    def decided(self) -> bool:
        return self.value is not None


# -- feature tests ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _moved_names() -> Tuple[Dict[str, str], Dict[str, str], Dict[str, str]]:
    """(full names, method names, namespaces) -> "old"/"new", from the catalogue's rename tables.

    An ``experimental`` namespace (``tensorflow.keras.mixed_precision.experimental``) takes the
    role of the names under it when they all agree: ``hasattr(tf.keras.mixed_precision, "experimental")``
    tests for the old API as surely as a test for one of its members."""
    from migrate_tpu.codemod.framework.rule import registered_rules

    full: Dict[str, str] = {}
    methods: Dict[str, str] = {}
    under: Dict[str, set] = {}
    for rule_class in registered_rules():
        kind = getattr(rule_class, "kind", None)
        for entry in getattr(rule_class, "entries", ()):
            old, new = getattr(entry, "old", None), getattr(entry, "new", None)
            names = [(old, "old")]
            if kind in ("method", "symbol"):  # a flag's ``new`` is guidance, not a name
                names.append((new, "new"))
            for name, role in names:
                if name:
                    (methods if kind == "method" or "." not in name else full).setdefault(name, role)
                    if kind != "method" and name.startswith("tensorflow."):
                        parts = name.split(".")
                        for end in range(2, len(parts)):
                            under.setdefault(".".join(parts[:end]), set()).add(role)
    # Only the ``experimental`` namespaces the tables move names out of: a namespace such as
    # ``tf.train`` is no test of a release merely because no new name of ours lives there.
    namespaces = {
        name: roles.pop() for name, roles in under.items() if len(roles) == 1 and name not in full and name.endswith(".experimental")
    }
    return full, methods, namespaces


def _feature_role(receiver: cst.BaseExpression, attribute: str, scope: Scope) -> Optional[str]:
    full, methods, namespaces = _moved_names()
    owner = qualified_name(receiver, scope)
    if owner is not None:
        dotted = canonical(f"{owner}.{attribute}")
        role = full.get(dotted) or namespaces.get(dotted)
        if role is not None:
            return role
    return methods.get(attribute)


def _feature_test(test: cst.BaseExpression, scope: Scope, depth: int = 0) -> Optional[bool]:
    """For ``hasattr(x, NAME)``-like tests: whether the True branch needs the old API.

    None when the test is not a feature test of a moved name.
    """
    if depth > 4:
        return None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _feature_test(test.expression, scope, depth + 1)
        return None if inner is None else not inner
    if isinstance(test, cst.Name):
        found = lookup(scope, test.value)
        if found is not None and len(found[1]) == 1 and found[1][0].kind == "assign" and found[1][0].value is not None:
            return _feature_test(found[1][0].value, found[1][0].scope, depth + 1)
        return None
    if isinstance(test, cst.BooleanOperation):
        # ``use_tpu and hasattr(s, "run")``: the branch the feature test's old side leads to
        # may serve older TensorFlow whatever the other operand is.
        sides = {_feature_test(side, scope, depth + 1) for side in (test.left, test.right)} - {None}
        return sides.pop() if len(sides) == 1 else None
    negate = False
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        right = comparison.comparator
        if isinstance(comparison.operator, (cst.In, cst.NotIn)) and _is_dir_call(right, scope):
            return _dir_test(test.left, right, isinstance(comparison.operator, cst.NotIn), scope)
        if not (isinstance(right, cst.Name) and right.value == "None"):
            return None
        if isinstance(comparison.operator, cst.Is):
            negate = True
        elif not isinstance(comparison.operator, cst.IsNot):
            return None
        test = test.left
    return _attribute_test(test, scope, negate)


def _dir_test(name: cst.BaseExpression, listing: cst.Call, absent: bool, scope: Scope) -> Optional[bool]:
    """For ``"run" in dir(strategy)`` (``absent``: ``not in``): whether the True branch needs the old API."""
    if not isinstance(name, cst.SimpleString):
        return None
    role = _feature_role(listing.args[0].value, cast(str, name.evaluated_value), scope)  # a bytes literal finds no role either
    if role is None:
        return None
    return (role == "old") != absent


def _attribute_test(test: cst.BaseExpression, scope: Scope, negate: bool) -> Optional[bool]:
    """For ``hasattr(x, NAME)`` and ``getattr(x, NAME, None)`` (its truth, through ``callable`` too,
    or compared with None; ``negate``: ``is None``): whether the True branch needs the old API."""
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "callable" and len(test.args) == 1:
        if lookup(scope, "callable") is None and not negate:
            test = test.args[0].value  # ``callable(getattr(s, "run", None))``
    if not isinstance(test, cst.Call) or not isinstance(test.func, cst.Name):
        return None
    builtin = test.func.value
    if lookup(scope, builtin) is not None or len(test.args) < 2 or any(a.keyword or a.star for a in test.args):
        return None
    if builtin == "hasattr" and len(test.args) == 2 and not negate:
        pass
    elif builtin == "getattr" and len(test.args) == 3 and isinstance(test.args[2].value, cst.Name) and test.args[2].value.value in ("None", "False"):
        pass  # ``getattr(s, "run", None) is not None``, or its truth
    else:
        return None
    name = test.args[1].value
    if not isinstance(name, cst.SimpleString):
        return None
    role = _feature_role(test.args[0].value, cast(str, name.evaluated_value), scope)  # a bytes literal finds no role either
    if role is None:
        return None
    true_is_old = role == "old"
    return not true_is_old if negate else true_is_old


def _getattr_fallback(call: cst.BaseExpression, scope: Scope, default_only: bool = True) -> Optional[cst.BaseExpression]:
    """For ``getattr(x, NEW, fallback)`` with ``NEW`` a name the target has and older
    TensorFlow lacks: the fallback, which serves older TensorFlow (``getattr(tf.distribute,
    "TPUStrategy", tf.distribute.experimental.TPUStrategy)``). With ``default_only`` False,
    also ``getattr(x, NEW, None)`` (the left of ``... or fallback``): its own call is returned."""
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "getattr"):
        return None
    if lookup(scope, "getattr") is not None or len(call.args) != 3 or any(a.keyword or a.star for a in call.args):
        return None
    name = call.args[1].value
    if not isinstance(name, cst.SimpleString) or _feature_role(call.args[0].value, cast(str, name.evaluated_value), scope) != "new":  # bytes: no role either
        return None
    fallback = call.args[2].value
    if isinstance(fallback, cst.Name) and fallback.value in ("None", "False"):
        return None if default_only else call
    return fallback if default_only else None


def _is_dir_call(expr: cst.BaseExpression, scope: Scope) -> TypeGuard[cst.Call]:
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and expr.func.value == "dir"
        and lookup(scope, "dir") is None
        and len(expr.args) == 1
        and not expr.args[0].star
    )


# -- finding the guards ----------------------------------------------------------------------


def _header(module: cst.Module, node: Union[BranchPoint, cst.Call]) -> str:
    if isinstance(node, cst.If):
        return "if " + module.code_for_node(node.test).strip()
    if isinstance(node, cst.IfExp):
        return "... if " + module.code_for_node(node.test).strip() + " else ..."
    if isinstance(node, cst.BooleanOperation):
        return module.code_for_node(node.left).strip() + " or ..."
    if isinstance(node, cst.Call):
        receiver, name = (module.code_for_node(arg.value).strip() for arg in node.args[:2])
        return f"getattr({receiver}, {name}, ...)"
    caught = dict.fromkeys(name for handler in node.handlers for name in _fallback_errors(handler))
    return "try/except " + "/".join(caught)


def _fallback_errors(handler: cst.ExceptHandler) -> List[str]:
    """The names among AttributeError/ImportError/ModuleNotFoundError that ``handler`` catches."""
    kinds = handler.type
    elements = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds] if kinds is not None else []
    return [e.value for e in elements if isinstance(e, cst.Name) and e.value in _FALLBACK_ERRORS]


def find_guards(analysis: Analysis) -> List["Guard"]:
    """The guards among the branch points the walk noted, outer ones first."""
    guards: List[Guard] = []
    target_versions = TARGET_VERSIONS.get(analysis.target, TARGET_VERSIONS["2.4"])
    analysis.module_scope.memo["project"] = (analysis.lookup, analysis.path)  # names imported from the tree
    analysis.module_scope.memo["scopes_by_node"] = analysis.scopes_by_node  # ``Klass.X`` finds the class's scope
    older_versions = OLDER_VERSIONS.get(analysis.target, OLDER_VERSIONS["2.4"])
    module = analysis.module
    reading = _Reading(module, target_versions, older_versions, {})
    node: Union[cst.Call, BranchPoint]  # each ``getattr`` call, then each branch point
    for node, scope in analysis.calls_by_name.get("getattr", ()):
        fallback = _getattr_fallback(node, scope)
        if fallback is not None:
            guards.append(Guard(node, _header(module, node), "feature", legacy=[fallback]))
    for node, scope in analysis.branch_points:
        if isinstance(node, cst.BooleanOperation):
            if _getattr_fallback(node.left, scope, default_only=False) is not None:
                guards.append(Guard(node, _header(module, node), "feature", legacy=[node.right]))
            continue
        if isinstance(node, cst.Try):
            fallbacks = [h.body for h in node.handlers if _fallback_errors(h)]
            if fallbacks:
                guards.append(Guard(node, _header(module, node), "fallback", legacy=[node.body, *fallbacks]))
            continue
        guard = _test_guard(analysis, node, scope, reading)
        if guard is not None:
            guards.append(guard)
    return guards


class _Reading(NamedTuple):
    """What testing the branch points of one module reads (``find_guards``)."""

    module: cst.Module
    target_versions: Tuple[str, ...]  # the target's releases
    older_versions: Tuple[str, ...]  # the releases before the source's
    reads_memo: Dict[int, bool]  # ``reads_version``'s answers


def _test_guard(analysis: Analysis, node: Union[cst.If, cst.IfExp], scope: Scope, reading: _Reading) -> Optional["Guard"]:
    """The guard an ``if`` or a conditional expression is, by its test, or None."""
    when_true: List[cst.CSTNode] = [node.body]
    when_false: List[cst.CSTNode] = [node.orelse] if node.orelse is not None else []
    early_exit = isinstance(node, cst.If) and node.orelse is None and _ends_in_exit(node.body)
    if early_exit:
        # ``if hasattr(s, "run"): return s.run(f)`` then the fallback: what follows is the else.
        when_false = _following(analysis, node)
    target_versions = reading.target_versions
    try:
        values = {version: evaluate(node.test, scope, version) for version in (SOURCE_VERSION, *target_versions)}
        older = {evaluate(node.test, scope, version)[0] for version in reading.older_versions}
    except ValueError:
        return _unevaluated_guard(node, scope, reading, when_true, when_false)
    source, names = values.pop(SOURCE_VERSION)
    on_target = {value for value, _ in values.values()}
    if on_target == {source} == older | {source}:
        return None  # every release agrees: not a migration guard
    if len(on_target) == 1:
        # The branch no release of the target takes serves older TensorFlow: TF 2.1, or
        # only releases before it (``startswith("2.0")`` is False on 2.1 and on the target).
        legacy = when_false if next(iter(on_target)) else when_true
    else:
        legacy = when_true if source else when_false
    guard = Guard(node, _header(reading.module, node), "version", legacy=legacy, test_names=names)
    # A text comparison the target's releases answer against their order is reported, not
    # collapsed: keeping the branch it takes would make the mistake permanent.
    guard.misordered = _misordered(node.test, scope, target_versions)
    # Decided, unless keeping the body would leave the statements after it dead but in place.
    removable = True
    if early_exit and on_target == {True}:
        # Kept, the body always leaves the block: what follows it there never runs on the target.
        removable = _removable(when_false, scope)
        guard.unreachable = list(when_false) if removable else []
    if len(on_target) == 1 and guard.misordered is None and removable:
        guard.value = on_target.pop()
    return guard


def _unevaluated_guard(
    node: Union[cst.If, cst.IfExp], scope: Scope, reading: _Reading, when_true: List[cst.CSTNode], when_false: List[cst.CSTNode]
) -> Optional["Guard"]:
    """The guard a test that cannot be evaluated on the versions is: a test of a feature, or of
    the version that also reads other values; or None."""
    true_is_old = _feature_test(node.test, scope)
    if true_is_old is not None:
        return Guard(node, _header(reading.module, node), "feature", legacy=when_true if true_is_old else when_false)
    if reads_version(node.test, scope, memo=reading.reads_memo) or _outside_version_flag(node.test, scope):
        # A test on the version that cannot be evaluated as a whole (it also reads
        # other values, or the version through code not modelled here). The branch
        # the target never takes is the legacy one; when that is unknown, neither
        # is rewritten (a rewrite would turn the legacy branch into a copy of the other).
        target_value = _value_on(node.test, scope, reading.target_versions)
        legacy = when_true if target_value is False else when_false if target_value is True else [*when_true, *when_false]
        return Guard(node, _header(reading.module, node), "version", legacy=legacy)
    return None


_VERSION_TOKENS = frozenset({"version", "ver", "old", "older", "new", "newer", "legacy", "ge", "gt", "le", "lt", "before", "after"})


def _names_a_version(identifier: str) -> bool:
    """Whether a name says it holds a TensorFlow version or a test of one: ``IS_TF2``,
    ``TF_VERSION``, ``is_old_tf``, ``TF_GE_2_2``, ``tfv1`` (``USE_TF_RUN`` does not)."""
    tokens = [t.lower() for t in re.split(r"_+|(?<=[a-z])(?=[A-Z])", identifier) if t]
    if any(re.fullmatch(r"(tf|tensorflow)v?\d+", t) for t in tokens):
        return True
    if not any(t in ("tf", "tensorflow") for t in tokens):
        return False
    return any(t in _VERSION_TOKENS or t.isdigit() or re.fullmatch(r"v\d+", t) for t in tokens)


def _outside_version_flag(test: cst.BaseExpression, scope: Scope) -> bool:
    """Whether ``test`` reads a name imported from outside the tree's view whose name says it
    is a TensorFlow version test (``from utils.compat import IS_TF2``, ``compat.IS_OLD_TF``,
    ``is_tf2()``). Its value cannot be known here, so both branches are kept (with notes):
    guessing wrong costs a note, missing it could rewrite a legacy branch."""
    for node in iter_tree(test):
        if not isinstance(node, (cst.Name, cst.Attribute)):
            continue
        # The name as written first (cheap, and every ``if`` of the file comes here).
        spelled = node.value if isinstance(node, cst.Name) else node.attr.value
        if "tf" not in spelled.lower() or not _names_a_version(spelled):
            continue
        name = qualified_name(node, scope)
        if name is not None and not name.startswith("tensorflow") and "." in name:
            return True
    return False


def _misordered(test: cst.BaseExpression, scope: Scope, versions: Sequence[str]) -> Optional[str]:
    """The first of ``versions`` on which ``test`` orders version strings as text against their
    numbers (``tf.__version__ >= "2.2"`` is False on "2.10.0"), when that ordering alone
    splits ``versions``; else None."""
    try:
        meant = {version: Evaluator(version, numeric_strings=True).value(test, scope) for version in versions}
        if len({bool(value) for value in meant.values()}) != 1:
            return None
        for version in versions:
            if evaluate(test, scope, version)[0] != bool(meant[version]):
                return f"on TensorFlow {version} it is {not meant[version]}, though by release number it is {bool(meant[version])}"
    except (Undecided, ValueError):
        return None
    return None


def _value_on(test: cst.BaseExpression, scope: Scope, versions: Sequence[str]) -> Optional[bool]:
    """The value ``test`` has on every one of ``versions``, where its version parts settle it
    whatever its other parts are (``tf.__version__ < "2.2" and flag`` is False on 2.4); else None."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _value_on(test.expression, scope, versions)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left = _value_on(test.left, scope, versions)
        right = _value_on(test.right, scope, versions)
        settles = isinstance(test.operator, cst.Or)  # True settles `or`, False settles `and`
        if settles in (left, right):
            return settles
        return left if left is not None and left == right else None
    try:
        values = {evaluate(test, scope, version, settled=False)[0] for version in versions}
    except ValueError:
        return None
    return values.pop() if len(values) == 1 else None


def _removable(statements: Sequence[cst.CSTNode], scope: Scope) -> bool:
    """Whether removing statements that never run changes nothing else: the function stays a
    generator or coroutine if it was one, and every name they bind keeps the scope it has
    (another binding of it in the same scope stays)."""
    inside = set()
    for statement in statements:
        for node in iter_tree(statement):
            if isinstance(node, (cst.Yield, cst.Await, cst.Global, cst.Nonlocal)):
                return False
            inside.add(id(node))
    for bindings in scope.bindings.values():
        here = [b for b in bindings if b.node is not None and id(b.node) in inside]
        if here and len(here) == len(bindings):
            return False
    return True


def _ends_in_exit(block: cst.BaseSuite) -> bool:
    """Whether a block always leaves by ``return``/``raise``/``continue``/``break`` at its end."""
    statements = block.body if isinstance(block, cst.IndentedBlock) else [block]
    last = statements[-1] if statements else None
    smalls = last.body if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else []
    return bool(smalls) and isinstance(smalls[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break))


def _following(analysis: Analysis, node: cst.CSTNode) -> List[cst.CSTNode]:
    """The statements after ``node`` in its block."""
    site = analysis.site(node)
    parent = site.path[-2] if site is not None and len(site.path) > 1 else None
    body = list(getattr(parent, "body", ())) if isinstance(parent, (cst.IndentedBlock, cst.Module)) else []
    for index, statement in enumerate(body):
        if statement is node:
            return body[index + 1 :]
    return []


# -- what guards do to findings ---------------------------------------------------------------


def confine(findings: Sequence[Finding], guards: Sequence[Guard]) -> List[Finding]:
    """Findings with none rewriting a legacy branch: such a fix becomes a note naming the guard.

    Findings inside a branch that a collapse removes are dropped with it.
    """
    if not guards:
        return list(findings)
    from migrate_tpu.codemod.analysis.tree import iter_tree
    from migrate_tpu.codemod.framework.rule import Safety

    inside: Dict[int, Guard] = {}
    guard: Optional[Guard]  # each guard in turn, then the innermost one around a finding
    for guard in guards:  # outer first, so the innermost guard names a node
        for root in guard.legacy:
            for node in iter_tree(root):
                inside[id(node)] = guard
    kept = []
    for finding in findings:
        nodes = [finding.node, *(change.node for change in finding.changes)]
        # A collapse's own removals lie in its guard's legacy branch: that is the point of it.
        guard = next((inside[id(n)] for n in nodes if id(n) in inside and inside[id(n)].node is not finding.node), None)
        if guard is None:
            kept.append(finding)
            continue
        if guard.collapsed and id(finding.node) in inside and inside[id(finding.node)] is guard:
            continue  # the branch goes with the collapse
        finding.changes = []
        finding.imports = []
        finding.releases = []
        finding.fix_title = None
        finding.safety = Safety.MANUAL
        finding.message += guard_note(guard)
        kept.append(finding)
    return kept


def guard_note(guard: Guard) -> str:
    """What a finding left alone in ``guard``'s legacy branch adds to its message."""
    if guard.kind == "fallback":
        return f"; left as is: one side of the fallback `{guard.text}` (remove it once older TensorFlow is not needed)"
    return f"; left as is: this code serves older TensorFlow under the guard `{guard.text}`"


# -- collapsing a decided guard ---------------------------------------------------------------


def collapse(guard: Guard, alone: bool, elif_: bool = False) -> NodeRewrite:
    """The rewrite that keeps only the branch ``guard.value`` takes.

    ``alone``: the statement is the only one of its block (removing it leaves
    ``pass``); ``elif_``: the guard is an ``elif`` (its branch becomes the ``else``).
    """
    keep_true = bool(guard.value)

    def rewrite(updated: Union[cst.If, cst.IfExp]) -> Rewritten:
        if isinstance(updated, cst.IfExp):
            kept = updated.body if keep_true else updated.orelse
            return kept if kept.lpar else kept.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        if elif_:
            if keep_true:
                return cst.Else(updated.body, leading_lines=updated.leading_lines, whitespace_before_colon=updated.whitespace_after_test)
            if updated.orelse is None:
                return cst.RemovalSentinel.REMOVE
            return updated.orelse.with_changes(leading_lines=[*updated.leading_lines, *updated.orelse.leading_lines])
        if keep_true:
            block = updated.body
        else:
            orelse = updated.orelse
            if orelse is None:
                if alone:
                    return cst.SimpleStatementLine([cst.Pass()], leading_lines=updated.leading_lines)
                return cst.RemovalSentinel.REMOVE
            if isinstance(orelse, cst.If):  # the ``elif`` becomes the ``if``
                return orelse.with_changes(leading_lines=updated.leading_lines)
            block = orelse.body
        statements = _statements(block)
        first = cast("Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]", statements[0])  # what every statement is
        statements[0] = first.with_changes(leading_lines=[*updated.leading_lines, *first.leading_lines])
        return cst.FlattenSentinel(statements) if len(statements) > 1 else statements[0]

    return rewrite


def _statements(block: cst.BaseSuite) -> List[cst.BaseStatement]:
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    # ``if test: a; b`` keeps its small statements on one line.
    suite = cast(cst.SimpleStatementSuite, block)  # the other kind of block
    smalls = list(suite.body)
    smalls[-1] = smalls[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return [cst.SimpleStatementLine(smalls, trailing_whitespace=suite.trailing_whitespace)]
