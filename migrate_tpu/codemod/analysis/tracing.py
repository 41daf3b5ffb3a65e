"""Which decorators trace a function: ``tf.function`` and the libraries' wrappers of it.

A decorator is one of three kinds:

* ``TRACED``: ``tf.function`` in any spelling, a known library wrapper of it
  (TF-Agents' ``common.function``, the ``def_function.function`` Keras uses
  internally), or a decorator defined in the same file that returns
  ``tf.function(...)`` or a ``tf.function``-decorated wrapper (also through
  ``functools.wraps`` and decorator factories);
* ``NEUTRAL``: known not to trace (``staticmethod``, ``functools.wraps``,
  ``gin.configurable``, ..., or a decorator of the same file that never
  mentions ``tf.function``);
* ``UNKNOWN``: anything else. A function under it is possibly traced: rules
  must not assume it runs eagerly.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple, Union, cast

import libcst as cst

from migrate_tpu.codemod.analysis.tree import iter_tree
from migrate_tpu.codemod.analysis.walk import Analysis, Scope
from migrate_tpu.codemod.analysis.names import lookup, qualified_name

TRACED = "traced"
NEUTRAL = "neutral"
UNKNOWN = "unknown"

TF_FUNCTION = frozenset({"tensorflow.function", "tensorflow.compat.v1.function"})
# Wrappers of tf.function in libraries (``@common.function``, ``@common.function(autograph=True)``).
# tf_agents.utils.common.function: "Wrapper for tf.function with TF Agents-specific
# customizations" (TF-Agents API docs). def_function.function is tf.function itself
# (checked on TF 2.4.1: ``def_function.function is tf.function``); Keras uses that spelling.
_LIBRARY_WRAPPERS = frozenset(
    {
        "tf_agents.utils.common.function",
        "tensorflow.python.eager.def_function.function",
    }
)
TRACING = TF_FUNCTION | _LIBRARY_WRAPPERS
_NEUTRAL = frozenset(
    {
        "staticmethod",
        "classmethod",
        "property",
        "functools.wraps",
        "functools.lru_cache",
        "functools.cache",
        "functools.cached_property",
        "functools.singledispatch",
        "abc.abstractmethod",
        "typing.overload",
        "contextlib.contextmanager",
        "gin.configurable",
        # Test parametrizers: they only call the test method with each set of arguments.
        "absl.testing.parameterized.parameters",
        "absl.testing.parameterized.named_parameters",
        "absl.testing.parameterized.product",
        "pytest.mark.parametrize",
        "gin.register",
        "tensorflow.autograph.experimental.do_not_convert",
    }
)
_BUILTIN_NEUTRAL = frozenset({"staticmethod", "classmethod", "property"})


# Calls that only TF1 graph code makes: a file that opens a session or turns eager
# execution off runs `strategy.run` while building a graph, not eagerly.
GRAPH_MODE_CALLS = frozenset(
    {
        "Session",
        "InteractiveSession",
        "MonitoredSession",
        "MonitoredTrainingSession",
        "disable_eager_execution",
        "disable_v2_behavior",
        "get_session",  # the Keras backend's session (``tf.compat.v1.keras.backend.get_session()``, ``K.get_session()``)
    }
)
_KERAS_PACKAGES = ("tensorflow.", "keras.", "tf_keras.")


def builds_tf1_graph(call: cst.Call, scope: Scope) -> bool:
    """``tf.compat.v1.Session()``, ``tf.disable_v2_behavior()``, ``K.get_session()``, ... through any alias."""
    name = qualified_name(call.func, scope) or ""
    module, _, last = name.rpartition(".")
    if last == "get_session":
        # The Keras backend's, in TensorFlow or in a standalone Keras (``keras.backend``, ``tf_keras``'s own).
        return name.startswith(_KERAS_PACKAGES) and module.rpartition(".")[2] == "backend"
    return name.startswith("tensorflow.") and last in GRAPH_MODE_CALLS


def is_tracing(expr: cst.BaseExpression, scope: Scope) -> bool:
    """``tf.function``, a library wrapper of it, or a call of either (``tf.function(...)``)."""
    if isinstance(expr, cst.Call):
        expr = expr.func
    return qualified_name(expr, scope) in TRACING


def _function_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The first positional argument of ``call``, or its ``func=`` (``tf.function``'s name
    for the function it traces)."""
    for arg in call.args:
        if arg.star:
            return None  # ``tf.function(*args)``: which one is the function is not told here
        if arg.keyword is None:
            return arg.value
    return next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == "func"), None)


