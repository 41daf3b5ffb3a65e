"""TPU405: the ``lr=`` spelling of Keras optimizers' learning rate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, List, Optional, Set, Tuple

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Analysis, ProjectFacts, Scope
from migrate_tpu.codemod.analysis.optimizers import OptimizerClass, optimizer_class
from migrate_tpu.codemod.framework.rule import Change, Expected, Finding, Rule, Safety, register, tf_example
from migrate_tpu.codemod.foundation.keywords import may_pass
from migrate_tpu.codemod.stages.prefilter import Evidence

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.stages.source_index import SourceIndex

# The examples' imports of other packages, kept off the start of a line here: the project's
# checks read a line that starts with an import of TensorFlow as a real import.
ADDONS = "import tensorflow_addons as tfa\n"
LEGACY_KERAS = "from tensorflow.python.keras.optimizers import Adam\nfrom tensorflow.python import keras\n"
OPTIMIZER_V2 = "from tensorflow.python.keras.optimizer_v2 import adam\n"


@register
class OptimizerLearningRate(Rule):
    id = "TPU405"
    name = "keras-optimizer-lr"
    title = "Keras optimizers take `learning_rate=`, not `lr=`"
    safety = Safety.SAFE
    since = "2.0"
    source = "Keras 2.3/TF 2.0 optimizer signatures (`lr` kept as a deprecated alias); Keras 2.11 optimizer rewrite"
    # ``decay=`` is reported only for ``--target latest``: for 2.4 it is no lead at all.
    evidence = (Evidence("lr", r"\blr\s*=", code_only=True), Evidence("decay", r"\bdecay\s*=", code_only=True, targets=("latest",)))
    what = """
Renames the `lr=` keyword of `tf.keras.optimizers.*` constructors (`SGD`,
`Adam`, `RMSprop`, ...) to `learning_rate=`, and of their subclasses: those of
TensorFlow Addons (`tfa.optimizers.LazyAdam`, `AdamW`, `SGDW`, `RectifiedAdam`,
`LAMB`, `NovoGrad`, `Yogi`, `ProximalAdagrad`, `AdaBelief`, and classes made by
`extend_with_decoupled_weight_decay`) and the tree's own, followed through their
bases across the tree's modules. `lr=` on an Addons wrapper (`Lookahead`,
`MovingAverage`, `SWA`, `MultiOptimizer`, `COCOB`), which drops it, and on
`ConditionalGradient`, which requires `learning_rate`, is reported, as is `lr=` on
TF 2.1's legacy optimizers of `tensorflow.python.keras.optimizers`, which TF 2.4
removed (the `tensorflow.python.keras.optimizer_v2` classes are renamed). With
`--target latest` it also reports `decay=` on Keras optimizers.
"""
    why = """
`lr` has been a deprecated alias since TF 2.0. The optimizers rewritten in
Keras 2.11 (TF 2.11 and later, and `tf-keras` on TF 2.21) no longer honour it:
the optimizer trains with its default rate, silently. `learning_rate=` works in
TF 2.1, 2.4 and every later release. `decay=` is refused by the new optimizers;
a `tf.keras.optimizers.schedules` learning-rate schedule replaces it.
"""
    use_instead = "`tf.keras.optimizers.SGD(learning_rate=0.1)`; for `decay=`, `learning_rate=tf.keras.optimizers.schedules.InverseTimeDecay(...)`."
    fix_safety = """
Safe: both spellings set the same rate wherever `lr` is still honoured, for
Keras optimizers, the Addons ones (they pass `lr` to Keras or read it
themselves) and classes of the tree that define no `__init__` of their own or
whose `__init__` reads `kwargs.get("lr", learning_rate)` itself.
Unsafe for a class of the tree whose own `__init__` takes `**kwargs`: `lr`
reached the Keras base through them, while `learning_rate=` binds that
`__init__`'s own parameter (or arrives in `**kwargs` under another name), which
it may use otherwise.
A class whose `__init__` has an `lr` parameter of its own is left alone.
"""
    examples = (
        tf_example(
            before="""\
optimizer = tf.keras.optimizers.SGD(lr=0.1, momentum=0.9)
""",
            after="""\
optimizer = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
""",
            expected=(Expected("safe", 1, 13, "`lr=` is a deprecated alias of `learning_rate=`; Keras 2.11 and later optimizers ignore it"),),
        ),
        tf_example(
            before="""\
optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)
scheduler = make_scheduler(lr=0.1)
""",
        ),
        tf_example(
            before=ADDONS + """\

optimizer = tfa.optimizers.LazyAdam(lr=1e-3)
decoupled = tfa.optimizers.AdamW(1e-4, lr=1e-3)
""",
            after=ADDONS + """\

optimizer = tfa.optimizers.LazyAdam(learning_rate=1e-3)
decoupled = tfa.optimizers.AdamW(1e-4, learning_rate=1e-3)
""",
            expected=(
                Expected("safe", 3, 13, "`lr=` is a deprecated alias of `learning_rate=` (`tfa.optimizers.LazyAdam` passes it on to Keras `Adam`); "
                                        "optimizers since Keras 2.11 ignore it"),
                Expected("safe", 4, 13, "`lr=` is a deprecated alias of `learning_rate=` (`tfa.optimizers.AdamW` passes it on to Keras `Adam`); "
                                        "optimizers since Keras 2.11 ignore it"),
            ),
        ),
        # A wrapper drops `lr` (TF 2.4.1, Addons 0.12.1) and refuses `learning_rate`: reported only.
        tf_example(
            before=ADDONS + """\

optimizer = tfa.optimizers.Lookahead(tf.keras.optimizers.Adam(1e-3), lr=1e-3)
""",
            expected=(
                Expected(
                    "manual",
                    3,
                    13,
                    "`lr=` has no effect on `tfa.optimizers.Lookahead`: it has no learning rate of its own and drops it "
                    "(`learning_rate=` would be refused); set the rate on the optimizer it wraps and remove `lr=`",
                ),
            ),
        ),
        tf_example(
            before="""\
class WarmAdam(tf.keras.optimizers.Adam):
    def _decayed_lr(self, var_dtype):
        return super()._decayed_lr(var_dtype) * 0.5


optimizer = WarmAdam(lr=1e-3)
""",
            after="""\
class WarmAdam(tf.keras.optimizers.Adam):
    def _decayed_lr(self, var_dtype):
        return super()._decayed_lr(var_dtype) * 0.5


optimizer = WarmAdam(learning_rate=1e-3)
""",
            expected=(
                Expected(
                    "safe",
                    6,
                    13,
                    "`lr=` is a deprecated alias of `learning_rate=` (`WarmAdam` inherits its constructor from `tf.keras.optimizers.Adam`); "
                    "optimizers since Keras 2.11 ignore it",
                ),
            ),
        ),
        # The class's own `__init__` receives `lr` through `**kwargs`: unsafe.
        tf_example(
            before="""\
class ClippedSGD(tf.keras.optimizers.SGD):
    def __init__(self, learning_rate=0.01, **kwargs):
        super().__init__(learning_rate, clipnorm=1.0, **kwargs)


optimizer = ClippedSGD(lr=0.1)
""",
            after="""\
class ClippedSGD(tf.keras.optimizers.SGD):
    def __init__(self, learning_rate=0.01, **kwargs):
        super().__init__(learning_rate, clipnorm=1.0, **kwargs)


optimizer = ClippedSGD(learning_rate=0.1)
""",
            unsafe_fixes=True,
            expected=(
                Expected(
                    "unsafe",
                    6,
                    13,
                    "`lr=` reaches `ClippedSGD.__init__` through `**kwargs`, and from there perhaps `tf.keras.optimizers.SGD`, where it is "
                    "a deprecated alias of `learning_rate=`; renaming it binds that `__init__`'s own `learning_rate` parameter instead",
                ),
            ),
        ),
        # `lr` is the class's own parameter: nothing to rename.
        tf_example(
            before="""\
class Scheduled(tf.keras.optimizers.SGD):
    def __init__(self, lr=0.01, **kwargs):
        super().__init__(learning_rate=lr * 2, **kwargs)


optimizer = Scheduled(lr=0.1)
""",
        ),
        # TF 2.1's legacy Keras optimizers under `tensorflow.python.keras.optimizers` take `lr` as
        # their own parameter, and TF 2.4 removed them: reported, in either import spelling.
        tf_example(
            before=LEGACY_KERAS + """\

