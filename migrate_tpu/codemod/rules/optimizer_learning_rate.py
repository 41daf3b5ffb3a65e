"""TPU405: the ``lr=`` spelling of Keras optimizers' learning rate."""

from __future__ import annotations

from typing import List, Tuple

import libcst as cst

from migrate_tpu.codemod.analysis import Analysis, Scope
from migrate_tpu.codemod.names import qualified_name
from migrate_tpu.codemod.rule import Change, Rule, Safety, register, tf_example
from migrate_tpu.codemod.prefilter import Evidence

_OPTIMIZERS = ("SGD", "Adam", "Adamax", "Adagrad", "Adadelta", "Nadam", "RMSprop", "Ftrl", "Optimizer")
OPTIMIZER_CLASSES = frozenset(
    f"{prefix}.{name}"
    for prefix in ("tensorflow.keras.optimizers", "tensorflow.optimizers", "tensorflow.keras.optimizers.legacy")
    for name in _OPTIMIZERS
)


@register
class OptimizerLearningRate(Rule):
    id = "TPU405"
    name = "keras-optimizer-lr"
    title = "Keras optimizers take `learning_rate=`, not `lr=`"
    safety = Safety.SAFE
    since = "2.0"
    source = "Keras 2.3/TF 2.0 optimizer signatures (`lr` kept as a deprecated alias); Keras 2.11 optimizer rewrite"
    evidence = (Evidence("lr", r"\blr\s*="), Evidence("decay", r"\bdecay\s*="))
    what = """
Renames the `lr=` keyword of `tf.keras.optimizers.*` constructors (`SGD`,
`Adam`, `RMSprop`, ...) to `learning_rate=`. With `--target latest` it also
reports `decay=`.
"""
    why = """
`lr` has been a deprecated alias since TF 2.0. The optimizers rewritten in
Keras 2.11 (TF 2.11 and later, and `tf-keras` on TF 2.21) no longer honour it:
the optimizer trains with its default rate, silently. `learning_rate=` works in
TF 2.1, 2.4 and every later release. `decay=` is refused by the new optimizers;
a `tf.keras.optimizers.schedules` learning-rate schedule replaces it.
"""
    use_instead = "`tf.keras.optimizers.SGD(learning_rate=0.1)`; for `decay=`, `learning_rate=tf.keras.optimizers.schedules.InverseTimeDecay(...)`."
    fix_safety = "Safe: both spellings set the same rate wherever `lr` is still honoured."
    examples = (
        tf_example(
            before="""\
optimizer = tf.keras.optimizers.SGD(lr=0.1, momentum=0.9)
""",
            after="""\
optimizer = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
""",
        ),
        tf_example(
            before="""\
optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)
scheduler = make_scheduler(lr=0.1)
""",
        ),
        # A learning rate given twice: `lr=` wins (TF 2.1 and 2.4.1), and renaming it
        # would pass `learning_rate` twice.
        tf_example(
            before="""\
optimizer = tf.keras.optimizers.SGD(0.1, lr=0.2)
""",
            findings=1,
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self._calls: List[Tuple[cst.Call, Scope]] = []

    @classmethod
    def may_fire(cls, index) -> bool:
        """A call with ``lr=`` or ``decay=`` (``syntax_stage.py``); not ``lr = 0.1`` or ``def f(lr=...)``."""
        return any(call.keywords & {"lr", "decay"} for call in index.calls)

    def visit_Call(self, node: cst.Call, analysis: Analysis) -> None:
        if any(arg.keyword is not None and arg.keyword.value in ("lr", "decay") for arg in node.args):
            analysis.remember(node)
            self._calls.append((node, analysis.scope))

    def finish(self, analysis: Analysis):
        latest = analysis.target == "latest"
        for call, scope in self._calls:
            if qualified_name(call.func, scope) not in OPTIMIZER_CLASSES:
                continue
            keywords = {arg.keyword.value for arg in call.args if arg.keyword is not None}
            # The first positional argument of every optimizer class but the base
            # ``Optimizer`` (whose first is ``name``) is ``learning_rate``.
            positional = any(arg.keyword is None for arg in call.args) and not qualified_name(call.func, scope).endswith(".Optimizer")
            if "lr" in keywords:
                if "learning_rate" in keywords or positional:
                    # Checked on 2.1.0 and 2.4.1: `SGD(0.1, lr=0.2)` and
                    # `SGD(learning_rate=0.1, lr=0.2)` train at 0.2 (`lr` wins);
                    # renaming `lr=` would pass `learning_rate` twice (`TypeError`).
                    given = "`learning_rate=`" if "learning_rate" in keywords else "a positional learning rate (or `*args`)"
                    self.report(
                        call,
                        f"both `lr=` and {given} are given: `lr=` wins (TF 2.1 and 2.4), so give its value as the only `learning_rate`",
                        analysis=analysis,
                    )
                else:

                    def rename(updated):
                        return updated.with_changes(
                            args=[
                                arg.with_changes(keyword=cst.Name("learning_rate"))
                                if arg.keyword is not None and arg.keyword.value == "lr"
                                else arg
                                for arg in updated.args
                            ]
                        )

                    self.report(
                        call,
                        "`lr=` is a deprecated alias of `learning_rate=`; Keras 2.11 and later optimizers ignore it",
                        analysis=analysis,
                        changes=[Change(call, rename)],
                        fix_title="Rename `lr=` to `learning_rate=`",
                    )
            if "decay" in keywords and latest:
                self.report(
                    call,
                    "`decay=` is refused by the optimizers of Keras 2.11 and later; use a `tf.keras.optimizers.schedules` schedule as `learning_rate`",
                    analysis=analysis,
                )
        return self.findings
