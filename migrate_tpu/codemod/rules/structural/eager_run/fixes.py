"""TPU301's fixes where the callable stands: its ``def`` decorated with ``tf.function``
(``Fixes.decorate``; a ``def`` nested in a function moves out of it when it can:
``hoisting.py``), or the argument of ``run`` wrapped as ``tf.function(...)`` (``Fixes.wrap``).
Each is unsafe where ``safety.py`` finds a reason.
"""

from __future__ import annotations

import libcst as cst

from migrate_tpu.codemod.analysis.names import expression_for
from migrate_tpu.codemod.analysis.side_effects import side_effects
from migrate_tpu.codemod.analysis.walk import Analysis, Scope
from migrate_tpu.codemod.foundation.helpers import add_decorator
from migrate_tpu.codemod.framework.rule import Change, Rule, Safety
from migrate_tpu.codemod.rules.structural.eager_run.callables import RunCallable
from migrate_tpu.codemod.rules.structural.eager_run.hoisting import Decorating, Hoisting
from migrate_tpu.codemod.rules.structural.eager_run.safety import first_trace, wrap_reasons


class Fixes:
    """The fixes in place; a finding is the rule's (``report``)."""

    def __init__(self, rule: Rule, hoisting: Hoisting) -> None:
        self.report = rule.report
        self._hoisting = hoisting

    def decorate(self, fn: cst.Arg, function: cst.FunctionDef, base: str, analysis: Analysis) -> None:
        where = analysis.site(function)
        def_scope = where.scope if where is not None else analysis.module_scope
        try:
            text, needed = expression_for("tensorflow.function", def_scope, lambda name: analysis.name_ready(name, function))
        except LookupError:
            self.report(fn.value, base, analysis=analysis)
            return
        reasons = side_effects(function, analysis)
        name = function.name.value
        note = ""
        if def_scope.kind == "function" and self._hoisting.out_of_function(fn, Decorating(function, def_scope, where, text, needed, reasons), base, analysis):
            return
        if def_scope.kind == "function":
            note = f"; `{name}` is defined inside `{def_scope.name.split('.')[-1]}`, so it is traced again on every call there"
        message = base + note
        # A def made on every call of its function would be a new tf.function, traced again,
        # on every call (80 times slower on a step that is run 20 times): never a safe fix.
        safety = Safety.UNSAFE if note else Safety.SAFE
        if note:
            message += "; make it once, outside the function, or run it from a `tf.function`"
        if reasons:
            safety = Safety.UNSAFE
            message += f"; in a `tf.function` its Python code runs only while tracing, and the body has {', '.join(reasons)}"
            message += first_trace(reasons)

        def decorate(updated: cst.FunctionDef, text: str = text) -> cst.FunctionDef:
            return add_decorator(updated, text)

        self.report(
            fn.value,
            message,
            analysis=analysis,
            changes=[Change(function, decorate, key=("tf.function", id(function)))],
            safety=safety,
            imports=[needed] if needed else [],
            suggestion=f"@{text}\ndef {name}(...):",
            fix_title=f"Decorate `{name}` with `@{text}`",
        )

    def wrap(self, call: cst.Call, fn: cst.Arg, scope: Scope, resolved: RunCallable, base: str, analysis: Analysis) -> None:
        try:
            text, needed = expression_for("tensorflow.function", scope, lambda name: analysis.name_ready(name, call))
        except LookupError:
            self.report(fn.value, base, analysis=analysis)
            return
        reasons = wrap_reasons(resolved, analysis)
        message = base
        safety = Safety.SAFE
        if reasons:
            safety = Safety.UNSAFE
            message += f"; wrapping it may change behaviour ({', '.join(reasons)})"
            message += first_trace(reasons)
        index = next(i for i, arg in enumerate(call.args) if arg is fn)

        def wrap(updated: cst.Call, index: int = index, text: str = text) -> cst.Call:
            args = list(updated.args)
            old = args[index]
            wrapped = cst.Call(func=cst.parse_expression(text), args=[cst.Arg(value=old.value)])
            args[index] = old.with_changes(value=wrapped)
            return updated.with_changes(args=args)

        label = analysis.module.code_for_node(fn.value)
        self.report(
            fn.value,
            message,
            analysis=analysis,
            changes=[Change(call, wrap)],
            safety=safety,
            imports=[needed] if needed else [],
            suggestion=f"{text}({label})",
            fix_title=f"Wrap in `{text}(...)`",
        )
