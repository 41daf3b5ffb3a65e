"""Version guards: code that branches on the TensorFlow version or on a feature.

Code written to run on several TensorFlow releases keeps the old API on purpose
in one branch::

    if LooseVersion(tf.__version__) < LooseVersion("2.2"):
        out = strategy.experimental_run_v2(step, args=(x,))   # legacy branch
    else:
        out = strategy.run(step, args=(x,))

Rewriting the legacy branch would turn it into a copy of the other one. So the
analysis finds the guards once, and every rule's findings pass through
:func:`confine`: a finding inside a legacy branch loses its fix and becomes a
note that names the guard. Rules need not know about guards at all.

Three kinds of guard, like pyupgrade's ``sys.version_info`` handling:

* a pure version comparison (``tf.__version__``, ``tf.version.VERSION``, through
  ``LooseVersion``/``StrictVersion``/``packaging.version``, ``split``, ``int``,
  slices, ...; literals and names bound once to such values only). It is
  evaluated for TF 2.1 (the code's origin), for older releases the code may
  still serve (1.15, 2.0, ...) and for the target's releases. When every
  release of the target takes one branch and some older release the other
  (``startswith("2.0")`` is False on 2.1 too), the guard is *decided*: the
  version-guard rule collapses it to the target's branch (safe: the test reads
  nothing but the version). When the target's releases disagree, the branch
  TF 2.1 takes is the legacy one and is left alone. A plain string comparison
  (``tf.__version__ >= "2.2"``) is evaluated as Python does, character by
  character, since that is what the program does; where that orders a release
  of the target against its number ("2.10.0" < "2.2") the guard is reported and
  never collapsed (keeping the branch it takes would make the slip permanent).
  A name imported from another module of the tree (``from .compat import
  IS_TF_21``) is evaluated in that module (``project.ProjectLookup``); a helper
  function there that reads the version makes a guard whose branches are both kept.
  A test that reads the version but cannot be evaluated as a whole (``and
  flag``, a helper of this file, ``re.match``) is still a guard: the branch the
  target never takes is left alone, or both branches when that is unknown.
* a feature test, ``hasattr(x, "run")`` (or ``getattr(x, "run", None) is not
  None``): the branch that needs the old name is the legacy one. It is never
  collapsed: whether ``x`` has the attribute depends on what ``x`` is, which
  the analysis cannot prove (a user's object may be passed where a strategy is
  expected), so collapsing could change behaviour.
* ``try: ... except AttributeError`` (or ``ImportError``): either side may be
  the fallback, so both the ``try`` body and those handlers are left alone; so is
  the fallback of ``getattr(x, "run", fallback)`` and of ``getattr(x, "run", None) or
  fallback`` where ``run`` is the new name.

Where a name cannot settle the version, the test is still a guard and never
collapsed: a class attribute (``self.TF_OLD``; a subclass may replace it: its value
on the target only says which branch is legacy), a parameter defaulting to the
version, and a name imported from outside the tree whose name says it tests the
TensorFlow version (``IS_TF2``, ``compat.IS_OLD_TF``): both branches are kept.
"""

from __future__ import annotations

import functools
import operator
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union, cast

import libcst as cst

from migrate_tpu.codemod.analysis import iter_tree
from migrate_tpu.codemod.names import canonical, lookup, qualified_name

if TYPE_CHECKING:  # annotations only: typing has TypeGuard from Python 3.10
    from _typeshed import SupportsGetItem
    from typing_extensions import TypeGuard

# The release the migrated code comes from, and the releases each target stands for.
SOURCE_VERSION = "2.1.0"
TARGET_VERSIONS: Dict[str, Tuple[str, ...]] = {
    "2.4": ("2.4.0", "2.4.1", "2.4.4"),
    "latest": ("2.5.0", "2.6.0", "2.9.0", "2.10.0", "2.11.0", "2.15.0", "2.16.1", "2.21.0"),
}
# Older releases code written for TF 2.1 may still serve in a branch of its own
# (``if tf.__version__.startswith("2.0")``): a branch only they take is legacy too.
OLDER_VERSIONS: Dict[str, Tuple[str, ...]] = {
    "2.4": ("1.15.0", "2.0.0", "2.2.0", "2.3.0"),
    "latest": ("1.15.0", "2.0.0", "2.2.0", "2.3.0", "2.4.1"),
}

