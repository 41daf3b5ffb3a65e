"""Which classes are Keras optimizers whose constructor honours ``lr=``, and how.

``lr=`` is the deprecated spelling of ``learning_rate=`` in every Keras optimizer
of TF 2.0 to 2.10 (``kwargs.get("lr", learning_rate)``: given both, ``lr``
wins). A class passes it on when its constructor hands ``**kwargs`` to such an
optimizer, as most optimizers of TensorFlow Addons do. Which ones, and how, is
the data in :data:`ADDONS_OPTIMIZERS`, each entry with where the fact comes from.

A class of the tree is followed through its bases, also into other modules of
the tree (``project.ProjectLookup``): one that defines no ``__init__`` of its own
constructs like its base; one whose ``__init__`` takes ``learning_rate`` and
``**kwargs`` (and no ``lr``) may pass ``lr`` on, which the analysis cannot prove.
A name bound to ``tfa.optimizers.extend_with_decoupled_weight_decay(Base)`` is a
class taking ``weight_decay`` first and the rest, by keyword, like ``Base``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple, cast

import libcst as cst

from migrate_tpu.codemod.analysis.names import lookup, qualified_name

_KERAS = ("SGD", "Adam", "Adamax", "Adagrad", "Adadelta", "Nadam", "RMSprop", "Ftrl")


@dataclass(frozen=True)
class LibraryOptimizer:
    """A library's optimizer class and what its constructor does with ``lr=``."""

    name: str  # as findings name it: "tfa.optimizers.LazyAdam"
    modules: Tuple[str, ...]  # the modules that define or export it
    # "passes": hands ``**kwargs`` to the Keras optimizer ``keras_base``, which reads ``lr``;
    # "reads": ``kwargs.get("lr", learning_rate)`` in its own ``__init__``;
    # "ignores": no rate of its own, ``lr`` reaches the Keras base class, which accepts and
    #   drops it (``learning_rate=`` is refused there: "Unexpected keyword argument");
    # "requires": reads ``lr`` but its ``learning_rate`` has no default, so ``lr=`` alone fails.
    treats_lr: str
    position: Optional[int]  # index of ``learning_rate`` among the positional parameters
    keras_base: str = ""
    source: str = ""  # where the fact was checked


