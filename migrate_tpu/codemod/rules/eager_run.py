"""TPU301: a plain Python function passed to an eager TPU ``run``."""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union, cast

import libcst as cst

from migrate_tpu.codemod.analysis import Analysis, Binding, Scope, iter_tree
from migrate_tpu.codemod.helpers import add_decorator, argument
from migrate_tpu.codemod.hoisting import fresh_name, free_names, insert_before, loops_around, rebound_in
from migrate_tpu.codemod.names import expression_for, lookup
from migrate_tpu.codemod.rule import Change, Expected, Rule, Safety, register, tf_example
from migrate_tpu.codemod.prefilter import Evidence
from migrate_tpu.codemod.side_effects import side_effects
from migrate_tpu.codemod.receivers import imported_receivers, name_and_attributes
from migrate_tpu.codemod.strategies import STRATEGY_LIKE, TPU, StrategyFacts
from migrate_tpu.codemod.tracing import GRAPH_MODE_CALLS, TRACED, UNKNOWN, Decorators, builds_tf1_graph, class_tracing, is_tracing

_RUN_METHODS = ("run", "experimental_run_v2")
_BASE = "is a plain Python function passed to an eager `run`; TPUStrategy rejects it outside `tf.function`"
_VARIABLES = "creates variables"
_FIRST_TRACE = "; a `tf.function` may create variables only on its first trace, so such a body fails once wrapped"