_VERSION_NAMES = frozenset(
    {
        "tensorflow.__version__",
        "tensorflow.version.VERSION",
        "tensorflow.VERSION",
        "tensorflow.compat.v1.__version__",
        "tensorflow.compat.v1.VERSION",
        "tensorflow.compat.v1.version.VERSION",
    }
)
_PARSERS = {
    "distutils.version.LooseVersion": "loose",
    "looseversion.LooseVersion": "loose",
    "distutils.version.StrictVersion": "strict",
    "packaging.version.parse": "packaging",
    "packaging.version.Version": "packaging",
    "pkg_resources.parse_version": "packaging",
}
_STRING_METHODS = frozenset({"startswith", "endswith", "split", "rsplit", "strip", "lstrip", "rstrip", "lower"})
_COMPARISONS: Dict[type, Callable[[Any, Any], object]] = {
    cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le,
    cst.GreaterThan: operator.gt,
    cst.GreaterThanEqual: operator.ge,
    cst.Equal: operator.eq,
    cst.NotEqual: operator.ne,
    cst.In: lambda a, b: a in b,
    cst.NotIn: lambda a, b: a not in b,
}
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


class _Undecided(Exception):
    """The expression is not a pure function of the TensorFlow version."""


class _Version:
    """A parsed version that compares like the library it stands for (release strings only)."""

    def __init__(self, kind: str, text: object) -> None:
        if not isinstance(text, str):
            raise _Undecided
        self.kind = kind
        if kind == "loose":
            # The sort key: a list here, a tuple for the other kinds; compared only with a key of its own kind.
            self.key: Sequence[object] = [int(p) if p.isdigit() else p for p in re.split(r"(\d+|[a-z]+|\.)", text) if p and p != "."]
            self.parts = tuple(self.key)
        elif kind == "strict":
            match = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
            if match is None:
                raise _Undecided
            self.parts = tuple(int(p or 0) for p in match.groups())
            self.key = self.parts
        else:  # packaging: a release, perhaps a pre-release ("2.2.0rc0"); dev, post and local parts are not modelled
            match = re.fullmatch(r"v?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|rc|c|alpha|beta|pre|preview)[-_.]?(\d*))?", text.strip().lower())
            if match is None:
                raise _Undecided
            self.parts = tuple(int(p) for p in match.group(1).split("."))
            key = list(self.parts)
            while len(key) > 1 and key[-1] == 0:
                key.pop()
            # A pre-release sorts before its release: a < b < rc (c, pre and preview are rc).
            phase = {"alpha": "a", "beta": "b", "c": "rc", "pre": "rc", "preview": "rc"}.get(match.group(2), match.group(2))
            stage = (1, "", 0) if phase is None else (0, phase, int(match.group(3) or 0))
            self.key = (tuple(key), stage)

    def _other(self, other: object):
        if isinstance(other, _Version) and other.kind == self.kind:
            return other.key
        if isinstance(other, str) and self.kind in ("loose", "strict"):
            return _Version(self.kind, other).key
        raise _Undecided

    def __lt__(self, other):
        return self.key < self._other(other)

    def __le__(self, other):
        return self.key <= self._other(other)

    def __gt__(self, other):
        return self.key > self._other(other)

    def __ge__(self, other):
        return self.key >= self._other(other)

    def __eq__(self, other):
        return self.key == self._other(other)

    def __ne__(self, other):
        return self.key != self._other(other)

    __hash__ = None  # type: ignore[assignment]

    def attribute(self, name: str) -> object:
        if self.kind == "loose" and name == "version":
            return list(self.key)
        if self.kind == "packaging" and name in ("release", "major", "minor", "micro"):
            parts = self.parts + (0, 0)
            return {"release": self.parts, "major": parts[0], "minor": parts[1], "micro": parts[2]}[name]
        raise _Undecided