_TFA = "tensorflow_addons.optimizers"
# Checked by running each constructor with ``lr=0.123`` on TF 2.4.1 with tensorflow-addons
# 0.12.1 (the release made for TF 2.4) and reading its ``learning_rate`` hyperparameter;
# classes added later were read in the source of tensorflow-addons 0.23.0 (the last
# release, which does not import on TF 2.21, so could not be run there).
_RUN_0_12 = "tensorflow-addons 0.12.1 on TF 2.4.1: `{}(lr=0.123)` {}"
_READ_0_23 = "tensorflow-addons 0.23.0 source, optimizers/{}: {}"
ADDONS_OPTIMIZERS: Tuple[LibraryOptimizer, ...] = (
    LibraryOptimizer("tfa.optimizers.LazyAdam", (_TFA, f"{_TFA}.lazy_adam"), "passes", 0, "Adam",
                     _RUN_0_12.format("LazyAdam", "trains at 0.123; `super().__init__(learning_rate, ..., **kwargs)` of Keras Adam")),
    LibraryOptimizer("tfa.optimizers.AdamW", (_TFA, f"{_TFA}.weight_decay_optimizers"), "passes", 1, "Adam",
                     _RUN_0_12.format("AdamW", "trains at 0.123; `weight_decay` is its first parameter")),
    LibraryOptimizer("tfa.optimizers.SGDW", (_TFA, f"{_TFA}.weight_decay_optimizers"), "passes", 1, "SGD",
                     _RUN_0_12.format("SGDW", "trains at 0.123; `weight_decay` is its first parameter")),
    LibraryOptimizer("tfa.optimizers.RectifiedAdam", (_TFA, f"{_TFA}.rectified_adam"), "reads", 0, "",
                     _RUN_0_12.format("RectifiedAdam", 'trains at 0.123 (`kwargs.get("lr", learning_rate)`)')),
    LibraryOptimizer("tfa.optimizers.LAMB", (_TFA, f"{_TFA}.lamb"), "reads", 0, "",
                     _RUN_0_12.format("LAMB", 'trains at 0.123 (`kwargs.get("lr", learning_rate)`)')),
    LibraryOptimizer("tfa.optimizers.NovoGrad", (_TFA, f"{_TFA}.novograd"), "reads", 0, "",
                     _RUN_0_12.format("NovoGrad", 'trains at 0.123 (`kwargs.get("lr", learning_rate)`)')),
    LibraryOptimizer("tfa.optimizers.Yogi", (_TFA, f"{_TFA}.yogi"), "reads", 0, "",
                     _RUN_0_12.format("Yogi", 'trains at 0.123 (`kwargs.get("lr", learning_rate)`)')),
    LibraryOptimizer("tfa.optimizers.ProximalAdagrad", (_TFA, f"{_TFA}.proximal_adagrad"), "reads", 0, "",
                     _RUN_0_12.format("ProximalAdagrad", 'trains at 0.123 (`kwargs.get("lr", learning_rate)`)')),
    LibraryOptimizer("tfa.optimizers.AdaBelief", (_TFA, f"{_TFA}.adabelief"), "reads", 0, "",
                     _READ_0_23.format("adabelief.py", '`learning_rate` first, `kwargs.get("lr", learning_rate)`; not in 0.12.1')),
    LibraryOptimizer("tfa.optimizers.ConditionalGradient", (_TFA, f"{_TFA}.conditional_gradient"), "requires", 0, "",
                     _RUN_0_12.format("ConditionalGradient", "raises TypeError (missing `learning_rate`); with it, `lr` wins")),
    LibraryOptimizer("tfa.optimizers.Lookahead", (_TFA, f"{_TFA}.lookahead"), "ignores", None, "",
                     _RUN_0_12.format("Lookahead", "keeps the wrapped optimizer's rate; `learning_rate=` raises TypeError")),
    LibraryOptimizer("tfa.optimizers.MovingAverage", (_TFA, f"{_TFA}.moving_average"), "ignores", None, "",
                     _RUN_0_12.format("MovingAverage", "keeps the wrapped optimizer's rate; `learning_rate=` raises TypeError")),
    LibraryOptimizer("tfa.optimizers.SWA", (_TFA, f"{_TFA}.stochastic_weight_averaging"), "ignores", None, "",
                     _RUN_0_12.format("SWA", "keeps the wrapped optimizer's rate; `learning_rate=` raises TypeError")),
    LibraryOptimizer("tfa.optimizers.MultiOptimizer", (_TFA, f"{_TFA}.discriminative_layer_training"), "ignores", None, "",
                     _RUN_0_12.format("MultiOptimizer", "has no learning-rate hyperparameter (each wrapped optimizer has its own)")),
    LibraryOptimizer("tfa.optimizers.COCOB", (_TFA, f"{_TFA}.cocob"), "ignores", None, "",
                     _READ_0_23.format("cocob.py", "`__init__(alpha, use_locking, name, **kwargs)`, no learning rate; not in 0.12.1")),
)
# ``extend_with_decoupled_weight_decay(Base)`` makes ``Base`` with ``weight_decay`` in front
# (tensorflow-addons 0.12.1 and 0.23.0, weight_decay_optimizers.py:
# ``__init__(self, weight_decay, *args, **kwargs)`` handing the keywords to ``Base``). Run on
# TF 2.4.1 with 0.12.1: ``(1e-4, lr=0.123)`` trains at 0.123 with Keras ``Adam`` and with
# ``RectifiedAdam`` as ``Base``, as does ``learning_rate=0.123``.
DECOUPLED_WEIGHT_DECAY_FACTORIES = frozenset(
    {f"{_TFA}.extend_with_decoupled_weight_decay", f"{_TFA}.weight_decay_optimizers.extend_with_decoupled_weight_decay"}
)


