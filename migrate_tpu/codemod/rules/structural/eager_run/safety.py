"""Why a fix of TPU301 is unsafe: what making the callable a ``tf.function`` may change.

In a ``tf.function`` a body's Python code runs only while tracing, so Python side effects
(``.numpy()``, ``print``, outer state, I/O) and variables made on each call behave
differently (``side_effects``); a callable whose body is not in view (an import, a
parameter, a lambda that only calls a parameter) may hold either; and a ``tf.function``
made anew on every call of its function, or on every iteration of a loop, is traced
again each time (``PerCall``). Each function here says why, in the words of the findings.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Set, Union, cast

import libcst as cst

from migrate_tpu.codemod.analysis.names import lookup
from migrate_tpu.codemod.analysis.side_effects import side_effects
from migrate_tpu.codemod.analysis.tree import iter_tree
from migrate_tpu.codemod.analysis.walk import Analysis, Scope
from migrate_tpu.codemod.rules.structural.eager_run.callables import RunCallable

VARIABLES = "creates variables"
FIRST_TRACE = "; a `tf.function` may create variables only on its first trace, so such a body fails once wrapped"


def first_trace(reasons: List[str]) -> str:
    """What the message adds when one of ``reasons`` is that the body creates variables."""
    return FIRST_TRACE if any(VARIABLES in r for r in reasons) else ""


def wrap_reasons(resolved: RunCallable, analysis: Analysis) -> List[str]:
    """Why wrapping the callable where ``run`` is given it may change behaviour."""
    if resolved.node is None:
        return [resolved.why]
    # A lambda, or the def a factory returns: its body is in view.
    reasons = side_effects(resolved.node, analysis)
    if resolved.kind == "built":
        reasons = [f"{reason} (in what {resolved.why} returns)" for reason in reasons]
    forwarded = forwards_to_parameter(resolved.node, analysis)
    if forwarded is not None:
        # ``lambda x: model(x)`` is ``model`` itself: a parameter's body is not in view.
        reasons.append(f"it only calls `{forwarded}`, a parameter whose body is not in view")
    return reasons


def hoist_reasons(
    value: cst.BaseExpression,
    resolved: RunCallable,
    moved_def: Optional[cst.FunctionDef],
    scope: Scope,
    analysis: Analysis,
    code: Callable[[cst.CSTNode], str],
) -> List[str]:
    """Why making the callable once, as a ``tf.function``, may change what the program does."""
    if moved_def is not None:
        found = side_effects(moved_def, analysis)
        return [f"the body has {', '.join(found)}"] if found else []
    if isinstance(value, cst.Lambda):
        found = side_effects(value, analysis)
        reasons = [f"the body has {', '.join(found)}"] if found else []
        forwarded = forwards_to_parameter(value, analysis)
        if forwarded is not None:
            reasons.append(f"it only calls `{forwarded}`, a parameter whose body is not in view")
        return reasons
    # A factory call: made once instead of once per iteration.
    if resolved.node is None:
        return [resolved.why]
    reasons = []
    value = cast(cst.Call, value)  # neither a moved def nor a lambda: a call (``Hoisting``)
    factory = lookup(scope, value.func.value) if isinstance(value.func, cst.Name) else None
    factory_defs = [b.node for b in factory[1] if b.kind == "def"] if factory else []
    # (a "def" binding always holds its ``FunctionDef``)
    found = side_effects(cast(cst.FunctionDef, factory_defs[0]), analysis) if len(factory_defs) == 1 else side_effects(resolved.node, analysis)
    if found:
        reasons.append(f"`{code(value.func)}` or what it returns has {', '.join(found)}")
    if any(isinstance(node, cst.Call) for arg in value.args for node in iter_tree(arg.value)):
        reasons.append("its arguments call code that would then run once, not on every iteration")
    return reasons


def forwards_to_parameter(node: cst.CSTNode, analysis: Analysis) -> Optional[str]:
    """The parameter of an enclosing function that a lambda's body just calls (``lambda x: model(x)``)."""
    if not isinstance(node, cst.Lambda) or not isinstance(node.body, cst.Call) or not isinstance(node.body.func, cst.Name):
        return None
    scope = analysis.scopes_by_node.get(id(node))
    name = node.body.func.value
    found = lookup(scope, name) if scope is not None else None
    if found is None or found[0] is scope:
        return None
    return name if any(b.kind == "param" for b in found[1]) else None