class _Evaluator:
    """Evaluates an expression for one TensorFlow version, or raises :class:`_Undecided`."""

    def __init__(self, version: str, numeric_strings: bool = False) -> None:
        self.version = version
        # Order two version strings by their numbers, as their author meant, not as text.
        self.numeric_strings = numeric_strings
        self.saw_version = False
        # Read through a class attribute, which a subclass or an assignment may replace: the value
        # tells which branch is legacy, but the guard is not collapsed.
        self.overridable = False
        self.names: List[str] = []
        self.env: Dict[str, object] = {}  # comprehension variables being iterated

    def value(self, expr: cst.CSTNode, scope, depth: int = 0) -> object:
        if depth > 20:
            raise _Undecided
        try:
            return self._value(expr, scope, depth + 1)
        except (TypeError, ValueError, IndexError, AttributeError, KeyError):
            raise _Undecided

    def _value(self, expr, scope, depth):
        if isinstance(expr, cst.SimpleString):
            return expr.evaluated_value
        if isinstance(expr, (cst.Integer, cst.Float)):
            return expr.evaluated_value
        if isinstance(expr, (cst.Tuple, cst.List)):
            items = [self.value(e.value, scope, depth) for e in expr.elements if not isinstance(e, cst.StarredElement)]
            if len(items) != len(expr.elements):
                raise _Undecided
            return tuple(items) if isinstance(expr, cst.Tuple) else items
        if isinstance(expr, cst.Name) and expr.value in self.env:
            return self.env[expr.value]
        if isinstance(expr, (cst.GeneratorExp, cst.ListComp)):
            return self._comprehension(expr, scope, depth)
        if isinstance(expr, (cst.Name, cst.Attribute)):
            name = qualified_name(expr, scope)
            if name is not None and canonical(name) in _VERSION_NAMES:
                self.saw_version = True
                return self.version
            imported = _imported_values(name, scope)
            if imported is not None:
                if imported is _UNKNOWN or self.version not in imported:
                    raise _Undecided
                self.saw_version = True
                return imported[self.version]
            if isinstance(expr, cst.Name):
                if expr.value in ("True", "False", "None"):
                    return {"True": True, "False": False, "None": None}[expr.value]
                return self._bound(expr, scope, depth)
            attribute = _class_attribute(expr, scope)
            if attribute is not None:  # ``self.TF_OLD``, bound once in the class body
                self.overridable = True
                return self.value(attribute[0], attribute[1], depth)
            base = self.value(expr.value, scope, depth)
            if isinstance(base, _Version):
                return base.attribute(expr.attr.value)
            raise _Undecided
        if isinstance(expr, cst.Comparison):
            left = self.value(expr.left, scope, depth)
            result = True
            for target in expr.comparisons:
                right = self.value(target.comparator, scope, depth)
                compare = _COMPARISONS.get(type(target.operator))
                if compare is None:
                    raise _Undecided
                if self.numeric_strings and isinstance(target.operator, _ORDERINGS):
                    left, right = _numbers(left), _numbers(right)
                result = result and bool(compare(left, right))
                left = right
            return result
        if isinstance(expr, cst.BooleanOperation):
            left = self.value(expr.left, scope, depth)
            right = self.value(expr.right, scope, depth)
            return (left and right) if isinstance(expr.operator, cst.And) else (left or right)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return not self.value(expr.expression, scope, depth)
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
            base = cast("SupportsGetItem[Any, object]", self.value(expr.value, scope, depth))  # not subscriptable: TypeError, _Undecided
            index = expr.slice[0].slice
            if isinstance(index, cst.Index):
                return base[self.value(index.value, scope, depth)]
            if isinstance(index, cst.Slice):
                bounds = [None if part is None else self.value(part, scope, depth) for part in (index.lower, index.upper, index.step)]
                return base[slice(*bounds)]
            raise _Undecided
        if isinstance(expr, cst.Call):
            return self._call(expr, scope, depth)
        raise _Undecided

    def _comprehension(self, expr, scope, depth):
        """``[int(p) for p in tf.__version__.split(".")]`` (one ``for``, a plain name, no ``if``)."""
        comp = expr.for_in
        if comp.inner_for_in is not None or comp.ifs or comp.asynchronous is not None or not isinstance(comp.target, cst.Name):
            raise _Undecided
        items = cast("Iterable[object]", self.value(comp.iter, scope, depth))  # not iterable: TypeError, _Undecided
        variable = comp.target.value
        outer = self.env.get(variable, _UNSET)
        results = []
        try:
            for item in items:
                self.env[variable] = item
                results.append(self.value(expr.elt, scope, depth))
        finally:
            if outer is _UNSET:
                self.env.pop(variable, None)
            else:
                self.env[variable] = outer
        return results

    def _bound(self, name: cst.Name, scope, depth):
        """A name bound once, to a pure expression (``TF_VERSION = LooseVersion(tf.__version__)``),
        or unpacked from one (``major, minor = map(int, tf.__version__.split(".")[:2])``)."""
        found = lookup(scope, name.value)
        if found is None:
            raise _Undecided
        bindings = found[1]
        if len(bindings) != 1:
            raise _Undecided
        binding = bindings[0]
        unpacked = _unpacked_from(binding, name.value)
        if unpacked is not None:
            value, index, count = unpacked
            items = list(cast("Iterable[object]", self.value(value, binding.scope, depth)))  # not iterable: TypeError, _Undecided
            if len(items) != count:
                raise _Undecided
            return items[index]
        if binding.kind != "assign" or binding.value is None:
            raise _Undecided
        return self.value(binding.value, binding.scope, depth)

    def _call(self, call: cst.Call, scope, depth):
        if any(arg.star or arg.keyword is not None for arg in call.args):
            raise _Undecided
        func = call.func
        name = qualified_name(func, scope)
        if name in _PARSERS and len(call.args) == 1:
            head = func
            while isinstance(head, cst.Attribute):
                head = head.value
            if isinstance(head, cst.Name):
                self.names.append(head.value)
            return _Version(_PARSERS[name], self.value(call.args[0].value, scope, depth))
        if isinstance(func, cst.Name) and lookup(scope, func.value) is None:
            builtin = func.value
            if builtin == "map" and len(call.args) == 2 and isinstance(call.args[0].value, cst.Name):
                convert = call.args[0].value.value
                if convert in ("int", "str") and lookup(scope, convert) is None:
                    # Items of another kind raise TypeError or ValueError: _Undecided.
                    return [int(item) if convert == "int" else str(item) for item in cast("Iterable[Any]", self.value(call.args[1].value, scope, depth))]
            if builtin in ("int", "float", "str", "tuple", "list", "len") and len(call.args) == 1:
                value = self.value(call.args[0].value, scope, depth)
                conversions: Dict[str, Callable[[Any], object]] = {"int": int, "float": float, "str": str, "tuple": tuple, "list": list, "len": len}
                return conversions[builtin](value)
            raise _Undecided
        args = [self.value(arg.value, scope, depth) for arg in call.args]
        if isinstance(func, cst.Attribute) and func.attr.value in _STRING_METHODS:
            receiver = self.value(func.value, scope, depth)
            # ``startswith(("2.0", "2.1"))`` takes a tuple of prefixes.
            plain = lambda a: isinstance(a, (str, int)) or (isinstance(a, tuple) and all(isinstance(p, str) for p in a))
            if isinstance(receiver, str) and all(plain(a) for a in args):
                return getattr(receiver, func.attr.value)(*args)
        raise _Undecided


