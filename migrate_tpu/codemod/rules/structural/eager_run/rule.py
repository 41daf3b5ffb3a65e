"""TPU301: a plain Python function passed to an eager TPU ``run``: the rule itself.

What it declares (docs, evidence; its examples are in ``examples.py``), what the walk keeps
(each ``run`` call, the loops around it, the ``tf.function`` calls, what may open a TF1
session), and what ``finish`` decides for each ``run``: nothing (traced already, no TPU),
a note (it may be traced, the strategy is not followed, the error is caught), or a fix.
The parts it decides with are the package's other modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Sequence, Set, Tuple, cast

import libcst as cst

from migrate_tpu.codemod.analysis.names import lookup
from migrate_tpu.codemod.analysis.strategies import STRATEGY_LIKE, StrategyFacts
from migrate_tpu.codemod.analysis.tracing import GRAPH_MODE_CALLS, UNKNOWN, Decorators, builds_tf1_graph
from migrate_tpu.codemod.analysis.walk import Analysis, ProjectFacts, Scope
from migrate_tpu.codemod.foundation.helpers import argument
from migrate_tpu.codemod.foundation.receivers import imported_receivers
from migrate_tpu.codemod.framework.hoisting import Loop, loops_around
from migrate_tpu.codemod.framework.rule import Finding, Rule, Safety, register
from migrate_tpu.codemod.rules.structural.eager_run.callables import Callables, Step, label_of
from migrate_tpu.codemod.rules.structural.eager_run.examples import EXAMPLES
from migrate_tpu.codemod.rules.structural.eager_run.fixes import Fixes
from migrate_tpu.codemod.rules.structural.eager_run.hoisting import Hoisting, built_in_loop
from migrate_tpu.codemod.rules.structural.eager_run.may_fire import attribute_may_be_tpu, name_may_be_tpu
from migrate_tpu.codemod.rules.structural.eager_run.safety import PerCall
from migrate_tpu.codemod.rules.structural.eager_run.traced import Wrapper, catching_handler, enclosing, in_comprehension, traced_functions
from migrate_tpu.codemod.stages.prefilter import Evidence

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.stages.source_index import SourceIndex

_RUN_METHODS = ("run", "experimental_run_v2")


def _last_name(expr: cst.BaseExpression) -> str:
    """``function`` of ``tf.function`` or of ``function``; "" for anything else."""
    return expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""


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
of the same file that returns `tf.function(...)`; a lambda or function passed to
`tf.function(...)`, also as `tf.function(experimental_compile=True)(f)` (a
function also called as it is outside any `tf.function` gets a note: its `run`
is eager there); only called from one; or a method overriding one that a base class runs under
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
    examples = EXAMPLES
    # The parts ``finish`` decides with, made for the file it walked.
    _callables: Callables
    _hoisting: Hoisting
    _fixes: Fixes

    @classmethod
    def ruled_out_by_text(cls, source: str, lookup: Optional[ProjectFacts] = None, path: str = "") -> bool:
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
    def may_fire(cls, index: SourceIndex) -> bool:
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
            and (attribute_may_be_tpu(index, place) if call.receiver is None else name_may_be_tpu(index, call.receiver))
            and not index.passes_traced_function(place)
            for place, call in enumerate(index.calls)
        )

    def __init__(self) -> None:
        super().__init__()
        # (run call, its scope, the loops whose bodies hold it in the same function, innermost first)
        self._runs: List[Tuple[cst.Call, Scope, List[Loop]]] = []
        self._taken_names: Set[str] = set()  # names given to hoisted tf.functions in this file
        self._comprehended: Set[int] = set()  # run calls in a comprehension: a loop no statement can precede
        # run calls in a ``try`` that catches what eager TPU ``run`` raises: the handler's code
        self._caught: Dict[int, str] = {}
        self._wrappers: List[Wrapper] = []
        self._graph_mode: List[Tuple[cst.Call, Scope]] = []  # calls that may open a TF1 session
        self._per_call = PerCall()  # the module's functions that run once, found once

    def visit_Call(self, node: cst.Call, analysis: Analysis) -> None:
        func = node.func
        if _last_name(func) in GRAPH_MODE_CALLS:
            self._graph_mode.append((node, analysis.scope))
        if isinstance(func, cst.Attribute):
            if func.attr.value in _RUN_METHODS and node.args:
                analysis.remember(node)
                loops = loops_around(analysis.ancestors())
                for loop in loops:
                    analysis.remember(loop)  # a hoisting fix rewrites it: its path is walked, not the file
                analysis.remember(node)
                self._runs.append((node, analysis.scope, loops))
                if in_comprehension(analysis.ancestors()):
                    self._comprehended.add(id(node))
                handler = catching_handler(analysis.ancestors())
                if handler is not None:
                    self._caught[id(node)] = handler
            elif func.attr.value == "function":
                self._wrappers.append((node, analysis.scope))
        elif isinstance(func, cst.Name) and func.value == "function":
            self._wrappers.append((node, analysis.scope))
        elif isinstance(func, cst.Call) and _last_name(func.func) == "function":
            # ``tf.function(experimental_compile=True)(step)``: the factory's decorator applied.
            self._wrappers.append((node, analysis.scope))

    # -- decisions ----------------------------------------------------------------

    def finish(self, analysis: Analysis) -> Iterable[Finding]:
        if not self._runs:
            return self.findings
        facts = StrategyFacts(analysis)
        decorators = Decorators(analysis)
        self._callables = callables = Callables(analysis, decorators)
        self._hoisting = Hoisting(self, callables, self._per_call, self._taken_names)
        self._fixes = Fixes(self, self._hoisting)
        graph, maybe = traced_functions(analysis, decorators, self._wrappers)
        session = next((call for call, scope in self._graph_mode if builds_tf1_graph(call, scope)), None)
        for call, scope, loops in self._runs:
            # ``visit_Call`` keeps only ``<receiver>.run(...)`` calls: the function is an ``Attribute``.
            if not facts.may_be_tpu(cast(cst.Attribute, call.func).value, scope):
                self._unknown_strategy(call, scope, facts, graph, analysis)
                continue
            if enclosing(scope, graph) is not None:
                continue
            fn = argument(call, 0, "fn")
            if fn is None:
                continue
            possibly = enclosing(scope, maybe)
            caught = self._caught.get(id(call))
            if (possibly is not None or session is not None or caught is not None) and callables.compiled(fn.value, scope, graph):
                continue  # `fn` is a `tf.function` already: `run` takes it traced or not, nothing to note
            if possibly is not None or session is not None or caught is not None:
                self._note_unfixed(fn, caught, maybe[possibly] if possibly is not None else None, session, analysis)
                continue
            step = self._step(fn, scope, graph, decorators, analysis)
            if step is not None:
                self._fix(call, step, loops, analysis)
        self._place_on_statements(analysis)
        return self.findings

    def _note_unfixed(self, fn: cst.Arg, caught: Optional[str], possibly: Optional[str], session: Optional[cst.Call], analysis: Analysis) -> None:
        """A note, no fix, for the step of a ``run`` in a ``try`` that catches its eager error
        (``caught``: the handler), that may be traced (``possibly``: why), or in a file that
        builds TF1 graphs (``session``: the call that does)."""
        label = label_of(analysis.module.code_for_node(fn.value))
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
            return
        if possibly is not None:
            why = possibly
        else:  # graph code: `run` builds graph ops, and wrapping the step would change what it builds
            # (``caught`` and ``possibly`` are None here: the ``session`` call is what brought us in)
            why = f"this file builds TF1 graphs (`{label_of(self._callables.code(cast(cst.Call, session).func))}(...)`), where `run` is not eager"
        self.report(
            fn.value,
            f"`run` may be traced here: {why}; if it does not, `{label}` must be a "
            "`tf.function` (TPUStrategy rejects a plain function in eager `run`)",
            analysis=analysis,
        )

    def _place_on_statements(self, analysis: Analysis) -> None:
        """Gives each finding the statement of its ``run`` call. Findings sit on the step argument,
        which the walk did not locate; that statement is where a ``# migrate-tpu: ignore[TPU301]``
        comment is looked for (its first line, as for every rule, not only the argument's line)."""
        statements = {}
        for call, _, _ in self._runs:
            fn = argument(call, 0, "fn")
            if fn is not None:
                statements[id(fn.value)] = analysis.statement_of(call)
        for finding in self.findings:
            if finding.statement is None:
                finding.statement = statements.get(id(finding.node))

    def _unknown_strategy(self, call: cst.Call, scope: Scope, facts: StrategyFacts, graph: Set[int], analysis: Analysis) -> None:
        """Issue 22.8: ``strategy = get_strategy(); strategy.experimental_run_v2(fn)`` where
        ``get_strategy`` is not followed (not in view): the strategy may be a TPU one and the
        call eager. A note, no fix: nothing here says a change is needed."""
        func = cast(cst.Attribute, call.func)  # ``visit_Call`` keeps only ``<receiver>.run(...)`` calls
        receiver = func.value
        if facts.kinds(receiver, scope) is not None or enclosing(scope, graph) is not None:
            return  # a strategy known not to be a TPU one, or a traced call
        last = receiver.attr.value if isinstance(receiver, cst.Attribute) else receiver.value if isinstance(receiver, cst.Name) else ""
        if func.attr.value != "experimental_run_v2" and not STRATEGY_LIKE.match(last):
            return  # ``run`` of something that is no strategy as far as this file tells
        source = self._strategy_source(receiver, scope)
        if source is None:
            return
        fn = argument(call, 0, "fn")
        if fn is None or self._callables.compiled(fn.value, scope, graph):
            return
        label = label_of(self._callables.code(fn.value))
        self.report(
            fn.value,
            f"`{label_of(self._callables.code(receiver))}` comes from `{source}`, which is not followed here: if it is a "
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
        return f"{label_of(self._callables.code(binding.value.func))}(...)"

    def _step(self, fn: cst.Arg, scope: Scope, graph: Set[int], decorators: Decorators, analysis: Analysis) -> Optional[Step]:
        """The callable ``run`` is given, where a fix may make it a ``tf.function``; None where it
        is one already, runs traced, or may be one (reported)."""
        resolved = self._callables.resolve(fn.value, scope)
        if resolved.kind == "compiled":
            return None
        label = label_of(analysis.module.code_for_node(fn.value))
        base = f"`{label}` is a plain Python function passed to an eager `run`; TPUStrategy rejects it outside `tf.function`"
        if resolved.kind in ("def", "method"):
            function = cast(cst.FunctionDef, resolved.node)
            if id(function) in graph:
                return None
            where = analysis.site(function)
            def_scope = where.scope if where is not None else analysis.module_scope
            if decorators.function_kind(function, def_scope) == UNKNOWN:
                unknown = next(d for d in function.decorators if decorators.kind(d.decorator, def_scope) == UNKNOWN)
                code = label_of(self._callables.code(unknown.decorator))
                self.report(
                    fn.value,
                    f"`{label}` is decorated with `@{code}`, which may make it a `tf.function`; if it does not, "
                    "TPUStrategy rejects it in eager `run`",
                    analysis=analysis,
                )
                return None
        return Step(fn, label, scope, resolved, base)

    def _fix(self, call: cst.Call, step: Step, loops: Sequence[Loop], analysis: Analysis) -> None:
        """Make the callable of ``step`` a ``tf.function`` once: where it stands, before the loop
        or out of its function; or say why a fix cannot."""
        fn, resolved = step.fn, step.resolved
        loop = loops[0] if loops else None
        if id(call) in self._comprehended and resolved.kind not in ("def", "method"):
            # A tf.function made in a comprehension is made (and traced) again on every item.
            self._hoisting.made_in_loop(step, analysis, anew=isinstance(fn.value, (cst.Lambda, cst.Call)))
            return
        if loop is not None and built_in_loop(fn.value, resolved, loop):
            if not self._hoisting.before_loop(call, step, loops, analysis):
                self._hoisting.made_in_loop(step, analysis)
            return
        if loop is not None and resolved.kind not in ("def", "method"):
            # ``run(tf.function(step))`` in the loop would make, and trace, a new tf.function on every iteration.
            self._hoisting.made_in_loop(step, analysis, anew=False)
            return
        if resolved.kind in ("def", "method"):
            self._fixes.decorate(fn, cast(cst.FunctionDef, resolved.node), step.base, analysis)
        else:
            self._fixes.wrap(call, fn, step.scope, resolved, step.base, analysis)
