"""Where TPU301 makes the ``tf.function`` once, when where ``run`` is given the callable would
make it anew each time (part of TPU301).

- before the loop: a callable made on every iteration (a lambda, a nested ``def``, a
  factory call, the line ``step = make_step(k)``) is made once, right before the outermost
  loop that changes none of the names it reads (``Hoisting.before_loop``); when the loop
  changes one, the finding says so and there is no fix (nor where no move applies:
  ``Hoisting.made_in_loop``);
- out of the function: a ``def`` nested in a function that reads only module-level names
  moves to the module, above the statement holding it (``Hoisting.out_of_function``).
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple, TypeVar, Union, cast

import libcst as cst

from migrate_tpu.codemod.analysis.names import expression_for, lookup
from migrate_tpu.codemod.analysis.tree import iter_tree
from migrate_tpu.codemod.analysis.walk import Analysis, Scope, Site
from migrate_tpu.codemod.foundation.helpers import add_decorator
from migrate_tpu.codemod.framework.hoisting import Loop, Statement, fresh_name, free_names, insert_before, rebound_in
from migrate_tpu.codemod.framework.rule import Change, Rewritten, Rule, Safety
from migrate_tpu.codemod.rules.structural.eager_run.callables import Callables, RunCallable, Step, assigned_name
from migrate_tpu.codemod.rules.structural.eager_run.safety import FIRST_TRACE, VARIABLES, PerCall, hoist_reasons

# A statement as a rewrite receives it: itself, or after lines another fix put above it.
Placed = Union[Statement, cst.FlattenSentinel[Statement]]
# What ``_without`` takes a statement out of: a loop's body or a function's.
_Holder = TypeVar("_Holder", cst.For, cst.While, cst.FunctionDef)


class Hoisting:
    """The fixes that make the callable once: before the loop, or out of its function. A
    finding is the rule's (``report``); ``taken_names``, the names given to the
    ``tf.function``\\ s made in this file, is shared by every fix of the file."""

    def __init__(self, rule: Rule, callables: Callables, per_call: PerCall, taken_names: Set[str]) -> None:
        self.report = rule.report
        self._code = callables.code
        self._made_per_call = per_call.why
        self._taken_names = taken_names

    def before_loop(self, call: cst.Call, step: Step, loops: Sequence[Loop], analysis: Analysis) -> bool:
        """Make the callable once, right before the outermost loop that keeps every name it
        reads: ``name = tf.function(<lambda or factory call>)``, or the nested ``def`` moved
        there under ``@tf.function``. False where no such move applies (the caller reports)."""
        fn, scope, resolved, base = step.fn, step.scope, step.resolved, step.base
        value = fn.value
        if resolved.kind != "def" and isinstance(value, cst.Name):
            # ``step = make_step(k)`` (or a lambda) assigned in the loop: that line moves before it.
            moved_assign = self._assigned_in(loops[0], value.value, resolved)
            if moved_assign is None:
                return False
            return self._assignment_before_loop(step, loops, moved_assign, analysis)
        moving = self._what_moves(value, loops, resolved)
        if moving is None:
            return False
        code, is_statement, moved_def = moving
        names = free_names(code, is_statement)
        if names is None:
            return False
        target = self._outermost_loop_keeping(names, step, loops, analysis)
        if target is None:
            return True  # a loop changes a name it reads: reported, with no fix
        try:
            text, needed = expression_for("tensorflow.function", scope, lambda name: analysis.name_ready(name, target))
        except LookupError:
            return False
        reasons = self._hoist_reasons(value, resolved, moved_def, scope, analysis)
        per_call = self._made_per_call(scope, analysis)
        safety = Safety.UNSAFE if reasons or per_call else Safety.SAFE
        if moved_def is not None:
            move = self._def_before(moved_def, loops[0], target, text)
        else:
            move = self._made_before(call, fn, target, text, analysis)
        self.report(
            value,
            _with_reasons(base + "; " + move.what, reasons, per_call),
            analysis=analysis,
            changes=move.changes,
            safety=safety,
            imports=[needed] if needed else [],
            suggestion=move.suggestion,
            fix_title=move.fix_title,
        )
        return True

    def _what_moves(self, value: cst.BaseExpression, loops: Sequence[Loop], resolved: RunCallable) -> Optional[Tuple[str, bool, Optional[cst.FunctionDef]]]:
        """The code ``before_loop`` makes once (and whether it is a statement), and the def it moves
        (None for a lambda or a factory call, wrapped where it stands); None where nothing moves."""
        if resolved.kind == "def":
            function = cast(cst.FunctionDef, resolved.node)
            body = loops[0].body
            statements = list(body.body) if isinstance(body, cst.IndentedBlock) else []
            if not any(statement is function for statement in statements):
                return None  # a def deeper in the loop (under an ``if``...) is not moved
            return self._code(function), True, function
        if isinstance(value, cst.Lambda) or (isinstance(value, cst.Call) and resolved.kind in ("built", "unknown")):
            return self._code(value), False, None
        return None

    def _outermost_loop_keeping(self, names: Set[str], step: Step, loops: Sequence[Loop], analysis: Analysis) -> Optional[Loop]:
        """The outermost of ``loops`` (innermost first) that, with every loop inside it, changes none
        of ``names``; None once it has reported that the innermost loop, or one around it, changes one."""
        fn, label, scope, base = step.fn, step.label, step.scope, step.base
        target: Optional[Loop] = None
        changed: List[str] = []
        for loop in loops:  # innermost first: go out while the loop keeps every name
            changed = rebound_in(loop, names, scope)
            if changed:
                break
            target = loop
        if target is not None and not changed:
            return target
        shown = ", ".join(f"`{name}`" for name in changed[:3])
        where = "an outer loop changes" if target is not None else "the loop changes"
        self.report(
            fn.value,
            base
            + f"; `{label}` is made anew on every iteration and reads {shown}, which {where}, so it cannot be "
            "made once before the loop: pass what changes as an argument of `run` and build the step once",
            analysis=analysis,
            suggestion=f"step_fn = tf.function(...)  # once, before the loop, taking {shown} as arguments",
        )
        return None

    def _def_before(self, moved_def: cst.FunctionDef, innermost: Loop, target: Loop, text: str) -> _Move:
        """The nested ``def`` taken out of the ``innermost`` loop and put before ``target`` under ``@text``."""
        name = moved_def.name.value
        index = next(i for i, statement in enumerate(innermost.body.body) if statement is moved_def)
        taken: Dict[str, cst.FunctionDef] = {}  # the def ``_without`` takes out of the loop

        def take_out(updated: Placed, index: int = index) -> Placed:
            return _on_statement(updated, lambda loop: _without(loop, index, taken))

        def put_before(updated: Placed, text: str = text) -> Rewritten:
            moved = add_decorator(taken["def"], text)
            return insert_before(target, moved)(updated)

        return _Move(
            [Change(innermost, take_out), Change(target, put_before)],
            f"`{name}` is defined anew on every iteration of the loop: it is moved before the loop, as a `@{text}`",
            f"@{text}\ndef {name}(...):  # defined once, before the loop",
            f"Move `{name}` before the loop as a `@{text}`",
        )

    def _made_before(self, call: cst.Call, fn: cst.Arg, target: Loop, text: str, analysis: Analysis) -> _Move:
        """``name = text(<the lambda or factory call>)`` put before ``target``, and ``name`` passed
        to ``run`` instead."""
        value = fn.value
        name = fresh_name(_hoisted_base(value), analysis, self._taken_names)
        index = next(i for i, arg in enumerate(call.args) if arg is fn)
        newline = analysis.module.default_newline
        made: Dict[str, cst.BaseExpression] = {}

        def use_name(updated: cst.Call, index: int = index, name: str = name) -> cst.Call:
            args = list(updated.args)
            made["value"] = args[index].value
            args[index] = args[index].with_changes(value=cst.Name(name))
            return updated.with_changes(args=args)

        def assign_before(updated: Placed, text: str = text, name: str = name) -> Rewritten:  # (not ``put_before``: mypy wants one signature per name)
            statement = cst.SimpleStatementLine(
                body=[
                    cst.Assign(
                        targets=[cst.AssignTarget(target=cst.Name(name))],
                        value=cst.Call(func=cst.parse_expression(text), args=[cst.Arg(value=made["value"])]),
                    )
                ],
                trailing_whitespace=cst.TrailingWhitespace(newline=cst.Newline(None if newline == "\n" else newline)),
            )
            return insert_before(target, statement)(updated)

        return _Move(
            [Change(call, use_name), Change(target, assign_before)],
            f"it is made anew on every iteration of the loop: it is made once before the loop, as `{name} = {text}(...)`",
            f"{name} = {text}({self._code(value)})  # once, before the loop",
            f"Make `{name} = {text}(...)` once, before the loop",
        )

    def _assigned_in(self, loop: Loop, name: str, resolved: RunCallable) -> Optional[Tuple[int, cst.SimpleStatementLine]]:
        """The line ``name = <lambda or call>`` (or ``name: T = ...``) directly in the loop's
        body, the name's only binding."""
        if len(resolved.bindings) != 1 or resolved.bindings[0].kind != "assign" or not isinstance(loop.body, cst.IndentedBlock):
            return None
        node = resolved.bindings[0].node
        if assigned_name(node) is None or not isinstance(getattr(node, "value", None), (cst.Lambda, cst.Call)):
            return None
        for index, statement in enumerate(loop.body.body):
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and statement.body[0] is node:
                return index, statement
        return None

    def _assignment_before_loop(self, step: Step, loops: Sequence[Loop], moved: Tuple[int, cst.SimpleStatementLine], analysis: Analysis) -> bool:
        fn, scope, resolved, base = step.fn, step.scope, step.resolved, step.base
        index, statement = moved
        assign = cast("Union[cst.Assign, cst.AnnAssign]", statement.body[0])  # with a value: ``_assigned_in`` took only these
        value = cast(cst.BaseExpression, assign.value)
        names = free_names(self._code(value), False)
        if names is None:
            return False
        target = self._outermost_loop_keeping(names, step, loops, analysis)
        if target is None:
            return True  # a loop changes a name it reads: reported, with no fix
        # Other code of the loop that reads the name would then get the tf.function.
        name = cast(str, assigned_name(assign))  # ``_assigned_in`` took only such lines
        readers = [
            node for node in iter_tree(loops[0].body) if isinstance(node, cst.Name) and node.value == name
        ]
        try:
            text, needed = expression_for("tensorflow.function", scope, lambda n: analysis.name_ready(n, target))
        except LookupError:
            return False
        reasons = self._hoist_reasons(value, resolved, None, scope, analysis)
        if len(readers) > 2:  # the target and the argument of `run`
            reasons.append(f"other code in the loop reads `{name}`, which is now a `tf.function`")
        per_call = self._made_per_call(scope, analysis)
        taken: Dict[str, cst.SimpleStatementLine] = {}  # the line ``name = ...`` (``_assigned_in`` took only such lines)

        def take_out(updated: Placed, index: int = index) -> Placed:
            return _on_statement(updated, lambda loop: _without(loop, index, taken))

        def put_before(updated: Placed, text: str = text) -> Rewritten:
            line = taken["def"]
            small = cast("Union[cst.Assign, cst.AnnAssign]", line.body[0])  # with a value: ``_assigned_in`` took only these
            wrapped = cst.Call(func=cst.parse_expression(text), args=[cst.Arg(value=cast(cst.BaseExpression, small.value))])
            return insert_before(target, line.with_changes(body=[small.with_changes(value=wrapped)]))(updated)

        what = f"`{name}` is made anew on every iteration of the loop: that line moves before the loop, as `{name} = {text}(...)`"
        self.report(
            fn.value,
            _with_reasons(base + "; " + what, reasons, per_call),
            analysis=analysis,
            changes=[Change(loops[0], take_out), Change(target, put_before)],
            safety=Safety.UNSAFE if reasons or per_call else Safety.SAFE,
            imports=[needed] if needed else [],
            suggestion=f"{name} = {text}({self._code(value)})  # once, before the loop",
            fix_title=f"Move `{name} = {text}(...)` before the loop",
        )
        return True

    def _hoist_reasons(
        self, value: cst.BaseExpression, resolved: RunCallable, moved_def: Optional[cst.FunctionDef], scope: Scope, analysis: Analysis
    ) -> List[str]:
        return hoist_reasons(value, resolved, moved_def, scope, analysis, self._code)

    def made_in_loop(self, step: Step, analysis: Analysis, anew: bool = True) -> None:
        """A callable built on every iteration: a tf.function made there would be traced on every call."""
        fn, label, scope, resolved, base = step
        try:
            text, _ = expression_for("tensorflow.function", scope)
        except LookupError:
            text = "tf.function"
        if resolved.kind == "def":
            suggestion = f"@{text}\ndef {cast(cst.FunctionDef, resolved.node).name.value}(...):  # defined once, before the loop"
        else:
            assigned = [b.value for b in resolved.bindings if b.kind == "assign" and b.value is not None]
            name = fn.value.value if isinstance(fn.value, cst.Name) else "step_fn"
            made = self._code(assigned[0]) if len(assigned) == 1 else self._code(fn.value)
            suggestion = f"{name} = {text}({made})  # once, before the loop\nfor ...:\n    strategy.run({name}, args=...)"
        self.report(
            fn.value,
            base
            + (
                f"; `{label}` is made anew on every iteration of the loop, so a `tf.function` made there would "
                "be traced again on every call: build it once, before the loop"
                if anew
                else f"; wrapping `{label}` in the loop would make a new `tf.function`, traced again, on every "
                "iteration: wrap it once, before the loop"
            ),
            analysis=analysis,
            suggestion=suggestion,
        )

    def out_of_function(self, fn: cst.Arg, decorating: Decorating, base: str, analysis: Analysis) -> bool:
        """A def nested in a function, that reads only module-level names: moved to the module,
        right above the top-level statement holding it, under ``@tf.function``, so it is made
        (and traced) once rather than on every call of its function. False where it cannot go."""
        function, def_scope, where, text, needed, reasons = decorating
        owner = def_scope.node
        if where is None or len(where.path) < 2 or not isinstance(owner, cst.FunctionDef):
            return False
        statements = list(owner.body.body) if isinstance(owner.body, cst.IndentedBlock) else []
        index = next((i for i, statement in enumerate(statements) if statement is function), None)
        if index is None or function.decorators or _has_defaults(function):
            return False  # deeper in the function, or evaluated where it stands: not moved
        name = function.name.value
        module = analysis.module_scope
        if name in module.bindings or name in self._taken_names or len(def_scope.bindings.get(name, ())) != 1:
            return False  # the module has that name (or another fix gives it one), or the function binds it again
        names = free_names(self._code(function), True)
        if names is None or not _module_level(names, def_scope, module):
            return False
        top = where.path[1]
        if not analysis.name_ready(text.split(".")[0], top):
            return False
        self._taken_names.add(name)
        taken: Dict[str, cst.FunctionDef] = {}  # the def ``_without`` takes out of its function

        def take_out(updated: Placed, index: int = index) -> Placed:
            return _on_statement(updated, lambda owner: _without(owner, index, taken))

        def put_above(updated: Placed, text: str = text) -> cst.FlattenSentinel[Statement]:
            moved = add_decorator(taken["def"], text)
            nodes = list(updated.nodes) if isinstance(updated, cst.FlattenSentinel) else [updated]
            own = [line for line in moved.leading_lines if line.comment is not None]
            first = nodes[0]
            moved = moved.with_changes(leading_lines=[*first.leading_lines, *own])
            nodes[0] = first.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
            return cst.FlattenSentinel([moved, *nodes])

        safety = Safety.UNSAFE if reasons else Safety.SAFE
        self.report(
            fn.value,
            _moved_out_message(base, name, def_scope, text, reasons),
            analysis=analysis,
            changes=[Change(owner, take_out), Change(top, put_above)],
            safety=safety,
            imports=[needed] if needed else [],
            suggestion=f"@{text}\ndef {name}(...):  # at module level, made once",
            fix_title=f"Move `{name}` to the module as a `@{text}`",
        )
        return True