@register
class EagerPlainFunctionRun(Rule):
    id = "TPU301"
    name = "eager-run-plain-function"
    title = "A plain Python function passed to `strategy.run` outside `tf.function` fails on TPU"
    safety = Safety.SAFE
    since = "2.1"
    source = "v2.1.0 and v2.4.1 tpu_strategy.py, validate_run_function; TF 2.4 TPUStrategy API page"
    evidence = (
        Evidence(".run", r"\.run\s*\(", code_only=True),
        Evidence("experimental_run_v2"),
        # A strategy passed in from another module: ``strategy.run(``, ``self.distribution.run(``.
        Evidence(".run(", r"(?i:strategy|\bstrat|\bdistribution)\s*\.run\(", without_tensorflow=True, code_only=True),
    )
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
Nothing is done where `run` is already inside a `tf.function` (decorated, also
through a library's wrapper such as TF-Agents' `common.function` or a decorator
of the same file that returns `tf.function(...)`; passed to `tf.function(...)`;
only called from one; or a method overriding one that a base class runs under
`tf.function`, the base in this file, in another module of the tree, or a known
library's: Keras `Model.train_step`/`test_step`/`predict_step`, Orbit's
`StandardTrainer.train_step`/`StandardEvaluator.eval_step`; TF-Agents traces an
agent's `_train` only when the caller wraps `agent.train`, so there it is a note),
where `fn` is already a `tf.function`, or where the
strategy is provably not a TPU one
(`MirroredStrategy`, `OneDeviceStrategy`, ... in view): eager `run` is legal
there, and wrapping a function that calls `.numpy()` would break working code.
A strategy from a function that is not followed (`strategy = get_strategy()`)
may be a TPU one: its eager `run` gets a note.
"""
    use_instead = """
Code in a `tf.function` runs its Python only while tracing. A function body
with Python side effects (`.numpy()`, `print`, mutation of outer Python state,
I/O, Python random numbers) would behave differently, so such fixes are unsafe:
they are reported with the suggested change and applied only with
`--unsafe-fixes`. Consider `tf.print` and TensorFlow state instead.
A body that creates variables (`tf.Variable`, Keras layers, models, optimizers,
metrics) fails once wrapped, because a `tf.function` may create variables only
on its first trace: build them once, outside the step. Under a decorator whose
meaning is unknown the call may already be traced: it gets a note, no fix; so
does every `run` in a file that builds TF1 graphs (it opens a `Session`, takes
the Keras backend's session or turns eager execution off), where `run` is not
eager, and a `run` inside a `try` that catches the `NotImplementedError` eager
TPU `run` raises (or a base of it): the code handles that failure itself. A
callable made on every iteration of a loop (a lambda, a nested `def`, a factory
call such as `make_step(k)`) is never wrapped there, which would trace a new
`tf.function` on every iteration: when it reads nothing the loop changes, it is
made once, right before the outermost such loop (`step_fn = tf.function(...)`,
a name that collides with nothing; the `def`, or the line `step = make_step(k)`,
moved there under `tf.function`); when it reads what the loop changes, the finding says so and
there is no fix. A loop inside a function is such a place only when the function runs
once per program (called once from module-level code outside any loop, an
`if __name__ == "__main__":` block included, or handed to `app.run`); otherwise
the `tf.function` would still be made and traced again on every call of it, and
the move is an unsafe fix. One bound before the loop is not wrapped inside it either
(`run(tf.function(step))` there makes a new one on every iteration). A `def`
nested in a function and run from it would be a new `tf.function` on every call
of that function: its fix is unsafe (make it once, outside, or run the function
from a `tf.function`).
"""
    fix_safety = """
Safe when the function body is free of Python side effects that would then run
only at trace time and creates no variables, and the `tf.function` is made once
(never one made again on every call of its function or every iteration of a
loop); unsafe otherwise, and unsafe when
the callable's body cannot be seen (an imported function, a parameter, or a
lambda that only calls a parameter: `lambda x: model(x)` is `model`).
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
            expected=(Expected("safe", 8, 23, f"`step_fn` {_BASE}"),),
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
        # TF-Agents' wrapper of tf.function: the call is traced, nothing to report.
        tf_example(
            before="""\
from tf_agents.utils import common

strategy = tf.distribute.TPUStrategy(resolver)


def step_fn(x):
    return x * 2


@common.function(autograph=True)
def train(x):
    return strategy.run(step_fn, args=(x,))
""",
        ),
        # A body that creates variables fails once wrapped: reported as unsafe, not fixed.
        tf_example(
            before="""\
strategy = tf.distribute.TPUStrategy(resolver)


def step_fn(x):
    return tf.keras.layers.Dense(4)(x)


strategy.run(step_fn, args=(x,))
""",
            expected=(
                Expected(
                    "unsafe",
                    8,
                    14,
                    f"`step_fn` {_BASE}; in a `tf.function` its Python code runs only while tracing, and the "
                    "body has `tf.keras.layers.Dense(...)` (creates variables); a `tf.function` may create "
                    "variables only on its first trace, so such a body fails once wrapped",
                ),
            ),
        ),
        # TF1 graph code (a session runs what `run` built): not eager, so a note and no fix.
        tf_example(
            before="""\
strategy = tf.distribute.TPUStrategy(resolver)


def train_step(x):
    return x * 2


step = strategy.run(train_step, args=(features,))
with tf.compat.v1.Session() as session:
    session.run(step)
""",
            expected=(
                Expected(
                    "manual",
                    8,
                    21,
                    "`run` may be traced here: this file builds TF1 graphs (`tf.compat.v1.Session(...)`), "
                    "where `run` is not eager; if it does not, `train_step` must be a `tf.function` "
                    "(TPUStrategy rejects a plain function in eager `run`)",
                ),
            ),
        ),
        # The Keras backend's session is TF1 graph code too: a note, no fix.
        tf_example(
            before="""\
strategy = tf.distribute.TPUStrategy(resolver)


def eval_step(x):
    return x + 1


result = strategy.run(eval_step, args=(features,))
tf.compat.v1.keras.backend.get_session().run(result)
""",
            expected=(
                Expected(
                    "manual",
                    8,
                    23,
                    "`run` may be traced here: this file builds TF1 graphs "
                    "(`tf.compat.v1.keras.backend.get_session(...)`), where `run` is not eager; if it does "
                    "not, `eval_step` must be a `tf.function` (TPUStrategy rejects a plain function in eager "
                    "`run`)",
                ),
            ),
        ),
        # A lambda that only calls a parameter is that parameter: its body is not in view, so the fix is unsafe.
        tf_example(
            before="""\
def warm_up(strategy, net, batch):
    strategy.run(lambda x: net(x, training=False), args=(batch,))
""",
            expected=(
                Expected(
                    "unsafe",
                    2,
                    18,
                    f"`lambda x: net(x, training=False)` {_BASE}; wrapping it may change behaviour (it only "
                    "calls `net`, a parameter whose body is not in view)",
                ),
            ),
            after="""\
def warm_up(strategy, net, batch):
    strategy.run(tf.function(lambda x: net(x, training=False)), args=(batch,))
""",
            unsafe_fixes=True,
        ),
        # A `try` that catches the eager failure: the code handles it on purpose (a fallback), so no fix.
        tf_example(
            before="""\
strategy = tf.distribute.TPUStrategy(resolver)
try:
    strategy.run(lambda x: layer(x), args=(sample,))
except NotImplementedError:
    layer.build(sample.shape)
""",
            expected=(
                Expected(
                    "manual",
                    3,
                    18,
                    "`run` sits in a `try` whose `except NotImplementedError` catches the "
                    "`NotImplementedError` that TPUStrategy raises for a plain function in eager `run`; the "
                    "code may rely on it, so `lambda x: layer(x)` is left as it is: make it a `tf.function` if "
                    "the TPU should run it",
                ),
            ),
        ),
        # A callable made on every iteration, reading nothing the loop changes: made once, before the loop.
        tf_example(
            before="""\
strategy = tf.distribute.TPUStrategy(resolver)
for batch in dataset:
    strategy.run(lambda x: x * 2, args=(batch,))
""",
            after="""\
strategy = tf.distribute.TPUStrategy(resolver)
step_fn = tf.function(lambda x: x * 2)
for batch in dataset:
    strategy.run(step_fn, args=(batch,))
""",
            expected=(
                Expected("safe", 3, 18, f"`lambda x: x * 2` {_BASE}; it is made anew on every iteration of the loop: "
                         "it is made once before the loop, as `step_fn = tf.function(...)`"),
            ),
        ),
        # It reads what the loop changes: it cannot be made once, so a finding and no fix.
        tf_example(
            before="""\
strategy = tf.distribute.TPUStrategy(resolver)
for batch in dataset:
    strategy.run(lambda x: x * batch, args=(batch,))
""",
            expected=(
                Expected("manual", 3, 18, f"`lambda x: x * batch` {_BASE}; `lambda x: x * batch` is made anew on every "
                         "iteration and reads `batch`, which the loop changes, so it cannot be made once before the loop: "
                         "pass what changes as an argument of `run` and build the step once"),
            ),
        ),
        # A def made on every call of a method, reading `self`: decorating it there would trace it again
        # on every call (issue 19: 80 times slower), so the fix is unsafe.
        tf_example(
            before="""\
class Trainer:
    def __init__(self, strategy):
        self.strategy = tf.distribute.TPUStrategy(strategy)

    def train_step(self, x):
        def step_fn(inputs):
            return inputs * self.scale

        return self.strategy.run(step_fn, args=(x,))
""",
            after="""\
class Trainer:
    def __init__(self, strategy):
        self.strategy = tf.distribute.TPUStrategy(strategy)

    def train_step(self, x):
        @tf.function
        def step_fn(inputs):
            return inputs * self.scale

        return self.strategy.run(step_fn, args=(x,))
""",
            unsafe_fixes=True,
            expected=(
                Expected("unsafe", 9, 34, f"`step_fn` {_BASE}; `step_fn` is defined inside `train_step`, so it is traced "
                         "again on every call there; make it once, outside the function, or run it from a `tf.function`"),
            ),
        ),
        # A helper called from traced and from eager code: the eager call needs the fix.
        tf_example(
            before="""\
strategy = tf.distribute.TPUStrategy(resolver)


def step_fn(x):
    return x * 2


def helper(x):
    return strategy.run(step_fn, args=(x,))


@tf.function
def traced(x):
    return helper(x)


def eager(x):
    return helper(x)
""",
            after="""\
strategy = tf.distribute.TPUStrategy(resolver)


@tf.function
def step_fn(x):
    return x * 2


def helper(x):
    return strategy.run(step_fn, args=(x,))


@tf.function
def traced(x):
    return helper(x)


def eager(x):
    return helper(x)
""",
            expected=(Expected("safe", 9, 25, f"`step_fn` {_BASE}"),),
        ),
    )

    @classmethod
    def ruled_out_by_text(cls, source: str, lookup=None, path: str = "") -> bool:
        """Whether the text alone tells what ``may_fire`` would: every ``.run`` in it is
        written ``X.run`` right after a name ``X`` that only imports of absl's ``app``
        bind (``from absl import app [as X]``, ``receivers.imported_receivers``), no
        ``experimental_run_v2`` is there, and the project holds no ``absl`` of its own. Then
        each ``run`` call's receiver is bound only to a module from outside the project,
        which ``may_fire`` tells is no strategy, and the file needs no ``ast`` parse: on
        tf-models-official 2.2.2, 17 of its 79 candidate files (``if __name__ ==
        "__main__": app.run(main)``), about 2 ms each."""
        if "absl" not in source or "experimental_run_v2" in source:
            return False
        receivers = imported_receivers(source, "run")
        if receivers is None or any(targets != {"absl.app"} or STRATEGY_LIKE.match(name) for name, targets in receivers.items()):
            return False
        return lookup is None or lookup.factory_kinds("absl.app", path, call=False) is None

    @classmethod
    def may_fire(cls, index) -> bool:
        """A ``run`` call with arguments on a receiver that may be a TPU strategy as
        ``StrategyFacts`` would tell (``syntax_stage.py``): not an imported module or object
        from outside the project (``app.run(main)`` of absl), nor a name bound only to what
        is no strategy (``with tf.compat.v1.Session() as sess: sess.run(...)``), nor a call
        inside a function that ``@tf.function`` traces, nor one given a function decorated
        with it (``finish`` passes those by: ``SourceIndex.passes_traced_function``)."""
        return any(
            call.attribute in _RUN_METHODS
            and not call.traced
            and (call.positional or call.keywords or call.starred)
            and (_attribute_may_be_tpu(index, place) if call.receiver is None else _name_may_be_tpu(index, call.receiver))
            and not index.passes_traced_function(place)
            for place, call in enumerate(index.calls)
        )

    def __init__(self) -> None:
        super().__init__()
        # (run call, its scope, the loops whose bodies hold it in the same function, innermost first)
        self._runs: List[Tuple[cst.Call, Scope, List[cst.CSTNode]]] = []
        self._taken_names: Set[str] = set()  # names given to hoisted tf.functions in this file
        self._comprehended: Set[int] = set()  # run calls in a comprehension: a loop no statement can precede
        # run calls in a ``try`` that catches what eager TPU ``run`` raises: the handler's code
        self._caught: Dict[int, str] = {}
        self._wrappers: List[Tuple[cst.Call, Scope]] = []
        self._graph_mode: List[Tuple[cst.Call, Scope]] = []  # calls that may open a TF1 session
        self._entry_points: Optional[Set[str]] = None  # module-level functions that run once (``_entry_points``)

    def visit_Call(self, node: cst.Call, analysis: Analysis) -> None:
        func = node.func
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if last in GRAPH_MODE_CALLS:
            self._graph_mode.append((node, analysis.scope))
        if isinstance(func, cst.Attribute):
            if func.attr.value in _RUN_METHODS and node.args:
                analysis.remember(node)
                loops = loops_around(analysis.ancestors())
                for loop in loops:
                    analysis.remember(loop)  # a hoisting fix rewrites it: its path is walked, not the file
                analysis.remember(node)
                self._runs.append((node, analysis.scope, loops))
                if _in_comprehension(analysis.ancestors()):
                    self._comprehended.add(id(node))
                handler = _catching_handler(analysis.ancestors())
                if handler is not None:
                    self._caught[id(node)] = handler
            elif func.attr.value == "function":
                self._wrappers.append((node, analysis.scope))
        elif isinstance(func, cst.Name) and func.value == "function":
            self._wrappers.append((node, analysis.scope))

    # -- which code runs inside a tf.function -----------------------------------------

    def _wrapped_names(self) -> Tuple[Set[str], Set[str]]:
        """Names and ``self.`` methods passed to ``tf.function(...)`` (or a wrapper) anywhere in the file."""
        names, methods = set(), set()
        for call, scope in self._wrappers:
            if not is_tracing(call.func, scope) or not call.args:
                continue
            value = call.args[0].value
            if isinstance(value, cst.Name):
                names.add(value.value)
            elif isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
                methods.add(value.attr.value)
        return names, methods

    def _traced_functions(self, analysis: Analysis, decorators: Decorators) -> Tuple[Set[int], Dict[int, str]]:
        """Functions that run traced, and those that may (with the reason, for the note)."""
        names, methods = self._wrapped_names()
        graph: Set[int] = set()
        maybe: Dict[int, str] = {}
        for function, own_scope in analysis.functions:
            outer = own_scope.parent
            in_class = outer is not None and outer.kind == "class"
            kind = decorators.function_kind(function, outer)
            inherited: Tuple[Dict[str, str], Dict[str, str]] = ({}, {})
            if in_class and kind != UNKNOWN:
                # A method overriding one that a base class runs under tf.function is traced there
                # (``in_class``: ``outer`` is a class's scope, its node the ``ClassDef``).
                inherited = class_tracing(cast(cst.ClassDef, cast(Scope, outer).node), analysis)
            if kind == TRACED or function.name.value in (methods if in_class else names) or function.name.value in inherited[0]:
                graph.add(id(function))
            elif function.name.value in inherited[1]:
                why = inherited[1][function.name.value]
                maybe[id(function)] = f"`{function.name.value}` overrides a method that may run under `tf.function` ({why})"
            elif kind == UNKNOWN:
                # A def's own scope always has one around it: ``outer`` is never None here.
                unknown = next(d for d in function.decorators if decorators.kind(d.decorator, cast(Scope, outer)) == UNKNOWN)
                code = analysis.module.code_for_node(unknown.decorator).strip()
                maybe[id(function)] = f"`{function.name.value}` is decorated with `@{_label(code)}`, which may wrap it in `tf.function`"
        # A helper called only from traced code is traced too (only possibly, if a caller only may be).
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
                if all(_enclosing(scope, graph) is not None for _, scope in callers):
                    graph.add(id(function))
                    changed = True
                elif all(_enclosing(scope, graph) is not None or _enclosing(scope, maybe) is not None for _, scope in callers):
                    maybe[id(function)] = f"`{function.name.value}` is called only from code that may be traced"
                    changed = True
        return graph, maybe

    # -- decisions ----------------------------------------------------------------

    def finish(self, analysis: Analysis):
        if not self._runs:
            return self.findings
        self._analysis = analysis
        facts = StrategyFacts(analysis)
        decorators = Decorators(analysis)
        graph, maybe = self._traced_functions(analysis, decorators)
        session = next((call for call, scope in self._graph_mode if builds_tf1_graph(call, scope)), None)
        for call, scope, loops in self._runs:
            # ``visit_Call`` keeps only ``<receiver>.run(...)`` calls: the function is an ``Attribute``.
            if not facts.may_be_tpu(cast(cst.Attribute, call.func).value, scope):
                self._unknown_strategy(call, scope, facts, graph, decorators, analysis)
                continue
            if _enclosing(scope, graph) is not None:
                continue
            fn = argument(call, 0, "fn")
            if fn is None:
                continue
            possibly = _enclosing(scope, maybe)
            caught = self._caught.get(id(call))
            if (possibly is not None or session is not None or caught is not None) and self._compiled(
                fn.value, scope, graph, decorators
            ):
                continue  # `fn` is a `tf.function` already: `run` takes it traced or not, nothing to note
            if possibly is not None or session is not None or caught is not None:
                label = _label(analysis.module.code_for_node(fn.value))
                if caught is not None:
                    # The code handles the eager failure itself (a fallback, or a probe of
                    # what the strategy supports): wrapping the step changes which branch runs.
                    self.report(
                        fn.value,
                        f"`run` sits in a `try` whose `{caught}` catches the `NotImplementedError` that TPUStrategy "
                        f"raises for a plain function in eager `run`; the code may rely on it, so `{label}` is "
                        "left as it is: make it a `tf.function` if the TPU should run it",
                        analysis=analysis,
                    )
                    continue
                if possibly is not None:
                    why = maybe[possibly]
                else:  # graph code: `run` builds graph ops, and wrapping the step would change what it builds
                    # (``caught`` and ``possibly`` are None here: the ``session`` call is what brought us in)
                    why = f"this file builds TF1 graphs (`{_label(self._code(cast(cst.Call, session).func))}(...)`), where `run` is not eager"
                self.report(
                    fn.value,
                    f"`run` may be traced here: {why}; if it does not, `{label}` must be a "
                    "`tf.function` (TPUStrategy rejects a plain function in eager `run`)",
                    analysis=analysis,
                )
                continue
            self._handle(call, fn, scope, loops, graph, decorators, analysis)
        # Findings sit on the step argument, which the walk did not locate: they belong to the
        # statement of their `run` call, where a `# migrate-tpu: ignore[TPU301]` comment is
        # looked for (its first line, as for every rule, not only the argument's line).
        statements = {}
        for call, _, _ in self._runs:
            fn = argument(call, 0, "fn")
            if fn is not None:
                statements[id(fn.value)] = analysis.statement_of(call)
        for finding in self.findings:
            if finding.statement is None:
                finding.statement = statements.get(id(finding.node))
        return self.findings

    def _unknown_strategy(self, call: cst.Call, scope: Scope, facts: StrategyFacts, graph: Set[int], decorators, analysis) -> None:
        """Issue 22.8: ``strategy = get_strategy(); strategy.experimental_run_v2(fn)`` where
        ``get_strategy`` is not followed (not in view): the strategy may be a TPU one and the
        call eager. A note, no fix: nothing here says a change is needed."""
        func = cast(cst.Attribute, call.func)  # ``visit_Call`` keeps only ``<receiver>.run(...)`` calls
        receiver = func.value
        if facts.kinds(receiver, scope) is not None or _enclosing(scope, graph) is not None:
            return  # a strategy known not to be a TPU one, or a traced call
        last = receiver.attr.value if isinstance(receiver, cst.Attribute) else receiver.value if isinstance(receiver, cst.Name) else ""
        if func.attr.value != "experimental_run_v2" and not STRATEGY_LIKE.match(last):
            return  # ``run`` of something that is no strategy as far as this file tells
        source = self._strategy_source(receiver, scope)
        if source is None:
            return
        fn = argument(call, 0, "fn")
        if fn is None or self._compiled(fn.value, scope, graph, decorators):
            return
        label = _label(self._code(fn.value))
        self.report(
            fn.value,
            f"`{_label(self._code(receiver))}` comes from `{source}`, which is not followed here: if it is a "
            f"TPUStrategy and this `run` is eager, TPUStrategy rejects `{label}` (TF 2.1 did too); make it a "
            "`tf.function` or run it from one",
            analysis=analysis,
        )

    def _strategy_source(self, receiver: cst.BaseExpression, scope: Scope) -> Optional[str]:
        """``get_strategy(...)`` when the receiver is a name assigned (only) from a call."""
        if not isinstance(receiver, cst.Name):
            return None
        found = lookup(scope, receiver.value)
        if found is None or len(found[1]) != 1:
            return None
        binding = found[1][0]
        if binding.kind != "assign" or not isinstance(binding.value, cst.Call):
            return None
        return f"{_label(self._code(binding.value.func))}(...)"

    def _resolve(self, value: cst.BaseExpression, scope: Scope, decorators: Decorators, depth: int = 0) -> "_Callable":
        """What the callable passed to ``run`` is, as far as this file tells."""
        if isinstance(value, cst.Name):
            found = lookup(scope, value.value)
            if found is None:
                return _Callable(why=f"`{value.value}` is not defined in this file, so its body is not in view")
            bindings = found[1]
            if any(b.kind == "assign" and isinstance(b.value, cst.Call) and is_tracing(b.value.func, b.scope) for b in bindings):
                return _Callable(kind="compiled")
            if len(bindings) > 1:
                return _Callable(why=f"`{value.value}` is bound in several places", bindings=bindings)
            binding = bindings[0]
            if binding.kind == "def":
                return _Callable(binding.node, "def", bindings=bindings)
            if binding.kind == "import":
                return _Callable(why=f"`{value.value}` comes from `{binding.target}`, so its body is not in view", bindings=bindings)
            if binding.kind == "param":
                return _Callable(why=f"`{value.value}` is a parameter, so what it calls depends on the caller", bindings=bindings)
            if binding.kind == "assign" and isinstance(binding.value, cst.Call):
                built = self._built_by(binding.value, binding.scope, decorators, depth)
                built.bindings = bindings
                return built
            return _Callable(why=f"`{value.value}` is not a function defined here", bindings=bindings)
        if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
            owner = scope.self_class(value.value.value)
            if owner is not None:
                bindings = owner.bindings.get(value.attr.value, [])
                defs = [b.node for b in bindings if b.kind == "def"]
                if len(defs) == 1 and len(bindings) == 1:
                    return _Callable(defs[0], "method")
            return _Callable(why=f"what `{_label(self._code(value))}` holds is not known here")
        if isinstance(value, cst.Call):
            if is_tracing(value.func, scope):
                return _Callable(kind="compiled")
            return self._built_by(value, scope, decorators, depth)
        if isinstance(value, cst.Lambda):
            return _Callable(value, "lambda")
        return _Callable(why="the callable is computed here, and what it calls is not followed")

    def _built_by(self, call: cst.Call, scope: Scope, decorators: Decorators, depth: int) -> "_Callable":
        """A callable returned by ``make_step(...)``: the nested def or lambda it returns, if this file has it."""
        factory = self._code(call.func)
        if isinstance(call.func, cst.Name) and depth < 4:
            found = lookup(scope, call.func.value)
            defs = [b.node for b in found[1] if b.kind == "def"] if found else []
            if found is not None and found[1][0].kind == "import":
                return _Callable(why=f"it is built by `{factory}(...)` from `{found[1][0].target}`, so its body is not in view")
            if len(defs) == 1:
                own = self._analysis.scopes_by_node.get(id(defs[0]))
                returned = [self._resolve(v, own, decorators, depth + 1) for v in own.returns] if own is not None else []
                for item in returned:
                    if item.kind == "def" and decorators.function_kind(cast(cst.FunctionDef, item.node), own) == TRACED:
                        item.kind = "compiled"  # ``@tf.function def step(...)`` returned by the factory
                if returned and all(r.kind == "compiled" for r in returned):
                    return _Callable(kind="compiled")
                if len(returned) == 1 and returned[0].kind in ("def", "lambda"):
                    if returned[0].kind == "def" and decorators.function_kind(cast(cst.FunctionDef, returned[0].node), own) == UNKNOWN:
                        return _Callable(why=f"what `{factory}(...)` returns is decorated with a decorator of unknown meaning")
                    return _Callable(returned[0].node, "built", why=f"`{factory}(...)`")
        return _Callable(why=f"it is built by `{factory}(...)`, whose result is not followed here")

    def _code(self, node: cst.CSTNode) -> str:
        return self._analysis.module.code_for_node(node).strip()

    def _compiled(self, value: cst.BaseExpression, scope: Scope, graph: Set[int], decorators: Decorators) -> bool:
        """``fn`` is a ``tf.function`` already (``tf.function(...)``, or a def decorated with one)."""
        resolved = self._resolve(value, scope, decorators)
        return resolved.kind == "compiled" or (resolved.kind in ("def", "method") and id(resolved.node) in graph)

    def _handle(self, call, fn: cst.Arg, scope: Scope, loops, graph: Set[int], decorators: Decorators, analysis: Analysis) -> None:
        loop = loops[0] if loops else None
        resolved = self._resolve(fn.value, scope, decorators)
        if resolved.kind == "compiled":
            return
        label = _label(analysis.module.code_for_node(fn.value))
        base = f"`{label}` is a plain Python function passed to an eager `run`; TPUStrategy rejects it outside `tf.function`"
        if resolved.kind in ("def", "method"):
            function = cast(cst.FunctionDef, resolved.node)
            if id(function) in graph:
                return
            where = analysis.site(function)
            def_scope = where.scope if where is not None else analysis.module_scope
            if decorators.function_kind(function, def_scope) == UNKNOWN:
                unknown = next(d for d in function.decorators if decorators.kind(d.decorator, def_scope) == UNKNOWN)
                code = _label(self._code(unknown.decorator))
                self.report(
                    fn.value,
                    f"`{label}` is decorated with `@{code}`, which may make it a `tf.function`; if it does not, "
                    "TPUStrategy rejects it in eager `run`",
                    analysis=analysis,
                )
                return
        if id(call) in self._comprehended and resolved.kind not in ("def", "method"):
            # A tf.function made in a comprehension is made (and traced) again on every item.
            self._hoist(fn, label, scope, resolved, base, analysis, anew=isinstance(fn.value, (cst.Lambda, cst.Call)))
            return
        if loop is not None and _built_in_loop(fn.value, resolved, loop):
            if not self._hoist_fix(call, fn, label, scope, loops, resolved, base, decorators, analysis):
                self._hoist(fn, label, scope, resolved, base, analysis)
            return
        if loop is not None and resolved.kind not in ("def", "method"):
            # ``run(tf.function(step))`` in the loop would make, and trace, a new tf.function on every iteration.
            self._hoist(fn, label, scope, resolved, base, analysis, anew=False)
            return
        if resolved.kind in ("def", "method"):
            self._decorate(fn, cast(cst.FunctionDef, resolved.node), base, analysis)
        else:
            self._wrap(call, fn, scope, resolved, base, analysis)

    def _hoist_fix(
        self, call, fn: cst.Arg, label: str, scope: Scope, loops, resolved: "_Callable", base: str, decorators, analysis: Analysis
    ) -> bool:
        """Make the callable once, right before the outermost loop that keeps every name it
        reads: ``name = tf.function(<lambda or factory call>)``, or the nested ``def`` moved
        there under ``@tf.function``. False where no such move applies (the caller reports)."""
        value = fn.value
        moved_def = None
        if resolved.kind == "def":
            function = cast(cst.FunctionDef, resolved.node)
            body = loops[0].body
            statements = list(body.body) if isinstance(body, cst.IndentedBlock) else []
            if not any(statement is function for statement in statements):
                return False  # a def deeper in the loop (under an ``if``...) is not moved
            moved_def = function
            code, is_statement = self._code(function), True
        elif isinstance(value, cst.Lambda) or (isinstance(value, cst.Call) and resolved.kind in ("built", "unknown")):
            code, is_statement = self._code(value), False
        elif isinstance(value, cst.Name):
            # ``step = make_step(k)`` (or a lambda) assigned in the loop: that line moves before it.
            moved_assign = self._assigned_in(loops[0], value.value, resolved)
            if moved_assign is None:
                return False
            return self._hoist_assignment(fn, label, scope, loops, moved_assign, resolved, base, analysis)
        else:
            return False
        names = free_names(code, is_statement)
        if names is None:
            return False
        target = None
        changed: List[str] = []
        for loop in loops:  # innermost first: go out while the loop keeps every name
            changed = rebound_in(loop, names, scope)
            if changed:
                break
            target = loop
        if target is None or changed:
            outer = target is not None
            where = "an outer loop changes" if outer else "the loop changes"
            shown = ", ".join(f"`{name}`" for name in changed[:3])
            self.report(
                value,
                base
                + f"; `{label}` is made anew on every iteration and reads {shown}, which {where}, so it cannot be "
                "made once before the loop: pass what changes as an argument of `run` and build the step once",
                analysis=analysis,
                suggestion=f"step_fn = tf.function(...)  # once, before the loop, taking {shown} as arguments",
            )
            return True
        try:
            text, needed = expression_for("tensorflow.function", scope, lambda name: analysis.name_ready(name, target))
        except LookupError:
            return False
        reasons = self._hoist_reasons(value, resolved, moved_def, scope, analysis)
        per_call = self._made_per_call(scope, analysis)
        safety = Safety.UNSAFE if reasons or per_call else Safety.SAFE
        newline = analysis.module.default_newline
        if moved_def is not None:
            name = moved_def.name.value
            index = next(i for i, statement in enumerate(loops[0].body.body) if statement is moved_def)
            taken: Dict[str, cst.FunctionDef] = {}  # the def ``_without`` takes out of the loop

            def take_out(updated, index=index):
                return _on_statement(updated, lambda loop: _without(loop, index, taken))

            def put_before(updated, text=text):
                moved = add_decorator(taken["def"], text)
                return insert_before(target, moved)(updated)

            changes = [Change(loops[0], take_out)]
            changes.append(Change(target, put_before))
            what = f"`{name}` is defined anew on every iteration of the loop: it is moved before the loop, as a `@{text}`"
            suggestion = f"@{text}\ndef {name}(...):  # defined once, before the loop"
            fix_title = f"Move `{name}` before the loop as a `@{text}`"
        else:
            name = fresh_name(_hoisted_base(value), analysis, self._taken_names)
            index = next(i for i, arg in enumerate(call.args) if arg is fn)
            made = {}

            def use_name(updated, index=index, name=name):
                args = list(updated.args)
                made["value"] = args[index].value
                args[index] = args[index].with_changes(value=cst.Name(name))
                return updated.with_changes(args=args)

            def assign_before(updated, text=text, name=name):  # (not ``put_before``: mypy wants one signature per name)
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

            changes = [Change(call, use_name), Change(target, assign_before)]
            what = f"it is made anew on every iteration of the loop: it is made once before the loop, as `{name} = {text}(...)`"
            suggestion = f"{name} = {text}({self._code(value)})  # once, before the loop"
            fix_title = f"Make `{name} = {text}(...)` once, before the loop"
        message = base + "; " + what
        if reasons:
            message += f"; in a `tf.function` its Python code runs only while tracing, and {'; '.join(reasons)}"
            message += _FIRST_TRACE if any(_VARIABLES in r for r in reasons) else ""
        if per_call:
            message += "; " + per_call
        self.report(
            value,
            message,
            analysis=analysis,
            changes=changes,
            safety=safety,
            imports=[needed] if needed else [],
            suggestion=suggestion,
            fix_title=fix_title,
        )
        return True

    def _assigned_in(self, loop, name: str, resolved: "_Callable"):
        """The line ``name = <lambda or call>`` (or ``name: T = ...``) directly in the loop's
        body, the name's only binding."""
        if len(resolved.bindings) != 1 or resolved.bindings[0].kind != "assign" or not isinstance(loop.body, cst.IndentedBlock):
            return None
        node = resolved.bindings[0].node
        if _assigned_name(node) is None or not isinstance(getattr(node, "value", None), (cst.Lambda, cst.Call)):
            return None
        for index, statement in enumerate(loop.body.body):
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and statement.body[0] is node:
                return index, statement
        return None

    def _hoist_assignment(self, fn, label, scope, loops, moved, resolved, base, analysis) -> bool:
        index, statement = moved
        assign = statement.body[0]
        value = assign.value
        names = free_names(self._code(value), False)
        if names is None:
            return False
        target, changed = None, []
        for loop in loops:
            changed = rebound_in(loop, names, scope)
            if changed:
                break
            target = loop
        if target is None or changed:
            shown = ", ".join(f"`{n}`" for n in changed[:3])
            where = "an outer loop changes" if target is not None else "the loop changes"
            self.report(
                fn.value,
                base
                + f"; `{label}` is made anew on every iteration and reads {shown}, which {where}, so it cannot be "
                "made once before the loop: pass what changes as an argument of `run` and build the step once",
                analysis=analysis,
                suggestion=f"step_fn = tf.function(...)  # once, before the loop, taking {shown} as arguments",
            )
            return True
        # Other code of the loop that reads the name would then get the tf.function.
        name = cast(str, _assigned_name(assign))  # ``_assigned_in`` took only such lines
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

        def take_out(updated, index=index):
            return _on_statement(updated, lambda loop: _without(loop, index, taken))

        def put_before(updated, text=text):
            line = taken["def"]
            small = cast("Union[cst.Assign, cst.AnnAssign]", line.body[0])  # with a value: ``_assigned_in`` took only these
            wrapped = cst.Call(func=cst.parse_expression(text), args=[cst.Arg(value=cast(cst.BaseExpression, small.value))])
            return insert_before(target, line.with_changes(body=[small.with_changes(value=wrapped)]))(updated)

        message = base + f"; `{name}` is made anew on every iteration of the loop: that line moves before the loop, as `{name} = {text}(...)`"
        if reasons:
            message += f"; in a `tf.function` its Python code runs only while tracing, and {'; '.join(reasons)}"
            message += _FIRST_TRACE if any(_VARIABLES in r for r in reasons) else ""
        if per_call:
            message += "; " + per_call
        self.report(
            fn.value,
            message,
            analysis=analysis,
            changes=[Change(loops[0], take_out), Change(target, put_before)],
            safety=Safety.UNSAFE if reasons or per_call else Safety.SAFE,
            imports=[needed] if needed else [],
            suggestion=f"{name} = {text}({self._code(value)})  # once, before the loop",
            fix_title=f"Move `{name} = {text}(...)` before the loop",
        )
        return True

    def _made_per_call(self, scope: Scope, analysis: Analysis) -> Optional[str]:
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
            self._entry_points = _entry_points(analysis)
        return None if name in self._entry_points else again

    def _hoist_reasons(self, value, resolved: "_Callable", moved_def, scope: Scope, analysis: Analysis) -> List[str]:
        """Why making the callable once, as a ``tf.function``, may change what the program does."""
        if moved_def is not None:
            found = side_effects(moved_def, analysis)
            return [f"the body has {', '.join(found)}"] if found else []
        if isinstance(value, cst.Lambda):
            found = side_effects(value, analysis)
            reasons = [f"the body has {', '.join(found)}"] if found else []
            forwarded = _forwards_to_parameter(value, analysis)
            if forwarded is not None:
                reasons.append(f"it only calls `{forwarded}`, a parameter whose body is not in view")
            return reasons
        # A factory call: made once instead of once per iteration.
        if resolved.node is None:
            return [resolved.why]
        reasons = []
        factory = lookup(scope, value.func.value) if isinstance(value.func, cst.Name) else None
        factory_defs = [b.node for b in factory[1] if b.kind == "def"] if factory else []
        # (a "def" binding always holds its ``FunctionDef``)
        found = side_effects(cast(cst.FunctionDef, factory_defs[0]), analysis) if len(factory_defs) == 1 else side_effects(resolved.node, analysis)
        if found:
            reasons.append(f"`{self._code(value.func)}` or what it returns has {', '.join(found)}")
        if any(isinstance(node, cst.Call) for arg in value.args for node in iter_tree(arg.value)):
            reasons.append("its arguments call code that would then run once, not on every iteration")
        return reasons

    def _hoist(
        self, fn: cst.Arg, label: str, scope: Scope, resolved: "_Callable", base: str, analysis: Analysis, anew: bool = True
    ) -> None:
        """A callable built on every iteration: a tf.function made there would be traced on every call."""
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

    def _decorate(self, fn, function: cst.FunctionDef, base: str, analysis: Analysis) -> None:
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
        if def_scope.kind == "function" and self._hoist_out(fn, function, def_scope, where, text, needed, reasons, base, analysis):
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
            message += _FIRST_TRACE if any(_VARIABLES in r for r in reasons) else ""

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

    def _hoist_out(self, fn, function: cst.FunctionDef, def_scope: Scope, where, text: str, needed, reasons, base: str, analysis: Analysis) -> bool:
        """A def nested in a function, that reads only module-level names: moved to the module,
        right above the top-level statement holding it, under ``@tf.function``, so it is made
        (and traced) once rather than on every call of its function. False where it cannot go."""
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
        if names is None:
            return False
        for free in names:
            found = lookup(def_scope, free)
            if found is None:
                if not hasattr(builtins, free):
                    return False
            elif found[0] is not module:
                return False  # it reads a name of the function around it (``self``, a parameter...)
        top = where.path[1]
        if not analysis.name_ready(text.split(".")[0], top):
            return False
        self._taken_names.add(name)
        taken: Dict[str, cst.FunctionDef] = {}  # the def ``_without`` takes out of its function

        def take_out(updated, index=index):
            return _on_statement(updated, lambda owner: _without(owner, index, taken))

        def put_above(updated, text=text):
            moved = add_decorator(taken["def"], text)
            nodes = list(updated.nodes) if isinstance(updated, cst.FlattenSentinel) else [updated]
            own = [line for line in moved.leading_lines if line.comment is not None]
            first = nodes[0]
            moved = moved.with_changes(leading_lines=[*first.leading_lines, *own])
            nodes[0] = first.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
            return cst.FlattenSentinel([moved, *nodes])

        safety = Safety.UNSAFE if reasons else Safety.SAFE
        message = (
            base + f"; `{name}` is defined inside `{def_scope.name.split('.')[-1]}`, so a `tf.function` made there would be "
            f"traced again on every call: it reads only module-level names, so it is moved to the module, as a `@{text}`"
        )
        if reasons:
            message += f"; in a `tf.function` its Python code runs only while tracing, and the body has {', '.join(reasons)}"
            message += _FIRST_TRACE if any(_VARIABLES in r for r in reasons) else ""
        self.report(
            fn.value,
            message,
            analysis=analysis,
            changes=[Change(owner, take_out), Change(top, put_above)],
            safety=safety,
            imports=[needed] if needed else [],
            suggestion=f"@{text}\ndef {name}(...):  # at module level, made once",
            fix_title=f"Move `{name}` to the module as a `@{text}`",
        )
        return True

    def _wrap(self, call, fn, scope: Scope, resolved: "_Callable", base: str, analysis: Analysis) -> None:
        try:
            text, needed = expression_for("tensorflow.function", scope, lambda name: analysis.name_ready(name, call))
        except LookupError:
            self.report(fn.value, base, analysis=analysis)
            return
        if resolved.node is not None:  # a lambda, or the def a factory returns: its body is in view
            reasons = side_effects(resolved.node, analysis)
            if resolved.kind == "built":
                reasons = [f"{reason} (in what {resolved.why} returns)" for reason in reasons]
            forwarded = _forwards_to_parameter(resolved.node, analysis)
            if forwarded is not None:
                # ``lambda x: model(x)`` is ``model`` itself: a parameter's body is not in view.
                reasons.append(f"it only calls `{forwarded}`, a parameter whose body is not in view")
        else:
            reasons = [resolved.why]
        message = base
        safety = Safety.SAFE
        if reasons:
            safety = Safety.UNSAFE
            message += f"; wrapping it may change behaviour ({', '.join(reasons)})"
            message += _FIRST_TRACE if any(_VARIABLES in r for r in reasons) else ""
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


