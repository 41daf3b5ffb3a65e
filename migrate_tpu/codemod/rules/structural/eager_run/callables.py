"""Which callable a ``run`` is given, as far as the file tells (part of TPU301).

``Callables.resolve`` follows the first argument of ``run``: a def of the file, a method
behind ``self.method``, a lambda, the def or lambda a factory of the file returns, a
``tf.function`` already, or something whose body is not in view (with why).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional, Sequence, Set, cast

import libcst as cst

from migrate_tpu.codemod.analysis.names import lookup
from migrate_tpu.codemod.analysis.tracing import TRACED, UNKNOWN, Decorators, is_tracing
from migrate_tpu.codemod.analysis.walk import Analysis, Binding, Scope


@dataclass
class RunCallable:
    """What the first argument of ``run`` turned out to be.

    ``kind``: "def"/"method" (a def of this file), "lambda", "built" (the def or
    lambda a factory of this file returns), "compiled" (already a tf.function),
    or "unknown" with ``why`` saying what could not be seen. ``node``: the def's
    ``FunctionDef`` for "def"/"method" (the casts to it rest on this), the lambda,
    the def or lambda a factory returns; None where it is not in view.
    """

    node: Optional[cst.CSTNode] = None
    kind: str = "unknown"
    why: str = ""
    bindings: Sequence[Binding] = ()


class Step(NamedTuple):
    """The callable an eager ``run`` is given, as TPU301 weighs it."""

    fn: cst.Arg  # the argument of ``run``
    label: str  # its code, as the findings show it
    scope: Scope  # where ``run`` is called
    resolved: RunCallable
    base: str  # the finding's message, before what a fix does


class Callables:
    """What the callables of one file's ``run`` calls are (``resolve``), with its analysis
    and the meaning of its decorators."""

    def __init__(self, analysis: Analysis, decorators: Decorators) -> None:
        self._analysis = analysis
        self._decorators = decorators

    def resolve(self, value: cst.BaseExpression, scope: Scope, depth: int = 0) -> RunCallable:
        """What the callable passed to ``run`` is, as far as this file tells."""
        if isinstance(value, cst.Name):
            found = lookup(scope, value.value)
            if found is None:
                return RunCallable(why=f"`{value.value}` is not defined in this file, so its body is not in view")
            bindings = found[1]
            if any(b.kind == "assign" and isinstance(b.value, cst.Call) and is_tracing(b.value.func, b.scope) for b in bindings):
                return RunCallable(kind="compiled")
            if len(bindings) > 1:
                return RunCallable(why=f"`{value.value}` is bound in several places", bindings=bindings)
            binding = bindings[0]
            if binding.kind == "def":
                return RunCallable(binding.node, "def", bindings=bindings)
            if binding.kind == "import":
                return RunCallable(why=f"`{value.value}` comes from `{binding.target}`, so its body is not in view", bindings=bindings)
            if binding.kind == "param":
                return RunCallable(why=f"`{value.value}` is a parameter, so what it calls depends on the caller", bindings=bindings)
            if binding.kind == "assign" and isinstance(binding.value, cst.Call):
                built = self._built_by(binding.value, binding.scope, depth)
                built.bindings = bindings
                return built
            return RunCallable(why=f"`{value.value}` is not a function defined here", bindings=bindings)
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
            owner = scope.self_class(value.value.value)
            if owner is not None:
                bindings = owner.bindings.get(value.attr.value, [])
                defs = [b.node for b in bindings if b.kind == "def"]
                if len(defs) == 1 and len(bindings) == 1:
                    return RunCallable(defs[0], "method")
            return RunCallable(why=f"what `{label_of(self.code(value))}` holds is not known here")
        if isinstance(value, cst.Call):
            if is_tracing(value.func, scope):
                return RunCallable(kind="compiled")
            return self._built_by(value, scope, depth)
        if isinstance(value, cst.Lambda):
            return RunCallable(value, "lambda")
        return RunCallable(why="the callable is computed here, and what it calls is not followed")

    def _built_by(self, call: cst.Call, scope: Scope, depth: int) -> RunCallable:
        """A callable returned by ``make_step(...)``: the nested def or lambda it returns, if this file has it."""
        factory = self.code(call.func)
        if isinstance(call.func, cst.Name) and depth < 4:
            found = lookup(scope, call.func.value)
            defs = [b.node for b in found[1] if b.kind == "def"] if found else []
            if found is not None and found[1][0].kind == "import":
                return RunCallable(why=f"it is built by `{factory}(...)` from `{found[1][0].target}`, so its body is not in view")
            if len(defs) == 1:
                own = self._analysis.scopes_by_node.get(id(defs[0]))
                returned = [self.resolve(v, own, depth + 1) for v in own.returns] if own is not None else []
                for item in returned:
                    if item.kind == "def" and self._decorators.function_kind(cast(cst.FunctionDef, item.node), own) == TRACED:
                        item.kind = "compiled"  # ``@tf.function def step(...)`` returned by the factory
                if returned and all(r.kind == "compiled" for r in returned):
                    return RunCallable(kind="compiled")
                if len(returned) == 1 and returned[0].kind in ("def", "lambda"):
                    if returned[0].kind == "def" and self._decorators.function_kind(cast(cst.FunctionDef, returned[0].node), own) == UNKNOWN:
                        return RunCallable(why=f"what `{factory}(...)` returns is decorated with a decorator of unknown meaning")
                    return RunCallable(returned[0].node, "built", why=f"`{factory}(...)`")
        return RunCallable(why=f"it is built by `{factory}(...)`, whose result is not followed here")

    def code(self, node: cst.CSTNode) -> str:
        """The source text of ``node``, stripped."""
        return self._analysis.module.code_for_node(node).strip()

    def compiled(self, value: cst.BaseExpression, scope: Scope, graph: Set[int]) -> bool:
        """``fn`` is a ``tf.function`` already (``tf.function(...)``, or a def decorated with one)."""
        resolved = self.resolve(value, scope)
        return resolved.kind == "compiled" or (resolved.kind in ("def", "method") and id(resolved.node) in graph)


def assigned_name(node: Optional[cst.CSTNode]) -> Optional[str]:
    """The name ``name = value`` or ``name: T = value`` gives a value to, when that is all it binds."""
    if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
        return node.targets[0].target.value
    if isinstance(node, cst.AnnAssign) and node.value is not None and isinstance(node.target, cst.Name):
        return node.target.value
    return None


def label_of(code: str) -> str:
    """One short line naming the callable in a message."""
    lines = code.strip().splitlines() or [""]
    label = lines[0]
    if len(lines) > 1 or len(label) > 40:
        label = label[:37].rstrip() + "..."
    return label
