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

from typing import Dict, Optional

import libcst as cst

from migrate_tpu.codemod.analysis import Analysis, Scope, iter_tree
from migrate_tpu.codemod.names import lookup, qualified_name

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
                return self.def_kind(defs[0])
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
                    nested_scope = self.analysis.scopes_by_node.get(id(binding.node))
                    outer = nested_scope.parent if nested_scope is not None else scope
                    if any(self.kind(d.decorator, outer) == TRACED for d in binding.node.decorators):
                        return True
                    if self.def_kind(binding.node, depth + 1) == TRACED:  # a decorator factory
                        return True
                elif binding.kind == "assign" and isinstance(binding.value, cst.Call) and is_tracing(binding.value.func, binding.scope):
                    return True
        return False


def _last(node: cst.CSTNode) -> str:
    return node.attr.value if isinstance(node, cst.Attribute) else node.value