@dataclass(frozen=True)
class OptimizerClass:
    """How a class's constructor treats ``lr=``."""

    name: str  # how findings name it: "tfa.optimizers.LazyAdam", "MyAdam"
    # Index of ``learning_rate`` among the positional parameters (None: it has none).
    position: Optional[int]
    # "keras": TensorFlow's own; "library": a known library's subclass; "inherited": a
    # class of the tree constructing like one of those; "kwargs": a class of the tree
    # whose own ``__init__`` may pass ``lr`` on through ``**kwargs`` (not provable);
    # "ignores": ``lr`` is accepted and dropped (a wrapper), "requires": ``learning_rate``
    # has no default, so ``lr=`` alone fails (see :class:`LibraryOptimizer`); "legacy": TF 2.1's
    # legacy Keras optimizer, whose own parameter is ``lr``, removed by TF 2.4 (``LEGACY_KERAS``).
    kind: str
    # The Keras or library class it comes down to (for a library class: the Keras
    # class it passes ``lr`` to, "" when it reads ``lr`` itself).
    base: str = ""
    # "kwargs" classes: whether that ``__init__`` has a ``learning_rate`` parameter of its own.
    own_parameter: bool = False


# Where the same classes are also reached: ``tf.compat.v1.keras.optimizers.Adam is
# tf.keras.optimizers.Adam`` (TF 2.1 and 2.4.1), the modules that define them, and the
# ``keras`` package (2.3's own optimizers read ``kwargs.pop("lr", learning_rate)``; from 2.4
# it is tf.keras).
_KERAS_MODULES = {
    "SGD": "gradient_descent",
    "Adam": "adam",
    "Adamax": "adamax",
    "Adagrad": "adagrad",
    "Adadelta": "adadelta",
    "Nadam": "nadam",
    "RMSprop": "rmsprop",
    "Ftrl": "ftrl",
}
KNOWN: Dict[str, OptimizerClass] = {}
for _prefix in (
    "tensorflow.keras.optimizers",
    "tensorflow.optimizers",
    "tensorflow.keras.optimizers.legacy",
    "tensorflow.compat.v1.keras.optimizers",
    "keras.optimizers",
):
    for _name in _KERAS:
        KNOWN[f"{_prefix}.{_name}"] = OptimizerClass(f"tf.keras.optimizers.{_name}", 0, "keras")
    KNOWN[f"{_prefix}.Optimizer"] = OptimizerClass("tf.keras.optimizers.Optimizer", None, "keras")
for _package in ("tensorflow.python.keras.optimizer_v2", "keras.optimizer_v2"):
    for _name, _module in _KERAS_MODULES.items():
        KNOWN[f"{_package}.{_module}.{_name}"] = OptimizerClass(f"tf.keras.optimizers.{_name}", 0, "keras")
# ``tensorflow.python.keras.optimizers.<Name>`` (also ``from tensorflow.python import keras``,
# ``keras.optimizers.Adam``) is another class: checked on TF 2.1.0, it is the legacy Keras
# optimizer (``class Adam(Optimizer)`` of python/keras/optimizers.py, ``__init__(self, lr=0.001,
# ...)``: ``lr`` is its own parameter, ``learning_rate=`` is refused by its base), not
# ``tf.keras.optimizers.Adam``; on TF 2.4.1 the module defines none of these classes (importing
# ``Adam`` from it raises ImportError). Renaming ``lr=`` would not help: the class is gone.
# The ``optimizer_v2`` modules above are the classes of ``tf.keras.optimizers`` (TF 2.4.1:
# ``optimizer_v2.adam.Adam is tf.keras.optimizers.Adam``, ``adam.Adam(lr=0.004)`` trains at 0.004).
LEGACY_KERAS = ("SGD", "RMSprop", "Adagrad", "Adadelta", "Adam", "Adamax", "Nadam")
for _name in LEGACY_KERAS:
    KNOWN[f"tensorflow.python.keras.optimizers.{_name}"] = OptimizerClass(f"tensorflow.python.keras.optimizers.{_name}", 0, "legacy", _name)
