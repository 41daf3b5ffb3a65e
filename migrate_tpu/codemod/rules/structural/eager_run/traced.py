"""Which code already runs under ``tf.function``, and where eager ``run``'s error is caught
(part of TPU301): a ``run`` there needs no fix, or only a note.

``traced_functions``: the functions decorated with ``tf.function`` (or a wrapper of it), passed
to ``tf.function(...)`` (and not also called directly outside traced code), overriding a
method a base class runs traced, or called only from such code, and the lambdas passed to
``tf.function(...)``; and those that may be (with why). ``catching_handler``: the ``except`` of a
``try`` around the ``run`` that catches the ``NotImplementedError`` eager TPU ``run`` raises.
"""

from __future__ import annotations

from typing import Container, Dict, List, Optional, Sequence, Set, Tuple, cast

import libcst as cst

from migrate_tpu.codemod.analysis.tracing import NEUTRAL, TRACED, UNKNOWN, Decorators, class_tracing, traced_argument
from migrate_tpu.codemod.analysis.walk import Analysis, Scope
from migrate_tpu.codemod.rules.structural.eager_run.callables import label_of

# A call of ``tf.function`` (or of a wrapper of it) and the scope it is in.
Wrapper = Tuple[cst.Call, Scope]


def wrapped_names(wrappers: Sequence[Wrapper]) -> Tuple[Set[str], Set[str], Set[int]]:
    """What is passed to ``tf.function(...)`` (or a wrapper) anywhere in the file, in any of
    its forms (``tracing.traced_argument``): names, ``self.`` methods, and the lambdas
    themselves (``tf.function(lambda: strategy.run(...))``: the lambda's body runs traced)."""
    names, methods, lambdas = set(), set(), set()
    for call, scope in wrappers:
        value = traced_argument(call, scope)
        if isinstance(value, cst.Name):
            names.add(value.value)
        elif isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
            methods.add(value.attr.value)
        elif isinstance(value, cst.Lambda):
            lambdas.add(id(value))
    return names, methods, lambdas


def traced_functions(analysis: Analysis, decorators: Decorators, wrappers: Sequence[Wrapper]) -> Tuple[Set[int], Dict[int, str]]:
    """Functions (and lambdas) that run traced, and those that may (with the reason, for the note)."""
    graph, maybe, called_as_it_is = _traced_where_defined(analysis, decorators, wrappers)
    _add_called_from_traced(analysis, graph, maybe)
    # A def also called as it is outside traced code: its ``run`` is eager there (a note, no fix).
    for function in called_as_it_is:
        if id(function) not in graph and id(function) not in maybe:
            name = function.name.value
            maybe[id(function)] = f"`{name}` is passed to `tf.function`, but also called as it is (`{name}(...)`) outside any `tf.function`"
    return graph, maybe


def _traced_where_defined(
    analysis: Analysis, decorators: Decorators, wrappers: Sequence[Wrapper]
) -> Tuple[Set[int], Dict[int, str], List[cst.FunctionDef]]:
    """What runs traced by its definition (decorated, passed to ``tf.function``, overriding a method
    a base class traces; and the lambdas passed to it), what may (with why), and the defs passed
    to ``tf.function`` that the code also calls as they are (traced only if every such call is)."""
    names, methods, lambdas = wrapped_names(wrappers)
    graph: Set[int] = set(lambdas)
    maybe: Dict[int, str] = {}
    called_as_it_is: List[cst.FunctionDef] = []
    # A def passed to ``tf.function`` that the code also calls by its name runs traced through
    # the ``tf.function`` and as it is through the direct call. It counts as traced only when
    # every direct call is in traced code (decided with the helpers, ``_add_called_from_traced``,
    # whose callers are read the same way). With a direct call outside, its ``run`` is eager
    # there: a note, no fix. The author meant the def to be traced, and calling it as it is too
    # is often on purpose (a test of the eager path beside the traced one, a debugging switch):
    # wrapping its step would change that path, and make a new ``tf.function`` on every such call.
    # Only plain functions: a method passed as ``self.m`` stays traced whatever calls ``.m(...)``,
    # since calls are known by their last name alone (``model.train(...)`` is not ``self.train``).
    # And only where the name is bound by nothing but the def: after ``step = tf.function(step)``
    # (models' ``model_training_utils``, NCF, XLNet), ``step(...)`` calls the ``tf.function``.
    for function, own_scope in analysis.functions:
        outer = own_scope.parent
        in_class = outer is not None and outer.kind == "class"
        kind = decorators.function_kind(function, outer)
        inherited: Tuple[Dict[str, str], Dict[str, str]] = ({}, {})
        if in_class and kind != UNKNOWN:
            # A method overriding one that a base class runs under tf.function is traced there
            # (``in_class``: ``outer`` is a class's scope, its node the ``ClassDef``).
            inherited = class_tracing(cast(cst.ClassDef, cast(Scope, outer).node), analysis)
        wrapped = function.name.value in (methods if in_class else names)
        if wrapped and kind == NEUTRAL and not in_class and _called_as_it_is(function, own_scope, analysis):
            wrapped = False  # traced only if every such call is (``_add_called_from_traced``)
            called_as_it_is.append(function)
        if kind == TRACED or wrapped or function.name.value in inherited[0]:
            graph.add(id(function))
        elif function.name.value in inherited[1]:
            why = inherited[1][function.name.value]
            maybe[id(function)] = f"`{function.name.value}` overrides a method that may run under `tf.function` ({why})"
        elif kind == UNKNOWN:
            # A def's own scope always has one around it: ``outer`` is never None here.
            unknown = next(d for d in function.decorators if decorators.kind(d.decorator, cast(Scope, outer)) == UNKNOWN)
            code = analysis.module.code_for_node(unknown.decorator).strip()
            maybe[id(function)] = f"`{function.name.value}` is decorated with `@{label_of(code)}`, which may wrap it in `tf.function`"
    return graph, maybe, called_as_it_is


