"""TPU301: a plain Python function passed to an eager TPU ``run``."""

from __future__ import annotations

from typing import List, Optional, Set, Tuple

import libcst as cst

from migrate_tpu.codemod.analysis import Analysis, Scope
from migrate_tpu.codemod.helpers import add_decorator, argument, decorated_with_tf_function, is_tf_function
from migrate_tpu.codemod.names import expression_for, lookup
from migrate_tpu.codemod.rule import Change, Rule, Safety, register, tf_example
from migrate_tpu.codemod.side_effects import side_effects
from migrate_tpu.codemod.strategies import StrategyFacts

_RUN_METHODS = ("run", "experimental_run_v2")


@register
class EagerPlainFunctionRun(Rule):
    id = "TPU301"
    name = "eager-run-plain-function"
    title = "A plain Python function passed to `strategy.run` outside `tf.function` fails on TPU"
    safety = Safety.SAFE
    since = "2.1"
    source = "v2.1.0 and v2.4.1 tpu_strategy.py, validate_run_function; TF 2.4 TPUStrategy API page"
    triggers = _RUN_METHODS
    what = """
Finds `strategy.run(fn, ...)` (or `experimental_run_v2`) called eagerly, outside
any `tf.function`, where the strategy may be a `TPUStrategy` and `fn` is a plain
Python function. It decorates the function's `def` with the file's
`tf.function` (module function, nested function, or the method behind
`self.method`), or wraps a lambda or other callable as `tf.function(...)`.
"""
    why = """
TPUStrategy refuses a plain function in eager mode, in TF 2.1 and 2.4 alike:
`NotImplementedError: TPUStrategy.run(fn, ...) does not support pure eager
execution`. TF 2.0 wrapped it silently, so code written then fails now.
Nothing is done where `run` is already inside a `tf.function` (decorated, or
passed to `tf.function(...)`, or only called from one), where `fn` is already a
`tf.function`, or where the strategy is provably not a TPU one
(`MirroredStrategy`, `OneDeviceStrategy`, ... in view): eager `run` is legal
there, and wrapping a function that calls `.numpy()` would break working code.
"""
    use_instead = """
Code in a `tf.function` runs its Python only while tracing. A function body
with Python side effects (`.numpy()`, `print`, mutation of outer Python state,
I/O, Python random numbers) would behave differently, so such fixes are unsafe:
they are reported with the suggested change and applied only with
`--unsafe-fixes`. Consider `tf.print` and TensorFlow state instead.
"""
    fix_safety = """
Safe when the function body is free of Python side effects that would then run
only at trace time; unsafe otherwise, and unsafe when the callable's body cannot
be seen (an imported function, a parameter).
"""
    examples = (
        tf_example(
            before="""\
strategy = tf.distribute.TPUStrategy(resolver)


def step_fn(x):
    return x * 2


result = strategy.run(step_fn, args=(1.0,))
""",
            after="""\
strategy = tf.distribute.TPUStrategy(resolver)


@tf.function
def step_fn(x):
    return x * 2


result = strategy.run(step_fn, args=(1.0,))
""",
        ),
        tf_example(
            before="""\
strategy = tf.distribute.MirroredStrategy()


def step_fn(x):
    print(x.numpy())
    return x


strategy.run(step_fn, args=(tf.constant(1.0),))
""",
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self._runs: List[Tuple[cst.Call, Scope]] = []
        self._wrappers: List[Tuple[cst.Call, Scope]] = []

    def visit_Call(self, node: cst.Call, analysis: Analysis) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            if func.attr.value in _RUN_METHODS and node.args:
                analysis.remember(node)
                self._runs.append((node, analysis.scope))
            elif func.attr.value == "function":
                self._wrappers.append((node, analysis.scope))
        elif isinstance(func, cst.Name) and func.value == "function":
            self._wrappers.append((node, analysis.scope))

    # -- which code runs inside a tf.function -----------------------------------------

    def _wrapped_names(self) -> Tuple[Set[str], Set[str]]:
        """Names and ``self.`` methods passed to ``tf.function(...)`` anywhere in the file."""
        names, methods = set(), set()
        for call, scope in self._wrappers:
            if not is_tf_function(call.func, scope) or not call.args:
                continue
            value = call.args[0].value
            if isinstance(value, cst.Name):
                names.add(value.value)
            elif isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
                methods.add(value.attr.value)
        return names, methods

    def _graph_functions(self, analysis: Analysis) -> Set[int]:
        names, methods = self._wrapped_names()
        graph: Set[int] = set()
        for function, own_scope in analysis.functions:
            outer = own_scope.parent
            in_class = outer is not None and outer.kind == "class"
            if decorated_with_tf_function(function, outer):
                graph.add(id(function))
            elif function.name.value in (methods if in_class else names):
                graph.add(id(function))
        # A helper called only from traced code is traced too.
        changed = True
        while changed:
            changed = False
            for function, own_scope in analysis.functions:
                if id(function) in graph:
                    continue
                outer = own_scope.parent
                key = ("." if outer is not None and outer.kind == "class" else "") + function.name.value
                callers = analysis.calls_by_name.get(key, [])
                if callers and all(self._in_graph(scope, graph) for _, scope in callers):
                    graph.add(id(function))
                    changed = True
        return graph

    @staticmethod
    def _in_graph(scope: Optional[Scope], graph: Set[int]) -> bool:
        while scope is not None:
            if scope.kind == "function" and id(scope.node) in graph:
                return True
            scope = scope.parent
        return False

    # -- decisions ----------------------------------------------------------------

    def finish(self, analysis: Analysis):
        if not self._runs:
            return self.findings
        facts = StrategyFacts(analysis)
        graph = self._graph_functions(analysis)
        for call, scope in self._runs:
            if not facts.may_be_tpu(call.func.value, scope):
                continue
            if self._in_graph(scope, graph):
                continue
            fn = argument(call, 0, "fn")
            if fn is None:
                continue
            self._handle(call, fn, scope, graph, analysis)
        return self.findings

    def _resolve_def(self, value: cst.BaseExpression, scope: Scope, analysis: Analysis):
        """The ``def`` (and the scope it is defined in) that ``value`` names, if visible."""
        if isinstance(value, cst.Name):
            found = lookup(scope, value.value)
            if found is None:
                return None, "unknown"
            bindings = found[1]
            if any(b.kind == "assign" and isinstance(b.value, cst.Call) and is_tf_function(b.value.func, b.scope) for b in bindings):
                return None, "compiled"
            defs = [b.node for b in bindings if b.kind == "def"]
            if len(defs) == 1 and len(bindings) == 1:
                return defs[0], "def"
            return None, "unknown"
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
            method = scope
            while method.kind in ("lambda", "comprehension") and method.parent is not None:
                method = method.parent
            owner = method.enclosing_class()
            if owner is not None and method.params and value.value.value == method.params[0]:
                bindings = owner.bindings.get(value.attr.value, [])
                defs = [b.node for b in bindings if b.kind == "def"]
                if len(defs) == 1 and len(bindings) == 1:
                    return defs[0], "method"
            return None, "unknown"
        if isinstance(value, cst.Call) and is_tf_function(value.func, scope):
            return None, "compiled"
        if isinstance(value, cst.Lambda):
            return value, "lambda"
        return None, "unknown"

    def _handle(self, call: cst.Call, fn: cst.Arg, scope: Scope, graph: Set[int], analysis: Analysis) -> None:
        target, kind = self._resolve_def(fn.value, scope, analysis)
        if kind == "compiled":
            return
        label = _label(analysis.module.code_for_node(fn.value))
        base = f"`{label}` is a plain Python function passed to an eager `{call.func.attr.value}`; TPUStrategy rejects it outside `tf.function`"
        if kind in ("def", "method"):
            if id(target) in graph:
                return
            self._decorate(call, fn, target, base, analysis)
        else:
            self._wrap(call, fn, scope, target, base, analysis)

    def _decorate(self, call, fn, function: cst.FunctionDef, base: str, analysis: Analysis) -> None:
        where = analysis.site(function)
        def_scope = where.scope if where is not None else analysis.module_scope
        try:
            text, needed = expression_for("tensorflow.function", def_scope)
        except LookupError:
            self.report(fn.value, base, analysis=analysis)
            return
        reasons = side_effects(function, analysis)
        name = function.name.value
        note = ""
        if def_scope.kind == "function":
            note = f"; `{name}` is defined inside `{def_scope.name.split('.')[-1]}`, so it is traced again on every call there"
        message = base + note
        safety = Safety.SAFE
        if reasons:
            safety = Safety.UNSAFE
            message += f"; in a `tf.function` its Python code runs only while tracing, and the body has {', '.join(reasons)}"

        def decorate(updated, text=text):
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

    def _wrap(self, call, fn, scope: Scope, target, base: str, analysis: Analysis) -> None:
        try:
            text, needed = expression_for("tensorflow.function", scope)
        except LookupError:
            self.report(fn.value, base, analysis=analysis)
            return
        if target is not None:  # a lambda: its body is in view
            reasons = side_effects(target, analysis)
        else:
            reasons = ["its body is not in view"]
        message = base
        safety = Safety.SAFE
        if reasons:
            safety = Safety.UNSAFE
            message += f"; wrapping it may change behaviour ({', '.join(reasons)})"
        index = next(i for i, arg in enumerate(call.args) if arg is fn)

        def wrap(updated, index=index, text=text):
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


def _label(code: str) -> str:
    """One short line naming the callable in a message."""
    lines = code.strip().splitlines() or [""]
    label = lines[0]
    if len(lines) > 1 or len(label) > 40:
        label = label[:37].rstrip() + "..."
    return label