_UNSET = object()
_ORDERINGS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


def _numbers(value: object) -> object:
    """``"2.10.0"`` -> ``(2, 10, 0)``; anything else as it is."""
    if isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)*", value):
        return tuple(int(part) for part in value.split("."))
    return value


def _unpacked_from(binding, name: str) -> Optional[Tuple[cst.BaseExpression, int, int]]:
    """(value, index, count) when ``binding`` is ``a, b = value`` (plain names only) binding ``name``."""
    node = binding.node
    if binding.kind != "other" or not isinstance(node, cst.Assign) or len(node.targets) != 1:
        return None
    target = node.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)):
        return None
    names = [element.value for element in target.elements]
    if not all(isinstance(n, cst.Name) and not isinstance(e, cst.StarredElement) for n, e in zip(names, target.elements)):
        return None
    spelled = [n.value for n in cast("List[cst.Name]", names)]  # all names: checked above
    if spelled.count(name) != 1:
        return None
    return node.value, spelled.index(name), len(spelled)


def _class_attribute(expr: cst.CSTNode, scope) -> Optional[Tuple[cst.BaseExpression, object]]:
    """For ``self.X`` (``cls.X``) in a method, or ``Klass.X``: the value and scope of the one
    binding ``X = ...`` in the class body, when no method assigns ``self.X`` (which could
    change it per instance); else None."""
    if not isinstance(expr, cst.Attribute) or not isinstance(expr.value, cst.Name):
        return None
    owner, attribute = expr.value.value, expr.attr.value
    found = lookup(scope, owner)
    if found is None or len(found[1]) != 1:
        return None
    binding = found[1][0]
    klass = None
    if binding.kind == "param" and binding.scope.params[:1] == [owner]:
        method = binding.scope.node
        decorators = {d.decorator.value for d in getattr(method, "decorators", ()) if isinstance(d.decorator, cst.Name)}
        if "staticmethod" not in decorators:
            klass = binding.scope.enclosing_class()
    elif binding.kind == "class":
        scopes = scope.module().memo.get("scopes_by_node")
        klass = scopes.get(id(binding.node)) if scopes else None
    if klass is None or attribute in klass.attributes:
        return None
    bindings = klass.bindings.get(attribute, [])
    if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None:
        return None
    return bindings[0].value, bindings[0].scope


