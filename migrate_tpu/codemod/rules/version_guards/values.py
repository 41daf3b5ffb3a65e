"""What a version test is worth on each TensorFlow release (``evaluate``), whether an
expression reads the version at all (``reads_version``), and the names of a module that read
it, for its importers (``module_version_summary``). See the package's docstring.
"""

from __future__ import annotations

import operator
import re
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union, cast

import libcst as cst

from migrate_tpu.codemod.analysis.tree import iter_tree
from migrate_tpu.codemod.analysis.walk import Analysis, Binding, ProjectFacts, Scope
from migrate_tpu.codemod.analysis.names import canonical, lookup, qualified_name

if TYPE_CHECKING:  # annotations only
    from _typeshed import SupportsGetItem

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


class Undecided(Exception):
    """The expression is not a pure function of the TensorFlow version."""


class _Version:
    """A parsed version that compares like the library it stands for (release strings only)."""

    def __init__(self, kind: str, text: object) -> None:
        if not isinstance(text, str):
            raise Undecided
        self.kind = kind
        if kind == "loose":
            # The sort key: a list here, a tuple for the other kinds; compared only with a key of its own kind.
            self.key: Sequence[object] = [int(p) if p.isdigit() else p for p in re.split(r"(\d+|[a-z]+|\.)", text) if p and p != "."]
            self.parts = tuple(self.key)
        elif kind == "strict":
            match = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
            if match is None:
                raise Undecided
            self.parts = tuple(int(p or 0) for p in match.groups())
            self.key = self.parts
        else:  # packaging: a release, perhaps a pre-release ("2.2.0rc0"); dev, post and local parts are not modelled
            match = re.fullmatch(r"v?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|rc|c|alpha|beta|pre|preview)[-_.]?(\d*))?", text.strip().lower())
            if match is None:
                raise Undecided
            self.parts = tuple(int(p) for p in match.group(1).split("."))
            key = list(self.parts)
            while len(key) > 1 and key[-1] == 0:
                key.pop()
            # A pre-release sorts before its release: a < b < rc (c, pre and preview are rc).
            phase = {"alpha": "a", "beta": "b", "c": "rc", "pre": "rc", "preview": "rc"}.get(match.group(2), match.group(2))
            stage = (1, "", 0) if phase is None else (0, phase, int(match.group(3) or 0))
            self.key = (tuple(key), stage)

    def _other(self, other: object) -> Any:  # the other's sort key, of the type of ``self.key``
        if isinstance(other, _Version) and other.kind == self.kind:
            return other.key
        if isinstance(other, str) and self.kind in ("loose", "strict"):
            return _Version(self.kind, other).key
        raise Undecided

    def __lt__(self, other: object) -> bool:
        return self.key < self._other(other)

    def __le__(self, other: object) -> bool:
        return self.key <= self._other(other)

    def __gt__(self, other: object) -> bool:
        return self.key > self._other(other)

    def __ge__(self, other: object) -> bool:
        return self.key >= self._other(other)

    def __eq__(self, other: object) -> bool:
        return self.key == self._other(other)

    def __ne__(self, other: object) -> bool:
        return self.key != self._other(other)

    __hash__ = None  # type: ignore[assignment]

    def attribute(self, name: str) -> object:
        if self.kind == "loose" and name == "version":
            return list(self.key)
        if self.kind == "packaging" and name in ("release", "major", "minor", "micro"):
            parts = self.parts + (0, 0)
            return {"release": self.parts, "major": parts[0], "minor": parts[1], "micro": parts[2]}[name]
        raise Undecided