_KINDS = {"passes": "library", "reads": "library", "ignores": "ignores", "requires": "requires"}
for _entry in ADDONS_OPTIMIZERS:
    for _module in _entry.modules:
        KNOWN[f"{_module}.{_entry.name.rpartition('.')[2]}"] = OptimizerClass(
            _entry.name, _entry.position, _KINDS[_entry.treats_lr], _entry.keras_base
        )


def optimizer_class(expr: cst.BaseExpression, scope, analysis, depth: int = 0) -> Optional[OptimizerClass]:
    """What ``expr`` (a callee or a base class) is as an optimizer class, if it is one."""
    if depth > 8:
        return None
    name = qualified_name(expr, scope)
    if name is not None:
        known = KNOWN.get(name)
        if known is not None:
            return known
        lookup_ = getattr(analysis, "lookup", None)
        finder = getattr(lookup_, "optimizer_class", None)
        if finder is not None and not name.startswith("tensorflow"):
            return finder(name, analysis.path)
        return None
    if isinstance(expr, cst.Call):
        return _decoupled_weight_decay(expr, expr.func.value if isinstance(expr.func, cst.Name) else "", scope, analysis, depth)
    if isinstance(expr, cst.Name):
        found = lookup(scope, expr.value)
        if found is not None and len(found[1]) == 1 and found[1][0].kind == "class":
            binding = found[1][0]
            return class_verdict(cast(cst.ClassDef, binding.node), binding.scope, analysis, depth + 1)
        if found is not None and len(found[1]) == 1 and found[1][0].kind == "assign" and isinstance(found[1][0].value, cst.Call):
            # ``AdamW = tfa.optimizers.extend_with_decoupled_weight_decay(tf.keras.optimizers.Adam)``
            return _decoupled_weight_decay(found[1][0].value, expr.value, found[1][0].scope, analysis, depth)
    return None


def _decoupled_weight_decay(call: cst.Call, own: str, scope, analysis, depth: int) -> Optional[OptimizerClass]:
    """The class ``extend_with_decoupled_weight_decay(Base)`` makes, as an optimizer class."""
    if qualified_name(call.func, scope) not in DECOUPLED_WEIGHT_DECAY_FACTORIES or len(call.args) != 1 or call.args[0].star:
        return None
    base = optimizer_class(call.args[0].value, scope, analysis, depth + 1)
    if base is None or base.kind not in ("keras", "library", "inherited"):
        return None
    # Its ``__init__(weight_decay, *args, **kwargs)`` hands ``*args`` to the mixin, which takes
    # none (TypeError on Addons 0.12.1, TF 2.4.1): the rate is never positional.
    position = None
    # What ``lr`` reaches: a Keras class by its short name, or the library class that reads it.
    keras = base.name.rpartition(".")[2] if base.kind == "keras" else base.base or base.name
    return OptimizerClass(own or f"extend_with_decoupled_weight_decay({base.name})", position, "library", keras)