class Decorating(NamedTuple):
    """A ``def`` that ``run`` is given, to be made a ``tf.function``, and what decorating it takes."""

    function: cst.FunctionDef
    def_scope: Scope  # the scope the def is in
    where: Optional[Site]  # where the walk met it
    text: str  # ``tf.function`` as the file can spell it there
    needed: Optional[Tuple[str, Optional[str]]]  # the import that spelling needs
    reasons: List[str]  # what in its body may run differently in a ``tf.function``


class _Move(NamedTuple):
    """What ``before_loop`` changes to make the callable once, and what its finding says of it."""

    changes: List[Change]
    what: str
    suggestion: str
    fix_title: str


def _with_reasons(message: str, reasons: List[str], per_call: Optional[str]) -> str:
    """``message`` and why a fix that moves code into a ``tf.function`` may change what it does (unsafe)."""
    if reasons:
        message += f"; in a `tf.function` its Python code runs only while tracing, and {'; '.join(reasons)}"
        message += FIRST_TRACE if any(VARIABLES in r for r in reasons) else ""
    if per_call:
        message += "; " + per_call
    return message


def _module_level(names: Set[str], def_scope: Scope, module: Scope) -> bool:
    """Whether each of ``names``, read by a def in ``def_scope``, is the module's or a builtin."""
    for free in names:
        found = lookup(def_scope, free)
        if found is None:
            if not hasattr(builtins, free):
                return False
        elif found[0] is not module:
            return False  # it reads a name of the function around it (``self``, a parameter...)
    return True