class Evaluator:
    """Evaluates an expression for one TensorFlow version, or raises :class:`Undecided`."""

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

    def value(self, expr: cst.CSTNode, scope: Scope, depth: int = 0) -> object:
        if depth > 20:
            raise Undecided
        try:
            return self._value(expr, scope, depth + 1)
        except (TypeError, ValueError, IndexError, AttributeError, KeyError):
            raise Undecided

    def _value(self, expr: cst.CSTNode, scope: Scope, depth: int) -> object:
        if isinstance(expr, cst.SimpleString):
            return expr.evaluated_value
        if isinstance(expr, (cst.Integer, cst.Float)):
            return expr.evaluated_value
        if isinstance(expr, (cst.Tuple, cst.List)):
            items = [self.value(e.value, scope, depth) for e in expr.elements if not isinstance(e, cst.StarredElement)]
            if len(items) != len(expr.elements):
                raise Undecided
            return tuple(items) if isinstance(expr, cst.Tuple) else items
        if isinstance(expr, cst.Name) and expr.value in self.env:
            return self.env[expr.value]
        if isinstance(expr, (cst.GeneratorExp, cst.ListComp)):
            return self._comprehension(expr, scope, depth)
        if isinstance(expr, (cst.Name, cst.Attribute)):
            return self._named(expr, scope, depth)
        if isinstance(expr, cst.Comparison):
            return self._comparison(expr, scope, depth)
        if isinstance(expr, cst.BooleanOperation):
            left = self.value(expr.left, scope, depth)
            right = self.value(expr.right, scope, depth)
            return (left and right) if isinstance(expr.operator, cst.And) else (left or right)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return not self.value(expr.expression, scope, depth)
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
            return self._subscript(expr, scope, depth)
        if isinstance(expr, cst.Call):
            return self._call(expr, scope, depth)
        raise Undecided

    def _named(self, expr: Union[cst.Name, cst.Attribute], scope: Scope, depth: int) -> object:
        """A name or an attribute: the TensorFlow version (or a value imported from a module that
        reads it), a constant, what a name is bound to, a class attribute, or a version's part."""
        name = qualified_name(expr, scope)
        if name is not None and canonical(name) in _VERSION_NAMES:
            self.saw_version = True
            return self.version
        imported = _imported_values(name, scope)
        if imported is not None:
            if imported is _UNKNOWN or self.version not in imported:
                raise Undecided
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
        raise Undecided

    def _comparison(self, expr: cst.Comparison, scope: Scope, depth: int) -> bool:
        """A comparison, chained as Python chains it; version strings ordered by their numbers
        where ``numeric_strings`` says so."""
        left = self.value(expr.left, scope, depth)
        result = True
        for target in expr.comparisons:
            right = self.value(target.comparator, scope, depth)
            compare = _COMPARISONS.get(type(target.operator))
            if compare is None:
                raise Undecided
            if self.numeric_strings and isinstance(target.operator, _ORDERINGS):
                left, right = _numbers(left), _numbers(right)
            result = result and bool(compare(left, right))
            left = right
        return result

    def _subscript(self, expr: cst.Subscript, scope: Scope, depth: int) -> object:
        """An item or a slice of a value (``tf.__version__.split(".")[0]``, ``[:2]``)."""
        base = cast("SupportsGetItem[Any, object]", self.value(expr.value, scope, depth))  # not subscriptable: TypeError, Undecided
        index = expr.slice[0].slice
        if isinstance(index, cst.Index):
            return base[self.value(index.value, scope, depth)]
        if isinstance(index, cst.Slice):
            bounds = [None if part is None else self.value(part, scope, depth) for part in (index.lower, index.upper, index.step)]
            return base[slice(*bounds)]
        raise Undecided

    def _comprehension(self, expr: Union[cst.ListComp, cst.GeneratorExp], scope: Scope, depth: int) -> List[object]:
        """``[int(p) for p in tf.__version__.split(".")]`` (one ``for``, a plain name, no ``if``)."""
        comp = expr.for_in
        if comp.inner_for_in is not None or comp.ifs or comp.asynchronous is not None or not isinstance(comp.target, cst.Name):
            raise Undecided
        items = cast("Iterable[object]", self.value(comp.iter, scope, depth))  # not iterable: TypeError, Undecided
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

    def _bound(self, name: cst.Name, scope: Scope, depth: int) -> object:
        """A name bound once, to a pure expression (``TF_VERSION = LooseVersion(tf.__version__)``),
        or unpacked from one (``major, minor = map(int, tf.__version__.split(".")[:2])``)."""
        found = lookup(scope, name.value)
        if found is None:
            raise Undecided
        bindings = found[1]
        if len(bindings) != 1:
            raise Undecided
        binding = bindings[0]
        unpacked = _unpacked_from(binding, name.value)
        if unpacked is not None:
            value, index, count = unpacked
            items = list(cast("Iterable[object]", self.value(value, binding.scope, depth)))  # not iterable: TypeError, Undecided
            if len(items) != count:
                raise Undecided
            return items[index]
        if binding.kind != "assign" or binding.value is None:
            raise Undecided
        return self.value(binding.value, binding.scope, depth)

    def _call(self, call: cst.Call, scope: Scope, depth: int) -> object:
        if any(arg.star or arg.keyword is not None for arg in call.args):
            raise Undecided
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
                    # Items of another kind raise TypeError or ValueError: Undecided.
                    return [int(item) if convert == "int" else str(item) for item in cast("Iterable[Any]", self.value(call.args[1].value, scope, depth))]
            if builtin in ("int", "float", "str", "tuple", "list", "len") and len(call.args) == 1:
                value = self.value(call.args[0].value, scope, depth)
                conversions: Dict[str, Callable[[Any], object]] = {"int": int, "float": float, "str": str, "tuple": tuple, "list": list, "len": len}
                return conversions[builtin](value)
            raise Undecided
        args = [self.value(arg.value, scope, depth) for arg in call.args]
        if isinstance(func, cst.Attribute) and func.attr.value in _STRING_METHODS:
            receiver = self.value(func.value, scope, depth)
            # ``startswith(("2.0", "2.1"))`` takes a tuple of prefixes.
            plain = lambda a: isinstance(a, (str, int)) or (isinstance(a, tuple) and all(isinstance(p, str) for p in a))
            if isinstance(receiver, str) and all(plain(a) for a in args):
                return getattr(receiver, func.attr.value)(*args)
        raise Undecided