def reads_version(expr: cst.CSTNode, scope, depth: int = 0, memo: Optional[Dict[int, bool]] = None) -> bool:
    """Whether ``expr`` reads the TensorFlow version, directly or through names bound
    once (also by unpacking) and functions of this file that read it.

    ``memo`` (by the id of a binding's value or function body) keeps each one walked once."""
    if depth > 6:
        return False
    if memo is None:
        memo = {}
    for node in iter_tree(expr):  # semantic nodes only: LibCST's ``children`` runs a visitor per node
        if isinstance(node, (cst.Name, cst.Attribute)):
            name = qualified_name(node, scope)
            if name is not None and canonical(name) in _VERSION_NAMES:
                return True
            if _imported_values(name, scope) is not None:
                return True
        attribute = _class_attribute(node, scope) if isinstance(node, cst.Attribute) else None
        if attribute is not None:
            key = id(attribute[0])
            if key not in memo:
                memo[key] = False
                memo[key] = reads_version(attribute[0], attribute[1], depth + 1, memo)
            if memo[key]:
                return True
        if isinstance(node, cst.Name):
            found = lookup(scope, node.value)
            if found is not None and len(found[1]) == 1:
                binding = found[1][0]
                unpacked = _unpacked_from(binding, node.value)
                source: Optional[cst.CSTNode] = unpacked[0] if unpacked is not None else binding.value if binding.kind == "assign" else None
                if binding.kind == "def" and binding.node is not None:
                    source = cast(cst.FunctionDef, binding.node).body  # a "def" binding's node is its FunctionDef
                source_scope = binding.scope
                param_default = binding.kind == "param" and isinstance(binding.node, cst.Param) and binding.node.default is not None
                if param_default and binding.scope.parent is not None:
                    # ``def step(x, v=tf.__version__)``: a caller may pass another value, so the
                    # test is never evaluated, but it is a guard (its default read where the def is).
                    source, source_scope = cast(cst.Param, binding.node).default, binding.scope.parent  # a Param: ``param_default``
                if source is not None:
                    key = id(source)
                    if key not in memo:
                        memo[key] = False  # in progress: a cycle reads nothing new
                        memo[key] = reads_version(source, source_scope, depth + 1, memo)
                    if memo[key]:
                        return True
    return False


# -- versions read in another module of the tree ------------------------------------------------

# Every release any guard is evaluated for: what a module offers its importers.
ALL_VERSIONS = tuple(sorted({SOURCE_VERSION, *(v for vs in OLDER_VERSIONS.values() for v in vs), *(v for vs in TARGET_VERSIONS.values() for v in vs)}))
_UNKNOWN: Dict[str, object] = {}  # a name that reads the version in a way not evaluated here


def _imported_values(name: Optional[str], scope) -> Optional[Dict[str, object]]:
    """For a name imported from another module of the tree (``from .compat import IS_TF2``):
    its value on each release, ``_UNKNOWN`` when it reads the version otherwise, None when
    it does not read the version (or the tree is not in view)."""
    if name is None or name.startswith("tensorflow"):
        return None
    project = scope.module().memo.get("project")
    finder = getattr(project[0], "version_values", None) if project else None
    if finder is None:
        return None
    found = finder(name, project[1])
    if found is None:
        return None
    return _UNKNOWN if found == "unknown" else found


def module_version_summary(analysis) -> Dict[str, object]:
    """The module's top-level names that read the TensorFlow version, for its importers:
    name -> {release: value}, or "unknown" where the value is not evaluated (a function)."""
    module = analysis.module_scope
    module.memo["project"] = (analysis.lookup, analysis.path)
    found: Dict[str, object] = {}
    memo: Dict[int, bool] = {}
    for name, bindings in module.bindings.items():
        if len(bindings) != 1 or bindings[0].kind not in ("assign", "other", "def", "import"):
            continue
        reference = cst.Name(name)
        if not reads_version(reference, module, memo=memo):
            continue
        try:
            found[name] = {version: _Evaluator(version).value(reference, module) for version in ALL_VERSIONS}
        except _Undecided:
            found[name] = "unknown"
    return found