def _add_called_from_traced(analysis: Analysis, graph: Set[int], maybe: Dict[int, str]) -> None:
    """Adds to ``graph`` each helper called only from traced code, which is traced too (to
    ``maybe``, only possibly, if a caller only may be), until no more is found."""
    changed = True
    while changed:
        changed = False
        for function, own_scope in analysis.functions:
            if id(function) in graph or id(function) in maybe:
                continue
            outer = own_scope.parent
            key = ("." if outer is not None and outer.kind == "class" else "") + function.name.value
            callers = analysis.calls_by_name.get(key, [])
            if not callers:
                continue
            if all(enclosing(scope, graph) is not None for _, scope in callers):
                graph.add(id(function))
                changed = True
            elif all(enclosing(scope, graph) is not None or enclosing(scope, maybe) is not None for _, scope in callers):
                maybe[id(function)] = f"`{function.name.value}` is called only from code that may be traced"
                changed = True


def _called_as_it_is(function: cst.FunctionDef, own_scope: Scope, analysis: Analysis) -> bool:
    """Whether the file calls ``name(...)`` and ``name`` is bound only by ``def``s where
    ``function`` is defined (a call then reaches the def itself, not a ``tf.function`` the
    name was given)."""
    name = function.name.value
    if not analysis.calls_by_name.get(name) or own_scope.parent is None:
        return False
    return all(binding.kind == "def" for binding in own_scope.parent.bindings.get(name, ()))


def enclosing(scope: Optional[Scope], functions: Container[int]) -> Optional[int]:
    """The id of the innermost function (or lambda) around ``scope`` that is in ``functions``."""
    while scope is not None:
        if scope.kind in ("function", "lambda") and id(scope.node) in functions:
            return id(scope.node)
        scope = scope.parent
    return None


# What catches the NotImplementedError of an eager TPU ``run`` (and its base classes).
_CATCHES_NOT_IMPLEMENTED = frozenset({"NotImplementedError", "RuntimeError", "Exception", "BaseException"})


def catching_handler(ancestors: Sequence[cst.CSTNode]) -> Optional[str]:
    """``except NotImplementedError`` (or a base, or a bare ``except``) of a ``try`` whose body holds the current node."""
    for index in range(len(ancestors) - 2, -1, -1):
        node = ancestors[index]
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if isinstance(node, cst.Try) and ancestors[index + 1] is node.body:
            for handler in node.handlers:
                if handler.type is None:
                    return "except:"
                types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
                for item in types:
                    value = item.value if isinstance(item, cst.Element) else item
                    if isinstance(value, cst.Name) and value.value in _CATCHES_NOT_IMPLEMENTED:
                        return f"except {value.value}"
    return None


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def in_comprehension(ancestors: Sequence[cst.CSTNode]) -> bool:
    """Whether the current node sits in a comprehension, within its function."""
    for node in reversed(ancestors[:-1]):
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(node, _COMPREHENSIONS):
            return True
    return False
