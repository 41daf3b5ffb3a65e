"""Which expressions are ``tf.distribute`` strategies, and may they be TPU ones?

A strategy is known by where it comes from: a strategy constructor or
``tf.distribute.get_strategy()``, a name or ``self.`` attribute assigned from
one, a function (of this module or of another module of the same tree) that
returns one, or a parameter named like ``strategy``/``distribution``.

The answer is the set of kinds it may be: ``{"tpu"}``, ``{"other"}`` (Mirrored,
OneDevice, ... where eager ``run`` of a plain function is legal), both when it
cannot be told, or None when the expression is not a strategy at all (so that
``functools.reduce``, ``Dataset.reduce`` and ``subprocess.run`` are never taken
for one).
"""

from __future__ import annotations

import re
from typing import Dict, FrozenSet, List, Optional, cast

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Analysis, Scope
from migrate_tpu.codemod.analysis.names import lookup, qualified_name

TPU = "tpu"
OTHER = "other"
ANY = frozenset({TPU, OTHER})
Kinds = Optional[FrozenSet[str]]

_TPU_CLASSES = (
    "tensorflow.distribute.TPUStrategy",
    "tensorflow.distribute.experimental.TPUStrategy",
    "tensorflow.compat.v1.distribute.experimental.TPUStrategy",
    "tensorflow.compat.v1.distribute.TPUStrategy",
)
_OTHER_CLASSES = tuple(
    prefix + name
    for prefix in ("tensorflow.distribute.", "tensorflow.compat.v1.distribute.")
    for name in (
        "MirroredStrategy",
        "OneDeviceStrategy",
        "MultiWorkerMirroredStrategy",
        "experimental.MultiWorkerMirroredStrategy",
        "experimental.CentralStorageStrategy",
        "experimental.ParameterServerStrategy",
        "ParameterServerStrategy",
    )
)
CONSTRUCTORS: Dict[str, FrozenSet[str]] = {
    **{name: frozenset({TPU}) for name in _TPU_CLASSES},
    **{name: frozenset({OTHER}) for name in _OTHER_CLASSES},
}
# Calls that return whatever strategy is in scope.
_CURRENT_STRATEGY = ("tensorflow.distribute.get_strategy", "tensorflow.compat.v1.distribute.get_strategy")

STRATEGY_LIKE = re.compile(r"^_*(strategy|strat|distribution|distribute|dist_strategy|\w+_strategy)$", re.IGNORECASE)


def _union(*kinds: Kinds) -> Kinds:
    present = [k for k in kinds if k is not None]
    if not present:
        return None
    return frozenset().union(*present)


