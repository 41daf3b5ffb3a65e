"""TPU105: ``strategy.experimental_make_numpy_dataset`` was removed in TF 2.4."""

from __future__ import annotations

from typing import Iterable, List, Optional, Tuple, cast

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Analysis, Scope
from migrate_tpu.codemod.framework.fixes import RewriteRule
from migrate_tpu.codemod.foundation.helpers import argument
from migrate_tpu.codemod.analysis.names import qualified_name
from migrate_tpu.codemod.framework.rule import Expected, Finding, Safety, register, tf_example
from migrate_tpu.codemod.stages.prefilter import Evidence
from migrate_tpu.codemod.analysis.strategies import StrategyFacts


@register
class MakeNumpyDataset(RewriteRule):
    id = "TPU105"
    name = "experimental-make-numpy-dataset"
    title = "`strategy.experimental_make_numpy_dataset` was removed in TF 2.4"
    safety = Safety.SAFE
    since = "2.1"
    source = "TF 2.4.0 release notes (removes `Strategy.experimental_make_numpy_dataset`); v2.3.0 deprecation text"
    evidence = (Evidence("experimental_make_numpy_dataset", without_tensorflow=True),)
    what = """
Rewrites `strategy.experimental_make_numpy_dataset(x)` to
`tf.data.Dataset.from_tensor_slices(x)`.
"""
    why = """
The method was deprecated in 2.3 ("Please use tf.data.Dataset.from_tensor_slices
instead") and removed from `tf.distribute.Strategy` in 2.4.0 (`AttributeError`).
It is left alone on `tf.compat.v1` strategies and on `strategy.extended`,
which still have it.
"""
    use_instead = """
`from_tensor_slices` gives the same elements. The old method copied the array
into host variables; the new form embeds it as a constant, which costs memory
for very large arrays. `strategy.extended.experimental_make_numpy_dataset(x)`
keeps the old placement.
"""
    fix_safety = """
Safe in eager code: the dataset yields the same elements. Unsafe inside a
`tf.function`, where the array would become a graph constant.
"""
    examples = (
        tf_example(
            before="""\
strategy = tf.distribute.TPUStrategy(resolver)
dataset = strategy.experimental_make_numpy_dataset((features, labels))
""",
            after="""\
strategy = tf.distribute.TPUStrategy(resolver)
dataset = tf.data.Dataset.from_tensor_slices((features, labels))
""",
            expected=(Expected("safe", 2, 11, "`experimental_make_numpy_dataset` was removed from strategies in TF 2.4"),),
        ),
        tf_example(
            before="""\
strategy = tf.compat.v1.distribute.experimental.TPUStrategy(resolver)
dataset = strategy.experimental_make_numpy_dataset(features)
dataset = strategy.extended.experimental_make_numpy_dataset(features)
""",
        ),
        # A strategy from another package's factory: it may be a compat.v1
        # strategy, which still has the method, so the fix is unsafe.
        tf_example(
            before="""\
strategy = make_tpu_strategy()
dataset = strategy.experimental_make_numpy_dataset(features)
""",
            after="""\
strategy = make_tpu_strategy()
dataset = tf.data.Dataset.from_tensor_slices(features)
""",
            unsafe_fixes=True,
            # Unsafe, so plain `fix` leaves it (the examples test runs it without unsafe fixes too).
            expected=(
                Expected(
                    "unsafe",
                    2,
                    11,
                    "`experimental_make_numpy_dataset` was removed from strategies in TF 2.4; "
                    "the receiver's kind is unknown here (a `tf.compat.v1` strategy still has the method)",
                ),
            ),
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self._calls: List[Tuple[cst.Call, Scope, bool]] = []

    def visit_Call(self, node: cst.Call, analysis: Analysis) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "experimental_make_numpy_dataset":
            analysis.remember(node)
            in_function_body = any(isinstance(n, cst.FunctionDef) for n in analysis.ancestors())
            self._calls.append((node, analysis.scope, in_function_body))

    def finish(self, analysis: Analysis) -> Iterable[Finding]:
        facts = StrategyFacts(analysis)

        for call, scope, _ in self._calls:
            receiver = cast(cst.Attribute, call.func).value  # visit_Call keeps only calls of an attribute
            if isinstance(receiver, cst.Attribute) and receiver.attr.value == "extended":
                continue
            if isinstance(receiver, cst.Call) and (qualified_name(receiver.func, scope) or "").startswith("tensorflow.compat.v1."):
                continue
            # A receiver of unknown kind (a strategy from another package's
            # factory) may be a compat.v1 strategy that still has the method:
            # the rewrite is offered as an unsafe fix, never left silent.
            unknown = facts.kinds(receiver, scope) is None
            if unknown and "experimental_make_numpy_dataset" in analysis.defined_names:
                continue  # the file defines its own method of that name
            if self._compat_v1(receiver, scope):
                continue
            value = argument(call, 0, "numpy_input")
            if value is None or len(call.args) > 1:
                self.report(call, "`experimental_make_numpy_dataset` was removed in TF 2.4; use `tf.data.Dataset.from_tensor_slices`", analysis=analysis)
                continue
            traced = self._in_tf_function(scope, analysis)
            message = "`experimental_make_numpy_dataset` was removed from strategies in TF 2.4"
            if traced:
                message += "; inside a `tf.function` the array would become a graph constant"
            if unknown:
                message += "; the receiver's kind is unknown here (a `tf.compat.v1` strategy still has the method)"
            self.propose(
                call,
                message,
                analysis=analysis,
                scope=scope,
                uses=["tensorflow.data.Dataset.from_tensor_slices"],
                manual="`experimental_make_numpy_dataset` was removed in TF 2.4",
                rewrite=_from_tensor_slices,
                safety=Safety.UNSAFE if traced or unknown else Safety.SAFE,
                fix_title="Use `{0}`",
                suggestion="{0}(...)",
            )
        return self.findings

    @staticmethod
    def _compat_v1(receiver: cst.BaseExpression, scope: Scope) -> bool:
        from migrate_tpu.codemod.analysis.names import lookup

        if isinstance(receiver, cst.Name):
            found = lookup(scope, receiver.value)
            if found:
                for binding in found[1]:
                    if binding.kind == "assign" and isinstance(binding.value, cst.Call):
                        name = qualified_name(binding.value.func, binding.scope) or ""
                        if name.startswith("tensorflow.compat.v1."):
                            return True
        return False

    @staticmethod
    def _in_tf_function(scope: Optional[Scope], analysis: Analysis) -> bool:
        from migrate_tpu.codemod.analysis.tracing import is_tracing

        while scope is not None:
            if scope.kind == "function" and scope.parent is not None and any(
                is_tracing(d.decorator, scope.parent) for d in cast(cst.FunctionDef, scope.node).decorators  # a function scope's node is its def
            ):
                return True
            scope = scope.parent
        return False


def _from_tensor_slices(call: cst.Call, from_tensor_slices: cst.BaseExpression) -> cst.Call:
    arg = call.args[0].with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(func=from_tensor_slices, args=[arg])