def _assigned_name(node: Optional[cst.CSTNode]) -> Optional[str]:
    """The name ``name = value`` or ``name: T = value`` gives a value to, when that is all it binds."""
    if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
        return node.targets[0].target.value
    if isinstance(node, cst.AnnAssign) and node.value is not None and isinstance(node.target, cst.Name):
        return node.target.value
    return None


@dataclass
class _Callable:
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


def _enclosing(scope: Optional[Scope], functions) -> Optional[int]:
    """The id of the innermost function around ``scope`` that is in ``functions``."""
    while scope is not None:
        if scope.kind == "function" and id(scope.node) in functions:
            return id(scope.node)
        scope = scope.parent
    return None


def _forwards_to_parameter(node: cst.CSTNode, analysis: Analysis) -> Optional[str]:
    """The parameter of an enclosing function that a lambda's body just calls (``lambda x: model(x)``)."""
    if not isinstance(node, cst.Lambda) or not isinstance(node.body, cst.Call) or not isinstance(node.body.func, cst.Name):
        return None
    scope = analysis.scopes_by_node.get(id(node))
    name = node.body.func.value
    found = lookup(scope, name) if scope is not None else None
    if found is None or found[0] is scope:
        return None
    return name if any(b.kind == "param" for b in found[1]) else None