optimizer = Adam(lr=1e-3)
other = keras.optimizers.SGD(lr=0.003)
""",
            expected=(
                Expected(
                    "manual",
                    4,
                    13,
                    "`tensorflow.python.keras.optimizers.Adam` is TF 2.1's legacy Keras optimizer (`lr` is its own parameter); "
                    "TF 2.4 removed it (ImportError): use `tf.keras.optimizers.Adam(learning_rate=...)`",
                ),
                Expected(
                    "manual",
                    5,
                    9,
                    "`tensorflow.python.keras.optimizers.SGD` is TF 2.1's legacy Keras optimizer (`lr` is its own parameter); "
                    "TF 2.4 removed it (ImportError): use `tf.keras.optimizers.SGD(learning_rate=...)`",
                ),
            ),
        ),
        # The `optimizer_v2` classes are `tf.keras.optimizers`' own: renamed as those.
        tf_example(
            before=OPTIMIZER_V2 + """\

optimizer = adam.Adam(lr=1e-3)
""",
            after=OPTIMIZER_V2 + """\

optimizer = adam.Adam(learning_rate=1e-3)
""",
            expected=(Expected("safe", 3, 13, "`lr=` is a deprecated alias of `learning_rate=`; Keras 2.11 and later optimizers ignore it"),),
        ),
        # A learning rate given twice: `lr=` wins (TF 2.1 and 2.4.1), and renaming it
        # would pass `learning_rate` twice.
        tf_example(
            before="""\