_UNSET = object()
_ORDERINGS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


def _numbers(value: object) -> object:
    """``"2.10.0"`` -> ``(2, 10, 0)``; anything else as it is."""
    if isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)*", value):
        return tuple(int(part) for part in value.split("."))
    return value


def _unpacked_from(binding: Binding, name: str) -> Optional[Tuple[cst.BaseExpression, int, int]]:
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


def _class_attribute(expr: cst.CSTNode, scope: Scope) -> Optional[Tuple[cst.BaseExpression, Scope]]:
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
        scopes = cast("Optional[Dict[int, Scope]]", scope.module().memo.get("scopes_by_node"))  # ``guards.py`` keeps it there
        klass = scopes.get(id(binding.node)) if scopes else None
    if klass is None or attribute in klass.attributes:
        return None
    bindings = klass.bindings.get(attribute, [])
    if len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None:
        return None
    return bindings[0].value, bindings[0].scope


def reads_version(expr: cst.CSTNode, scope: Scope, depth: int = 0, memo: Optional[Dict[int, bool]] = None) -> bool:
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


def _imported_values(name: Optional[str], scope: Scope) -> Optional[Dict[str, object]]:
    """For a name imported from another module of the tree (``from .compat import IS_TF2``):
    its value on each release, ``_UNKNOWN`` when it reads the version otherwise, None when
    it does not read the version (or the tree is not in view)."""
    if name is None or name.startswith("tensorflow"):
        return None
    project = cast("Optional[Tuple[Optional[ProjectFacts], str]]", scope.module().memo.get("project"))  # (lookup, path), kept there
    if not project:
        return None
    finder = getattr(project[0], "version_values", None)
    if finder is None:
        return None
    found = finder(name, project[1])
    if found is None:
        return None
    return _UNKNOWN if found == "unknown" else found


def module_version_summary(analysis: Analysis) -> Dict[str, object]:
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
            found[name] = {version: Evaluator(version).value(reference, module) for version in ALL_VERSIONS}
        except Undecided:
            found[name] = "unknown"
    return found


def evaluate(test: cst.BaseExpression, scope: Scope, version: str, settled: bool = True) -> Tuple[bool, List[str]]:
    """The truth of ``test`` on TensorFlow ``version`` and the parser names it used.

    Raises ``ValueError`` when ``test`` is not a pure function of the version (with ``settled``,
    also when it reads the version through a class attribute, which may be replaced).
    """
    evaluator = Evaluator(version)
    try:
        result = evaluator.value(test, scope)
    except Undecided:
        raise ValueError("not a version test") from None
    if not evaluator.saw_version:
        raise ValueError("the test does not read the TensorFlow version")
    if settled and evaluator.overridable:
        raise ValueError("the test reads the version through a class attribute")
    return bool(result), evaluator.names