# What catches the NotImplementedError of an eager TPU ``run`` (and its base classes).
_CATCHES_NOT_IMPLEMENTED = frozenset({"NotImplementedError", "RuntimeError", "Exception", "BaseException"})


def _catching_handler(ancestors: Sequence[cst.CSTNode]) -> Optional[str]:
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


def _on_statement(updated, rewrite):
    """Apply ``rewrite`` to a statement that another fix may have turned into
    ``FlattenSentinel([inserted..., statement])`` already (the statement is last)."""
    if isinstance(updated, cst.FlattenSentinel):
        nodes = list(updated.nodes)
        return cst.FlattenSentinel([*nodes[:-1], rewrite(nodes[-1])])
    return rewrite(updated)


def _without(statement, index: int, taken: dict):
    """``statement`` (a loop or a def) without the ``index``-th statement of its body, kept in ``taken``."""
    body = list(statement.body.body)
    taken["def"] = body.pop(index)
    if index == 0 and body:
        # The body now starts with the next statement: not with a blank line.
        first = body[0]
        body[0] = first.with_changes(leading_lines=[line for line in first.leading_lines if line.comment is not None])
    return statement.with_changes(body=statement.body.with_changes(body=body))


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
# What ``_entry_points`` looks into for more statements, and each part of it with a block.
_Compound = Union[cst.If, cst.Try, cst.With, cst.Else, cst.ExceptHandler, cst.Finally]