optimizer = tf.keras.optimizers.SGD(0.1, lr=0.2)
""",
            expected=(
                Expected(
                    "manual",
                    1,
                    13,
                    "both `lr=` and a positional learning rate (or `*args`) are given: `lr=` wins (TF 2.1 and 2.4), "
                    "so give its value as the only `learning_rate`",
                ),
            ),
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self._calls: List[Tuple[cst.Call, Scope]] = []

    @classmethod
    def ruled_out_by_text(cls, source: str, lookup: Optional[ProjectFacts] = None, path: str = "") -> bool:
        """Whether the text alone tells what ``may_fire`` would: no ``lr =`` or ``decay =``
        in it may be a keyword argument (``keywords.may_pass``: each follows neither ``(``
        nor ``,``). On tf-models-official 2.6.0, 15 files whose only lead is ``lr = ...``
        assigned in a statement of its own."""
        return not may_pass(source, ("lr", "decay"))

    @classmethod
    def may_fire(cls, index: SourceIndex) -> bool:
        """A call with ``lr=``, or ``decay=`` for ``latest`` (``syntax_stage.py``); not ``lr = 0.1``
        or ``def f(lr=...)``."""
        keywords = {evidence.literal for evidence in cls.evidence if evidence.counts_for(index.target)}  # the keywords themselves
        return any(call.keywords & keywords for call in index.calls)

    def visit_Call(self, node: cst.Call, analysis: Analysis) -> None:
        if any(arg.keyword is not None and arg.keyword.value in ("lr", "decay") for arg in node.args):
            analysis.remember(node)
            self._calls.append((node, analysis.scope))

    def finish(self, analysis: Analysis) -> Iterable[Finding]:
        latest = analysis.target == "latest"
        for call, scope in self._calls:
            optimizer = optimizer_class(call.func, scope, analysis)
            if optimizer is None:
                continue
            keywords = {arg.keyword.value for arg in call.args if arg.keyword is not None}
            if "lr" in keywords:
                self._rename_lr(call, optimizer, keywords, analysis)
            if "decay" in keywords and latest and optimizer.kind == "keras":
                self.report(
                    call,
                    "`decay=` is refused by the optimizers of Keras 2.11 and later; use a `tf.keras.optimizers.schedules` schedule as `learning_rate`",
                    analysis=analysis,
                )
        return self.findings

    def _rename_lr(self, call: cst.Call, optimizer: OptimizerClass, keywords: Set[str], analysis: Analysis) -> None:
        manual = _no_rename(call, optimizer, keywords)
        if manual is not None:
            self.report(call, manual, analysis=analysis)
            return
        change = [Change(call, _learning_rate_for_lr)]
        title = "Rename `lr=` to `learning_rate=`"
        if optimizer.kind in ("keras", "library", "inherited"):
            self.report(call, _alias_message(optimizer), analysis=analysis, changes=change, fix_title=title)
        else:
            # A class of the tree whose ``__init__`` takes ``**kwargs``: what it does with ``lr`` is its own.
            instead = (
                "binds that `__init__`'s own `learning_rate` parameter instead"
                if optimizer.own_parameter
                else "passes `learning_rate` through its `**kwargs` instead, which it may treat otherwise"
            )
            message = (
                f"`lr=` reaches `{optimizer.name}.__init__` through `**kwargs`, and from there perhaps "
                f"`{optimizer.base}`, where it is a deprecated alias of `learning_rate=`; renaming it {instead}"
            )
            self.report(call, message, analysis=analysis, changes=change, safety=Safety.UNSAFE, fix_title=title)


def _no_rename(call: cst.Call, optimizer: OptimizerClass, keywords: Set[str]) -> Optional[str]:
    """Why renaming ``lr=`` would not help, as the finding's message (the fix left to a person);
    None where it would."""
    if optimizer.kind == "legacy":
        # TF 2.1's legacy class (``optimizers.LEGACY_KERAS``): ``lr`` is right there, and TF 2.4
        # has no such class; the fix is another class, with its own defaults: left to a person.
        return (
            f"`{optimizer.name}` is TF 2.1's legacy Keras optimizer (`lr` is its own parameter); TF 2.4 removed it "
            f"(ImportError): use `tf.keras.optimizers.{optimizer.base}(learning_rate=...)`"
        )
    if optimizer.kind == "ignores":
        # Checked on TF 2.4.1 with Addons 0.12.1: the rate stays the wrapped optimizer's, and
        # ``learning_rate=`` is refused ("Unexpected keyword argument"): no rename can help.
        return (
            f"`lr=` has no effect on `{optimizer.name}`: it has no learning rate of its own and drops it "
            "(`learning_rate=` would be refused); set the rate on the optimizer it wraps and remove `lr=`"
        )
    positional = [arg for arg in call.args if arg.keyword is None]
    # ``learning_rate`` given by position: an argument at its index, or ``*args`` before it.
    by_position = optimizer.position is not None and (
        len(positional) > optimizer.position or any(arg.star == "*" for arg in positional)
    )
    if "learning_rate" in keywords or by_position:
        # Checked on 2.1.0 and 2.4.1: `SGD(0.1, lr=0.2)` and
        # `SGD(learning_rate=0.1, lr=0.2)` train at 0.2 (`lr` wins);
        # renaming `lr=` would pass `learning_rate` twice (`TypeError`).
        given = "`learning_rate=`" if "learning_rate" in keywords else "a positional learning rate (or `*args`)"
        return f"both `lr=` and {given} are given: `lr=` wins (TF 2.1 and 2.4), so give its value as the only `learning_rate`"
    if optimizer.kind == "requires":
        # ``ConditionalGradient(lr=0.1)``: ``learning_rate`` has no default, so it never ran.
        return (
            f"`{optimizer.name}` requires `learning_rate`: with `lr=` alone it raises `TypeError`; "
            "give the rate as `learning_rate=`"
        )
    return None


def _alias_message(optimizer: OptimizerClass) -> str:
    """The finding on ``lr=`` where it is the alias: on Keras's own optimizers, and on a library's
    or the tree's classes that hand it on to one (or read it themselves)."""
    if optimizer.kind == "keras":
        return "`lr=` is a deprecated alias of `learning_rate=`; Keras 2.11 and later optimizers ignore it"
    if optimizer.kind == "inherited":
        how = f"`{optimizer.name}` inherits its constructor from `{optimizer.base}`"
    elif "." in optimizer.base:
        how = f"`{optimizer.name}` passes it on to `{optimizer.base}`"
    elif optimizer.base:
        how = f"`{optimizer.name}` passes it on to Keras `{optimizer.base}`"
    else:
        how = f"`{optimizer.name}` reads it as `kwargs.get(\"lr\", learning_rate)`"
    return f"`lr=` is a deprecated alias of `learning_rate=` ({how}); optimizers since Keras 2.11 ignore it"


def _learning_rate_for_lr(updated: cst.Call) -> cst.Call:
    """The call with its ``lr=`` keyword named ``learning_rate=``."""
    return updated.with_changes(
        args=[
            arg.with_changes(keyword=cst.Name("learning_rate"))
            if arg.keyword is not None and arg.keyword.value == "lr"
            else arg
            for arg in updated.args
        ]
    )