class PerCall:
    """Whether a ``tf.function`` made before a loop is still made again on every call of the
    function holding the loop (``why``); the module's entry points found once per file."""

    def __init__(self) -> None:
        self._entry_points: Optional[Set[str]] = None  # module-level functions that run once (``entry_points``)

    def why(self, scope: Scope, analysis: Analysis) -> Optional[str]:
        """Why a ``tf.function`` made before a loop that runs in ``scope`` may still be made
        again, on every call of the function holding the loop; None where that code runs once
        per program: at module level, or in a module-level function the file calls only from
        module-level code outside any loop (``train()`` under ``if __name__ == "__main__":``)
        or hands to ``app.run``. Made again, it is traced again: on a TPU, compiled again."""
        if scope.kind == "module":
            return None
        function = scope.node
        name = function.name.value if isinstance(function, cst.FunctionDef) else "its function"
        again = (
            f"the loop is in `{name}`, so the `tf.function` is still made, and traced, again on every call of "
            f"`{name}`: safe only if `{name}` runs once per program (otherwise make it once where `{name}` is called)"
        )
        if not isinstance(function, cst.FunctionDef) or scope.parent is None or scope.parent.kind != "module":
            return again  # a method or a nested function: its callers are not in view here
        if self._entry_points is None:
            self._entry_points = entry_points(analysis)
        return None if name in self._entry_points else again


# What ``entry_points`` looks into for more statements, and each part of it with a block.
_Compound = Union[cst.If, cst.Try, cst.With, cst.Else, cst.ExceptHandler, cst.Finally]


def entry_points(analysis: Analysis) -> Set[str]:
    """Functions of the module that run once per program: called once, by module-level code
    outside any loop (an ``if __name__ == "__main__":`` block counts), or never called but
    handed to ``app.run`` (``app.run(main)``, ``tf.compat.v1.app.run(main)``)."""
    in_loop: Set[int] = set()
    handed: Set[str] = set()

    def visit(statements: Sequence[cst.CSTNode]) -> None:
        for statement in statements:
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(statement, (cst.For, cst.While)):
                in_loop.update(id(node) for node in iter_tree(statement))
                continue
            if isinstance(statement, (cst.If, cst.Try, cst.With, cst.Else, cst.ExceptHandler, cst.Finally)):
                visit(blocks_of(statement))
                continue
            for node in iter_tree(statement):
                if (
                    isinstance(node, cst.Call)
                    and isinstance(node.func, cst.Attribute)
                    and node.func.attr.value == "run"
                    and node.args
                    and isinstance(node.args[0].value, cst.Name)
                ):
                    handed.add(node.args[0].value.value)

    visit(analysis.module.body)
    once = set()
    for name in set(analysis.calls_by_name) | handed:
        calls = analysis.calls_by_name.get(name, [])
        at_top = [call for call, scope in calls if scope.kind == "module" and id(call) not in in_loop]
        if len(at_top) == len(calls) and (len(calls) == 1 or (not calls and name in handed)):
            once.add(name)
    return once


def blocks_of(statement: _Compound) -> List[cst.CSTNode]:
    """The statements directly under a compound statement's blocks (``if``/``elif``/``else``,
    ``try``/``except``/``finally``, ``with``)."""
    found: List[cst.CSTNode] = []
    parts: List[_Compound] = [statement]
    if isinstance(statement, cst.If) and isinstance(statement.orelse, cst.If):
        found.append(statement.orelse)  # an ``elif``: visited as an ``if`` of its own
    elif isinstance(statement, cst.If) and statement.orelse is not None:
        parts.append(statement.orelse)
    if isinstance(statement, cst.Try):
        parts.extend(statement.handlers)
        parts.extend(part for part in (statement.orelse, statement.finalbody) if part is not None)
    for part in parts:
        body = part.body
        if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            found.extend(body.body)
    return found