def class_verdict(node: cst.ClassDef, scope, analysis, depth: int = 0) -> Optional[OptimizerClass]:
    """The verdict for a class defined in the tree (``scope``: where it is defined)."""
    memo = scope.memo
    key = ("optimizer class", id(node))
    if key in memo:
        return memo[key]
    memo[key] = None  # guards cycles
    base = None
    for arg in node.bases:
        if arg.keyword is None and arg.star == "":
            base = optimizer_class(arg.value, scope, analysis, depth + 1)
            if base is not None:
                break
    result = None
    if base is not None:
        own = node.name.value
        init = _own_init(node)
        if base.kind in ("ignores", "requires"):
            # Constructs like the library class when it adds no ``__init__``: ``lr`` is dropped
            # (or required) there just the same.
            result = OptimizerClass(own, base.position, base.kind, base.base or base.name) if init is None else None
        elif init is None:
            result = OptimizerClass(own, base.position, "inherited", base.base if base.kind == "inherited" else base.name)
        else:
            params = init.params
            names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
            takes_kwargs = params.star_kwarg is not None
            if "lr" not in names and takes_kwargs:
                positional = [p.name.value for p in (*params.posonly_params, *params.params)][1:]
                position = positional.index("learning_rate") if "learning_rate" in positional else None
                if "learning_rate" in names and _reads_lr(init, cast(cst.Param, params.star_kwarg).name.value):  # ``takes_kwargs``: there is a ``**kwargs``
                    # ``kwargs.get("lr", learning_rate)``, as the Addons optimizers write it: ``lr``
                    # and ``learning_rate`` set the same rate, and ``lr`` left in ``**kwargs`` is
                    # accepted and dropped by the Keras base (TF 2.1 to 2.10).
                    memo[key] = OptimizerClass(own, position, "library", "")
                    return memo[key]
                result = OptimizerClass(
                    own, position, "kwargs", base.base if base.kind in ("inherited", "kwargs") else base.name, "learning_rate" in names
                )
    memo[key] = result
    return result


def _reads_lr(init: cst.FunctionDef, kwargs: str) -> bool:
    """Whether ``init`` reads ``<kwargs>.get("lr", learning_rate)``."""
    from migrate_tpu.codemod.analysis.tree import iter_tree

    for node in iter_tree(init.body):
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and isinstance(node.func.value, cst.Name)
            and node.func.value.value == kwargs
            and node.func.attr.value == "get"
            and len(node.args) == 2
            and isinstance(node.args[0].value, cst.SimpleString)
            and node.args[0].value.evaluated_value == "lr"
            and isinstance(node.args[1].value, cst.Name)
            and node.args[1].value.value == "learning_rate"
        ):
            return True
    return False


def _own_init(node: cst.ClassDef) -> Optional[cst.FunctionDef]:
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    found = None
    for statement in body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__":
            found = statement
    return found


def module_optimizer_summary(analysis) -> Tuple[Dict[str, OptimizerClass], Dict[str, str]]:
    """The module's top-level classes that are optimizers honouring ``lr=`` (for importers),
    and the names it imports from the tree: {name: qualified name}. Those are followed only
    when an importer asks for that name (``project.ProjectLookup.optimizer_class``): following
    every import of a package's ``__init__`` at once summarised each module it re-exports
    (on tf-models-official 2.4.0, 45 summaries for one optimizer found)."""
    found: Dict[str, OptimizerClass] = {}
    reexported: Dict[str, str] = {}
    module = analysis.module_scope
    for name, bindings in module.bindings.items():
        if len(bindings) == 1 and bindings[0].kind == "class":
            verdict = class_verdict(bindings[0].node, module, analysis)
            if verdict is not None:
                found[name] = verdict
        elif len(bindings) == 1 and bindings[0].kind == "import":
            # Re-exported: ``from .adam import MyAdam`` in a package's ``__init__``.
            dotted = qualified_name(cst.Name(name), module)
            if dotted is None:
                continue
            known = KNOWN.get(dotted)
            if known is not None:
                found[name] = known
            elif not dotted.startswith("tensorflow"):
                reexported[name] = dotted
        elif len(bindings) == 1 and bindings[0].kind == "assign":
            # Made by ``extend_with_decoupled_weight_decay``.
            verdict = optimizer_class(cst.Name(name), module, analysis)
            if verdict is not None:
                found[name] = verdict
    return found, reexported