def _in_comprehension(ancestors: Sequence[cst.CSTNode]) -> bool:
    """Whether the current node sits in a comprehension, within its function."""
    for node in reversed(ancestors[:-1]):
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(node, _COMPREHENSIONS):
            return True
    return False


def _entry_points(analysis: Analysis) -> Set[str]:
    """Functions of the module that run once per program: called once, by module-level code
    outside any loop (an ``if __name__ == "__main__":`` block counts), or never called but
    handed to ``app.run`` (``app.run(main)``, ``tf.compat.v1.app.run(main)``)."""
    in_loop: Set[int] = set()
    handed: Set[str] = set()

    def visit(statements) -> None:
        for statement in statements:
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(statement, (cst.For, cst.While)):
                in_loop.update(id(node) for node in iter_tree(statement))
                continue
            if isinstance(statement, (cst.If, cst.Try, cst.With, cst.Else, cst.ExceptHandler, cst.Finally)):
                visit(_blocks_of(statement))
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


def _blocks_of(statement: _Compound) -> List[cst.CSTNode]:
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


def _built_in_loop(value: cst.BaseExpression, resolved: _Callable, loop: Union[cst.For, cst.While]) -> bool:
    """Whether the callable is made anew on each iteration of ``loop`` (a lambda, a call, a def or assignment there)."""
    if isinstance(value, (cst.Lambda, cst.Call)):
        return True
    bound_here = [b.node for b in resolved.bindings if b.kind in ("def", "assign") and b.node is not None]
    if not bound_here:
        return False
    inside = {id(node) for node in iter_tree(loop.body)}
    return any(id(node) in inside for node in bound_here)