def evaluate(test: cst.BaseExpression, scope, version: str, settled: bool = True) -> Tuple[bool, List[str]]:
    """The truth of ``test`` on TensorFlow ``version`` and the parser names it used.

    Raises ``ValueError`` when ``test`` is not a pure function of the version (with ``settled``,
    also when it reads the version through a class attribute, which may be replaced).
    """
    evaluator = _Evaluator(version)
    try:
        result = evaluator.value(test, scope)
    except _Undecided:
        raise ValueError("not a version test") from None
    if not evaluator.saw_version:
        raise ValueError("the test does not read the TensorFlow version")
    if settled and evaluator.overridable:
        raise ValueError("the test reads the version through a class attribute")
    return bool(result), evaluator.names


# -- feature tests ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _moved_names() -> Tuple[Dict[str, str], Dict[str, str], Dict[str, str]]:
    """(full names, method names, namespaces) -> "old"/"new", from the catalogue's rename tables.

    An ``experimental`` namespace (``tensorflow.keras.mixed_precision.experimental``) takes the
    role of the names under it when they all agree: ``hasattr(tf.keras.mixed_precision, "experimental")``
    tests for the old API as surely as a test for one of its members."""
    from migrate_tpu.codemod.rule import registered_rules

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


def _feature_role(receiver: cst.BaseExpression, attribute: str, scope) -> Optional[str]:
    full, methods, namespaces = _moved_names()
    owner = qualified_name(receiver, scope)
    if owner is not None:
        dotted = canonical(f"{owner}.{attribute}")
        role = full.get(dotted) or namespaces.get(dotted)
        if role is not None:
            return role
    return methods.get(attribute)


def _feature_test(test: cst.BaseExpression, scope, depth: int = 0) -> Optional[bool]:
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
            # ``"run" in dir(strategy)``
            name = test.left
            if not isinstance(name, cst.SimpleString):
                return None
            role = _feature_role(right.args[0].value, cast(str, name.evaluated_value), scope)  # a bytes literal finds no role either
            if role is None:
                return None
            return (role == "old") != isinstance(comparison.operator, cst.NotIn)
        if not (isinstance(right, cst.Name) and right.value == "None"):
            return None
        if isinstance(comparison.operator, cst.Is):
            negate = True
        elif not isinstance(comparison.operator, cst.IsNot):
            return None
        test = test.left
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


def _getattr_fallback(call: cst.BaseExpression, scope, default_only: bool = True) -> Optional[cst.BaseExpression]:
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


def _is_dir_call(expr: cst.BaseExpression, scope) -> TypeGuard[cst.Call]:
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and expr.func.value == "dir"
        and lookup(scope, "dir") is None
        and len(expr.args) == 1
        and not expr.args[0].star
    )


# -- finding the guards ----------------------------------------------------------------------


def _header(module: cst.Module, node) -> str:
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