def traced_argument(call: cst.Call, scope: Scope) -> Optional[cst.BaseExpression]:
    """The callable a call of ``tf.function`` (or a wrapper of it) traces: ``f`` of
    ``tf.function(f)``, ``tf.function(f, autograph=False)``, ``tf.function(func=f)`` and of
    the decorator-factory form ``tf.function(experimental_compile=True)(f)``. None for a call
    that only makes a decorator (``tf.function(autograph=False)``), for a call of what
    ``tf.function(f)`` made (``tf.function(f)(x)``: ``x`` is an argument, not a function),
    and for any other call."""
    func = call.func
    if isinstance(func, cst.Call):
        if not is_tracing(func.func, scope) or _function_argument(func) is not None:
            return None  # not a factory of tf.function, or ``tf.function(f)(x)``
        return next((arg.value for arg in call.args if arg.keyword is None and not arg.star), None)
    if not is_tracing(func, scope):
        return None
    return _function_argument(call)


class Decorators:
    """Classifies decorators for one analysed module, with memoization."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self._defs: Dict[int, str] = {}

    def kind(self, decorator: cst.BaseExpression, scope: Scope) -> str:
        expr = decorator.func if isinstance(decorator, cst.Call) else decorator
        name = qualified_name(expr, scope)
        if name in TRACING:
            return TRACED
        if name in _NEUTRAL:
            return NEUTRAL
        if isinstance(expr, cst.Name):
            found = lookup(scope, expr.value)
            if found is None:
                return NEUTRAL if expr.value in _BUILTIN_NEUTRAL else UNKNOWN
            defs = [b.node for b in found[1] if b.kind == "def"]
            if len(defs) == 1 and len(found[1]) == 1:
                return self.def_kind(cast(cst.FunctionDef, defs[0]))
        return UNKNOWN

    def function_kind(self, function: cst.FunctionDef, scope: Optional[Scope]) -> str:
        """TRACED if any decorator traces, else UNKNOWN if any may, else NEUTRAL."""
        if scope is None:
            return UNKNOWN if function.decorators else NEUTRAL
        kinds = {self.kind(d.decorator, scope) for d in function.decorators}
        if TRACED in kinds:
            return TRACED
        return UNKNOWN if UNKNOWN in kinds else NEUTRAL

    def def_kind(self, function: cst.FunctionDef, depth: int = 0) -> str:
        """What a decorator defined in this file does to the function it receives."""
        key = id(function)
        if key in self._defs:
            return self._defs[key]
        self._defs[key] = UNKNOWN  # guards recursion
        result = self._def_kind(function, depth)
        self._defs[key] = result
        return result

    def _def_kind(self, function: cst.FunctionDef, depth: int) -> str:
        own = self.analysis.scopes_by_node.get(id(function))
        if own is None or depth > 4:
            return UNKNOWN
        for value in own.returns:
            if self._returns_traced(value, own, depth):
                return TRACED
        # A decorator of this file that never mentions tf.function leaves the function eager.
        for node in iter_tree(function.body):
            if isinstance(node, (cst.Name, cst.Attribute)) and _last(node) in ("function", "defun"):
                return UNKNOWN
        return NEUTRAL

    def _returns_traced(self, value: cst.BaseExpression, scope: Scope, depth: int) -> bool:
        if isinstance(value, cst.Call):
            if is_tracing(value.func, scope):  # tf.function(fn) or tf.function(...)(fn)
                return True
            return False
        if isinstance(value, cst.Name):
            found = lookup(scope, value.value)
            if found is None:
                return False
            for binding in found[1]:
                if binding.kind == "def":
                    function = cast(cst.FunctionDef, binding.node)
                    nested_scope = self.analysis.scopes_by_node.get(id(function))
                    # A function's scope is never the module's: it has a parent.
                    outer = cast(Scope, nested_scope.parent) if nested_scope is not None else scope
                    if any(self.kind(d.decorator, outer) == TRACED for d in function.decorators):
                        return True
                    if self.def_kind(function, depth + 1) == TRACED:  # a decorator factory
                        return True
                elif binding.kind == "assign" and isinstance(binding.value, cst.Call) and is_tracing(binding.value.func, binding.scope):
                    return True
        return False


def _last(node: Union[cst.Name, cst.Attribute]) -> str:
    return node.attr.value if isinstance(node, cst.Attribute) else node.value


# -- methods that a base class runs under tf.function ---------------------------------------
#
# A method overriding one of these is traced when the library calls it, so a `run` in it
# needs nothing. Each entry says where the library does it (read in its source):
# * Keras ``Model.train_step``/``test_step``/``predict_step`` (TF >= 2.2): ``make_train_function``
#   (and ``make_test_function``/``make_predict_function``) wrap the step's caller in
#   ``def_function.function`` unless ``run_eagerly`` (tensorflow/python/keras/engine/training.py, v2.4.1).
# * Orbit ``StandardTrainer.train_step`` / ``StandardEvaluator.eval_step``, and their forerunners in
#   ``official.staging.training.standard_runnable`` (``StandardTrainable``/``StandardEvaluable``):
#   ``train``/``evaluate`` pass ``self.train_step`` to ``tf.function`` (or to a ``tf.while_loop``
#   inside one) unless ``use_tf_function=False`` (orbit/standard_runner.py).
_KERAS_MODELS = (
    "tensorflow.keras.Model",
    "tensorflow.keras.models.Model",
    "tensorflow.python.keras.engine.training.Model",
    "keras.Model",
    "keras.models.Model",
    "tf_keras.Model",
    "tf_keras.models.Model",
)
_KERAS_STEPS = ("train_step", "test_step", "predict_step")
LIBRARY_TRACED_METHODS: Dict[str, Tuple[str, ...]] = {
    **{name: _KERAS_STEPS for name in _KERAS_MODELS},
    "orbit.StandardTrainer": ("train_step",),
    "orbit.standard_runner.StandardTrainer": ("train_step",),
    "orbit.StandardEvaluator": ("eval_step",),
    "orbit.standard_runner.StandardEvaluator": ("eval_step",),
    "official.staging.training.standard_runnable.StandardTrainable": ("train_step",),
    "official.staging.training.standard_runnable.StandardEvaluable": ("eval_step",),
}
# TF-Agents: ``TFAgent.__init__`` wraps ``self._train`` in ``common.function_in_tf1()``, which
# traces only under TF1 (in TF2 it calls the function eagerly: tf_agents/utils/common.py). An
# agent's ``_train`` is traced in TF2 only when the caller wraps ``agent.train`` in
# ``common.function``, as the TF-Agents examples do: it may be traced, the caller is not in view.
LIBRARY_MAYBE_TRACED_METHODS: Dict[str, Tuple[Tuple[str, ...], str]] = {
    name: (("_train",), "TF-Agents runs `_train` under `tf.function` only when the caller wraps `agent.train`")
    for name in ("tf_agents.agents.TFAgent", "tf_agents.agents.tf_agent.TFAgent")
}

MethodTracing = Tuple[Dict[str, str], Dict[str, str]]  # (traced: {method: base}, maybe: {method: why})


def class_tracing(class_def: cst.ClassDef, analysis: Analysis, depth: int = 0) -> MethodTracing:
    """Methods of ``class_def`` that the class or one of its bases (this file, another module
    of the tree, a known library) runs under ``tf.function``, and those it may."""
    memo = analysis.__dict__.setdefault("_class_tracing", {})
    key = id(class_def)
    if key in memo:
        return memo[key]
    memo[key] = ({}, {})  # guards cycles
    traced: Dict[str, str] = {}
    maybe: Dict[str, str] = {}
    own = analysis.scopes_by_node.get(key)
    outer = own.parent if own is not None else None
    for base in class_def.bases if outer is not None and depth < 8 else ():
        if base.keyword is not None:
            continue
        name = qualified_name(base.value, cast(Scope, outer))  # the loop runs only when ``outer`` is a scope
        if name in LIBRARY_TRACED_METHODS:
            for method in LIBRARY_TRACED_METHODS[name]:
                traced.setdefault(method, name)
            continue
        if name in LIBRARY_MAYBE_TRACED_METHODS:
            methods, why = LIBRARY_MAYBE_TRACED_METHODS[name]
            for method in methods:
                maybe.setdefault(method, why)
            continue
        inherited: Optional[MethodTracing] = None
        if isinstance(base.value, cst.Name):
            found = lookup(cast(Scope, outer), base.value.value)
            classes = [b.node for b in found[1] if b.kind == "class"] if found else []
            if found is not None and len(classes) == 1 and len(found[1]) == 1:
                inherited = class_tracing(cast(cst.ClassDef, classes[0]), analysis, depth + 1)
        if inherited is None and name is not None and analysis.lookup is not None:
            inherited = analysis.lookup.class_tracing(name, analysis.path)
        if inherited is not None:
            for method, where in inherited[0].items():
                traced.setdefault(method, where)
            for method, why in inherited[1].items():
                maybe.setdefault(method, why)
    if own is not None:
        for method in _methods_run_traced(class_def, own, analysis):
            traced[method] = class_def.name.value
    memo[key] = (traced, maybe)
    return traced, maybe


def _methods_run_traced(class_def: cst.ClassDef, class_scope: Scope, analysis: Analysis) -> Set[str]:
    """``self.m`` passed to ``tf.function`` (or a wrapper) in a method, directly or through a
    local name (``train_fn = self.train_step; ... tf.function(train_fn)``)."""
    found: Set[str] = set()
    for statement in class_def.body.body if isinstance(class_def.body, cst.IndentedBlock) else ():
        if not isinstance(statement, cst.FunctionDef):
            continue
        scope = analysis.scopes_by_node.get(id(statement))
        if scope is None or not scope.params:
            continue
        me = scope.params[0]
        for node in iter_tree(statement.body):
            if not isinstance(node, cst.Call) or not node.args or not is_tracing(node.func, scope):
                continue
            value = node.args[0].value
            values = [value]
            if isinstance(value, cst.Name):
                # Every ``self.m`` the local name is given (it may also be given the wrapped function).
                # An "assign" binding always has its value.
                values = cast("List[cst.BaseExpression]", [b.value for b in scope.bindings.get(value.value, []) if b.kind == "assign"])
            for value in values:
                if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == me:
                    found.add(value.attr.value)
    return found


def module_class_tracing(analysis: Analysis) -> Dict[str, MethodTracing]:
    """What a module offers its importers: for each of its classes, the methods traced."""
    result = {}
    for name, bindings in analysis.module_scope.bindings.items():
        classes = [b.node for b in bindings if b.kind == "class"]
        if len(classes) == 1 and len(bindings) == 1:
            traced, maybe = class_tracing(cast(cst.ClassDef, classes[0]), analysis)
            if traced or maybe:
                result[name] = (traced, maybe)
    return result