# -- the second stage (``may_fire``): ``StrategyFacts.kinds`` over-approximated on ``ast`` --


def _strategy_word(name: str) -> bool:
    """The last name of every strategy constructor and of ``get_strategy`` (``CONSTRUCTORS``)."""
    return name.endswith("Strategy") or name == "get_strategy"


def _name_may_be_tpu(index, name: str) -> bool:
    """Whether ``StrategyFacts`` may find a TPU strategy in ``name``: True unless every
    binding of it anywhere in the file is one its ``_bindings_kinds`` gives no TPU kind."""
    if STRATEGY_LIKE.match(name):
        return True
    for kind, node in index.bindings(name):
        if kind == "import":
            # The project's modules are asked, as the rule does; a relative import (None) is not followed here.
            if node is None or (index.lookup is not None and _tpu_kind(index.lookup.factory_kinds(node, index.path, call=False))):
                return True
        elif kind == "param":
            if node is not None:  # an annotation may name a strategy class
                return True
        elif kind == "assign":
            if _value_may_be_tpu(index, node):
                return True
        else:
            return True
    return False


def _attribute_may_be_tpu(index, place: int) -> bool:
    """Whether ``StrategyFacts`` may find a TPU strategy in the receiver of ``calls[place]``
    when it is no plain name, as its ``_attribute_kinds`` reads ``a.b``: a name like a
    strategy's (``config.strategy``) may be one; otherwise only ``self.X`` in a method and an
    attribute of an imported module, which the tree is asked about, can be, never ``a.b.c``
    (``tf.compat.v1.app.run(main)``). On tensor2tensor 1.15.7, ``tf.app.run(main)`` sent two
    files of TF1 code to LibCST. Any other receiver (a call's result) may be one."""
    receiver = index.calls_node(place).func.value
    if not isinstance(receiver, ast.Attribute):
        return True
    if STRATEGY_LIKE.match(receiver.attr):
        return True
    if not isinstance(receiver.value, ast.Name):
        return False
    values = index.self_attribute_values(place)
    if values is not None:
        # ``self.X``: what the class's methods give it, unless ``_value_may_be_tpu`` rules out
        # every value (none given: only a name like a strategy's, ruled out above, may be one).
        # On TF-Agents 0.5.0, ``self._session.run(...)`` after ``self._session =
        # tf.compat.v1.Session()`` kept three files of TF1 code parsed.
        return any(_value_may_be_tpu(index, value) for value in values)
    targets = index.imported_only(receiver.value.id)
    if targets is None:
        return True  # bound otherwise in the file: not followed here
    return index.lookup is not None and any(
        _tpu_kind(index.lookup.factory_kinds(f"{target}.{receiver.attr}", index.path, call=False)) for target in targets
    )