class StrategyFacts:
    """Answers ``kinds(expr, scope)`` for one analysed module, with memoization."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self._def_kinds: Dict[int, Kinds] = {}
        self._busy: set = set()

    def kinds(self, expr: cst.CSTNode, scope: Scope, depth: int = 0) -> Kinds:
        if depth > 12:
            return None
        if isinstance(expr, cst.Call):
            return self._call_kinds(expr, scope, depth)
        if isinstance(expr, cst.Name):
            return self._name_kinds(expr.value, scope, depth)
        if isinstance(expr, cst.Attribute):
            return self._attribute_kinds(expr, scope, depth)
        if isinstance(expr, cst.IfExp):
            return _union(self.kinds(expr.body, scope, depth + 1), self.kinds(expr.orelse, scope, depth + 1))
        if isinstance(expr, cst.BooleanOperation):
            return _union(self.kinds(expr.left, scope, depth + 1), self.kinds(expr.right, scope, depth + 1))
        return None

    def may_be_tpu(self, expr: cst.CSTNode, scope: Scope) -> bool:
        found = self.kinds(expr, scope)
        return found is not None and TPU in found

    # -- cases --------------------------------------------------------------------

    def _call_kinds(self, call: cst.Call, scope: Scope, depth: int) -> Kinds:
        name = qualified_name(call.func, scope)
        if name in CONSTRUCTORS:
            return CONSTRUCTORS[name]
        if name in _CURRENT_STRATEGY:
            return ANY
        if isinstance(call.func, cst.Name):
            found = lookup(scope, call.func.value)
            if found is not None:
                defs = cast("List[cst.FunctionDef]", [b.node for b in found[1] if b.kind == "def"])
                if defs:
                    return _union(*(self.returned_kinds(d, depth) for d in defs))
        if name is not None and self.analysis.lookup is not None:
            return self.analysis.lookup.factory_kinds(name, self.analysis.path)
        return None

    def returned_kinds(self, function: cst.FunctionDef, depth: int = 0) -> Kinds:
        key = id(function)
        if key in self._def_kinds:
            return self._def_kinds[key]
        if key in self._busy:
            return None
        self._busy.add(key)
        own_scope = self.analysis.scopes_by_node.get(key)
        result = None
        if own_scope is not None:
            result = _union(*(self.kinds(value, own_scope, depth + 1) for value in own_scope.returns))
        self._busy.discard(key)
        self._def_kinds[key] = result
        return result

    def _name_kinds(self, name: str, scope: Scope, depth: int) -> Kinds:
        found = lookup(scope, name)
        named_like = ANY if STRATEGY_LIKE.match(name) else None
        if found is None:
            return named_like
        # The answer depends only on the scope that binds the name: compute it once.
        key = ("strategy", name)
        memo = found[0].memo
        if key in memo:
            return cast("Kinds", memo[key])
        memo[key] = named_like  # guards cycles
        result = self._bindings_kinds(found[1], named_like, depth)
        memo[key] = result
        return result

    def _bindings_kinds(self, bindings, named_like: Kinds, depth: int) -> Kinds:
        found = (None, bindings)
        results = []
        for binding in found[1]:
            if binding.kind == "assign" and binding.value is not None:
                results.append(self.kinds(binding.value, binding.scope, depth + 1))
            elif binding.kind == "param":
                annotation = binding.node.annotation if isinstance(binding.node, cst.Param) else None
                typed = None
                if annotation is not None:
                    typed = CONSTRUCTORS.get(qualified_name(annotation.annotation, binding.scope) or "")
                results.append(typed or named_like)
            elif binding.kind == "import" and self.analysis.lookup is not None:
                results.append(self.analysis.lookup.factory_kinds(binding.target, self.analysis.path, call=False))
            elif binding.kind == "other":
                results.append(named_like)
        return _union(*results)

    def _attribute_kinds(self, expr: cst.Attribute, scope: Scope, depth: int) -> Kinds:
        attribute = expr.attr.value
        named_like = ANY if STRATEGY_LIKE.match(attribute) else None
        receiver = expr.value
        if isinstance(receiver, cst.Name):
            owner = scope.self_class(receiver.value)
            if owner is not None:
                values = owner.attributes.get(attribute)
                if values:
                    return _union(*(self.kinds(value, where, depth + 1) for value, where in values))
                return named_like
            name = qualified_name(expr, scope)
            if name is not None and self.analysis.lookup is not None:
                found = self.analysis.lookup.factory_kinds(name, self.analysis.path, call=False)
                if found is not None:
                    return found
        return named_like


def module_strategy_summary(analysis: Analysis) -> Dict[str, Dict[str, FrozenSet[str]]]:
    """What a module offers its importers: functions returning strategies, strategy globals."""
    facts = StrategyFacts(analysis)
    factories: Dict[str, FrozenSet[str]] = {}
    values: Dict[str, FrozenSet[str]] = {}
    module = analysis.module_scope
    for name, bindings in module.bindings.items():
        if any(b.kind == "def" for b in bindings):
            kinds = _union(*(facts.returned_kinds(cast(cst.FunctionDef, b.node)) for b in bindings if b.kind == "def"))
            if kinds:
                factories[name] = kinds
        elif any(b.kind == "assign" for b in bindings):
            kinds = _union(*(facts.kinds(b.value, module) for b in bindings if b.kind == "assign" and b.value is not None))
            if kinds:
                values[name] = kinds
    return {"factories": factories, "values": values}


def surely_strategy(expr: cst.CSTNode, scope: Scope, analysis: Analysis, depth: int = 0) -> bool:
    """Whether ``expr`` can only be a ``tf.distribute`` strategy (stricter than ``kinds``, which
    drops what is not one): a strategy constructor or ``get_strategy()``, a call of a function
    of this file every return of which is one, a name or ``self.`` attribute every value of
    which is one. A parameter or anything not in view is not."""
    if depth > 8:
        return False
    if isinstance(expr, cst.Call):
        name = qualified_name(expr.func, scope)
        if name in CONSTRUCTORS or name in _CURRENT_STRATEGY:
            return True
        found = lookup(scope, expr.func.value) if isinstance(expr.func, cst.Name) else None
        if found is None or not all(b.kind == "def" for b in found[1]):
            return False
        for binding in found[1]:
            own = analysis.scopes_by_node.get(id(binding.node))
            if own is None or not own.returns or not all(surely_strategy(v, own, analysis, depth + 1) for v in own.returns):
                return False
        return True
    if isinstance(expr, cst.Name):
        found = lookup(scope, expr.value)
        return found is not None and all(
            b.kind == "assign" and b.value is not None and surely_strategy(b.value, b.scope, analysis, depth + 1) for b in found[1]
        )
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        owner = scope.self_class(expr.value.value)
        if owner is not None:
            values = owner.attributes.get(expr.attr.value)
            return bool(values and all(surely_strategy(value, where, analysis, depth + 1) for value, where in values))
    return False