def _moved_out_message(base: str, name: str, def_scope: Scope, text: str, reasons: List[str]) -> str:
    """The finding of a def ``out_of_function`` moves to the module, and why the move may change what it does (unsafe)."""
    message = (
        base + f"; `{name}` is defined inside `{def_scope.name.split('.')[-1]}`, so a `tf.function` made there would be "
        f"traced again on every call: it reads only module-level names, so it is moved to the module, as a `@{text}`"
    )
    if reasons:
        message += f"; in a `tf.function` its Python code runs only while tracing, and the body has {', '.join(reasons)}"
        message += FIRST_TRACE if any(VARIABLES in r for r in reasons) else ""
    return message


def _on_statement(updated: Placed, rewrite: Callable[[Any], Statement]) -> Placed:
    """Apply ``rewrite`` to a statement that another fix may have turned into
    ``FlattenSentinel([inserted..., statement])`` already (the statement is last)."""
    if isinstance(updated, cst.FlattenSentinel):
        nodes = list(updated.nodes)
        return cst.FlattenSentinel([*nodes[:-1], rewrite(nodes[-1])])
    return rewrite(updated)


def _without(statement: _Holder, index: int, taken: dict) -> _Holder:
    """``statement`` (a loop or a def) without the ``index``-th statement of its body, kept in ``taken``."""
    # An indented body (where the callers found the statement), whose statements are all ``Statement``\ s.
    block = cast(cst.IndentedBlock, statement.body)
    body = cast("List[Statement]", list(block.body))
    taken["def"] = body.pop(index)
    if index == 0 and body:
        # The body now starts with the next statement: not with a blank line.
        first = body[0]
        body[0] = first.with_changes(leading_lines=[line for line in first.leading_lines if line.comment is not None])
    return statement.with_changes(body=block.with_changes(body=body))


def _has_defaults(function: cst.FunctionDef) -> bool:
    params = function.params
    return any(p.default is not None for p in (*params.params, *params.kwonly_params, *params.posonly_params))


def _hoisted_base(value: cst.BaseExpression) -> str:
    """A name for the callable made once: ``make_step(k)`` -> ``step``, a lambda -> ``step_fn``."""
    if isinstance(value, cst.Call):
        func = value.func
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        for prefix in ("make_", "build_", "create_", "get_"):
            if last.startswith(prefix) and len(last) > len(prefix):
                return last[len(prefix):].lstrip("_") or "step_fn"
        return f"{last}_fn" if last else "step_fn"
    return "step_fn"


def built_in_loop(value: cst.BaseExpression, resolved: RunCallable, loop: Union[cst.For, cst.While]) -> bool:
    """Whether the callable is made anew on each iteration of ``loop`` (a lambda, a call, a def or assignment there)."""
    if isinstance(value, (cst.Lambda, cst.Call)):
        return True
    bound_here = [b.node for b in resolved.bindings if b.kind in ("def", "assign") and b.node is not None]
    if not bound_here:
        return False
    inside = {id(node) for node in iter_tree(loop.body)}
    return any(id(node) in inside for node in bound_here)