def _value_may_be_tpu(index, value) -> bool:
    """``StrategyFacts.kinds(value)`` may hold a TPU strategy: names, attributes and
    conditionals are not followed here (True); only calls are told apart."""
    if isinstance(value, (ast.Name, ast.Attribute, ast.IfExp, ast.BoolOp)):
        return True
    if not isinstance(value, ast.Call):
        return False  # ``kinds`` of a literal, a subscript, ...: None
    func = value.func
    chain = name_and_attributes(func)
    if chain is None:
        return False  # ``f().g()``: no qualified name, so no constructor nor factory
    head, rest = chain
    last = func.attr if isinstance(func, ast.Attribute) else head
    if _strategy_word(last):
        return True
    bindings = index.bindings(head)
    if not bindings:
        return False  # unbound here (a builtin): no qualified name
    if all(kind == "param" for kind, _ in bindings):
        return False  # ``self.session()``: a parameter has no qualified name
    targets = index.imported_only(head)
    if targets is None:
        return True  # a def of this file (its returns), an alias, ...: not followed here
    if isinstance(func, ast.Name) and any(_strategy_word(t.rpartition(".")[2]) for t in targets):
        return True  # ``from tensorflow.distribute import TPUStrategy as T``
    # A module's own function may return a strategy (``factory_kinds``), never TensorFlow's:
    # the tree is asked what the callee gives, as ``StrategyFacts`` asks it (a class of the
    # tree, a driver or an environment, gives none; on TF-Agents 0.5.0, 12 of the 19 files
    # LibCST parsed for nothing called ``driver.run()`` on one).
    if index.lookup is None:
        return False
    return any(
        not target.startswith("tensorflow") and _tpu_kind(index.lookup.factory_kinds(target + rest, index.path))
        for target in targets
    )


def _tpu_kind(kinds) -> bool:
    """Whether ``StrategyFacts``' kinds hold a TPU strategy (``may_be_tpu``)."""
    return kinds is not None and TPU in kinds


def _label(code: str) -> str:
    """One short line naming the callable in a message."""
    lines = code.strip().splitlines() or [""]
    label = lines[0]
    if len(lines) > 1 or len(label) > 40:
        label = label[:37].rstrip() + "..."
    return label