def find_guards(analysis) -> List["Guard"]:
    """The guards among the branch points the walk noted, outer ones first."""
    guards: List[Guard] = []
    target_versions = TARGET_VERSIONS.get(analysis.target, TARGET_VERSIONS["2.4"])
    analysis.module_scope.memo["project"] = (analysis.lookup, analysis.path)  # names imported from the tree
    analysis.module_scope.memo["scopes_by_node"] = analysis.scopes_by_node  # ``Klass.X`` finds the class's scope
    older_versions = OLDER_VERSIONS.get(analysis.target, OLDER_VERSIONS["2.4"])
    module = analysis.module
    reads_memo: Dict[int, bool] = {}
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
        when_true: List[cst.CSTNode] = [node.body]
        when_false: List[cst.CSTNode] = [node.orelse] if node.orelse is not None else []
        early_exit = isinstance(node, cst.If) and node.orelse is None and _ends_in_exit(node.body)
        if early_exit:
            # ``if hasattr(s, "run"): return s.run(f)`` then the fallback: what follows is the else.
            when_false = _following(analysis, node)
        try:
            values = {version: evaluate(node.test, scope, version) for version in (SOURCE_VERSION, *target_versions)}
            older = {evaluate(node.test, scope, version)[0] for version in older_versions}
        except ValueError:
            true_is_old = _feature_test(node.test, scope)
            if true_is_old is not None:
                guards.append(Guard(node, _header(module, node), "feature", legacy=when_true if true_is_old else when_false))
            elif reads_version(node.test, scope, memo=reads_memo) or _outside_version_flag(node.test, scope):
                # A test on the version that cannot be evaluated as a whole (it also reads
                # other values, or the version through code not modelled here). The branch
                # the target never takes is the legacy one; when that is unknown, neither
                # is rewritten (a rewrite would turn the legacy branch into a copy of the other).
                target_value = _value_on(node.test, scope, target_versions)
                legacy = when_true if target_value is False else when_false if target_value is True else [*when_true, *when_false]
                guards.append(Guard(node, _header(module, node), "version", legacy=legacy))
            continue
        source, names = values.pop(SOURCE_VERSION)
        on_target = {value for value, _ in values.values()}
        if on_target == {source} == older | {source}:
            continue  # every release agrees: not a migration guard
        if len(on_target) == 1:
            # The branch no release of the target takes serves older TensorFlow: TF 2.1, or
            # only releases before it (``startswith("2.0")`` is False on 2.1 and on the target).
            legacy = when_false if next(iter(on_target)) else when_true
        else:
            legacy = when_true if source else when_false
        guard = Guard(node, _header(module, node), "version", legacy=legacy, test_names=names)
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
        guards.append(guard)
    return guards


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


def _outside_version_flag(test: cst.BaseExpression, scope) -> bool:
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


def _misordered(test: cst.BaseExpression, scope, versions: Sequence[str]) -> Optional[str]:
    """The first of ``versions`` on which ``test`` orders version strings as text against their
    numbers (``tf.__version__ >= "2.2"`` is False on "2.10.0"), when that ordering alone
    splits ``versions``; else None."""
    try:
        meant = {version: _Evaluator(version, numeric_strings=True).value(test, scope) for version in versions}
        if len({bool(value) for value in meant.values()}) != 1:
            return None
        for version in versions:
            if evaluate(test, scope, version)[0] != bool(meant[version]):
                return f"on TensorFlow {version} it is {not meant[version]}, though by release number it is {bool(meant[version])}"
    except (_Undecided, ValueError):
        return None
    return None


def _value_on(test: cst.BaseExpression, scope, versions: Sequence[str]) -> Optional[bool]:
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


def _removable(statements: Sequence[cst.CSTNode], scope) -> bool:
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


def _ends_in_exit(block) -> bool:
    """Whether a block always leaves by ``return``/``raise``/``continue``/``break`` at its end."""
    statements = block.body if isinstance(block, cst.IndentedBlock) else [block]
    last = statements[-1] if statements else None
    smalls = last.body if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else []
    return bool(smalls) and isinstance(smalls[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break))


def _following(analysis, node: cst.CSTNode) -> List[cst.CSTNode]:
    """The statements after ``node`` in its block."""
    site = analysis.site(node)
    parent = site.path[-2] if site is not None and len(site.path) > 1 else None
    body = list(getattr(parent, "body", ())) if isinstance(parent, (cst.IndentedBlock, cst.Module)) else []
    for index, statement in enumerate(body):
        if statement is node:
            return body[index + 1 :]
    return []


# -- what guards do to findings ---------------------------------------------------------------


def confine(findings: Sequence, guards: Sequence[Guard]) -> List:
    """Findings with none rewriting a legacy branch: such a fix becomes a note naming the guard.

    Findings inside a branch that a collapse removes are dropped with it.
    """
    if not guards:
        return list(findings)
    from migrate_tpu.codemod.analysis import iter_tree
    from migrate_tpu.codemod.rule import Safety

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


def collapse(guard: Guard, alone: bool, elif_: bool = False) -> Callable[[cst.CSTNode], object]:
    """The rewrite that keeps only the branch ``guard.value`` takes.

    ``alone``: the statement is the only one of its block (removing it leaves
    ``pass``); ``elif_``: the guard is an ``elif`` (its branch becomes the ``else``).
    """
    keep_true = bool(guard.value)

    def rewrite(updated):
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


def _statements(block) -> List[cst.BaseStatement]:
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    # ``if test: a; b`` keeps its small statements on one line.
    smalls = list(block.body)
    smalls[-1] = smalls[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return [cst.SimpleStatementLine(smalls, trailing_whitespace=block.trailing_whitespace)]
