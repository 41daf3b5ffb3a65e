"""Which classes are Keras optimizers whose constructor honours ``lr=``, and how.

``lr=`` is the deprecated spelling of ``learning_rate=`` in every Keras optimizer
of TF 2.0 to 2.10 (``kwargs.get("lr", learning_rate)``: given both, ``lr``
wins). A class passes it on when its constructor hands ``**kwargs`` to such an
optimizer, as the optimizers of TensorFlow Addons do (checked in the Addons
source of December 2020: ``LazyAdam``, ``AdamW`` and ``SGDW`` pass ``**kwargs``
to Keras ``Adam``/``SGD``; ``RectifiedAdam``, ``LAMB``, ``NovoGrad``, ``Yogi``
and ``ProximalAdagrad`` read ``kwargs.get("lr", learning_rate)`` themselves; the
wrappers ``Lookahead``, ``MovingAverage`` and ``SWA`` have no learning rate of
their own, and ``ConditionalGradient`` requires ``learning_rate``, so ``lr=``
alone never worked there).

A class of the tree is followed through its bases, also into other modules of
the tree (``project.ProjectLookup``): one that defines no ``__init__`` of its own
constructs like its base; one whose ``__init__`` takes ``learning_rate`` and
``**kwargs`` (and no ``lr``) may pass ``lr`` on, which the analysis cannot prove.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

import libcst as cst

from migrate_tpu.codemod.names import lookup, qualified_name

_KERAS = ("SGD", "Adam", "Adamax", "Adagrad", "Adadelta", "Nadam", "RMSprop", "Ftrl")
# TensorFlow Addons optimizers that honour ``lr=``: the index of ``learning_rate``
# among their positional parameters (``AdamW(weight_decay, learning_rate, ...)``),
# and the Keras optimizer they pass it to ("": they read it themselves).
_ADDONS = {
    "LazyAdam": (0, "Adam"),
    "AdamW": (1, "Adam"),
    "SGDW": (1, "SGD"),
    "RectifiedAdam": (0, ""),
    "LAMB": (0, ""),
    "NovoGrad": (0, ""),
    "Yogi": (0, ""),
    "ProximalAdagrad": (0, ""),
}
_ADDONS_MODULES = {
    "LazyAdam": "lazy_adam",
    "AdamW": "weight_decay_optimizers",
    "SGDW": "weight_decay_optimizers",
    "RectifiedAdam": "rectified_adam",
    "LAMB": "lamb",
    "NovoGrad": "novograd",
    "Yogi": "yogi",
    "ProximalAdagrad": "proximal_adagrad",
}


@dataclass(frozen=True)
class OptimizerClass:
    """How a class's constructor treats ``lr=``."""

    name: str  # how findings name it: "tfa.optimizers.LazyAdam", "MyAdam"
    # Index of ``learning_rate`` among the positional parameters (None: it has none).
    position: Optional[int]
    # "keras": TensorFlow's own; "library": a known library's subclass; "inherited": a
    # class of the tree constructing like one of those; "kwargs": a class of the tree
    # whose own ``__init__`` may pass ``lr`` on through ``**kwargs`` (not provable).
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
for _name, (_position, _keras) in _ADDONS.items():
    for _module in ("tensorflow_addons.optimizers", f"tensorflow_addons.optimizers.{_ADDONS_MODULES[_name]}"):
        KNOWN[f"{_module}.{_name}"] = OptimizerClass(f"tfa.optimizers.{_name}", _position, "library", _keras)


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
    if isinstance(expr, cst.Name):
        found = lookup(scope, expr.value)
        if found is not None and len(found[1]) == 1 and found[1][0].kind == "class":
            binding = found[1][0]
            return class_verdict(binding.node, binding.scope, analysis, depth + 1)
    return None


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
        if init is None:
            result = OptimizerClass(own, base.position, "inherited", base.base if base.kind == "inherited" else base.name)
        else:
            params = init.params
            names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
            takes_kwargs = params.star_kwarg is not None
            if "lr" not in names and takes_kwargs:
                positional = [p.name.value for p in (*params.posonly_params, *params.params)][1:]
                position = positional.index("learning_rate") if "learning_rate" in positional else None
                result = OptimizerClass(
                    own, position, "kwargs", base.base if base.kind in ("inherited", "kwargs") else base.name, "learning_rate" in names
                )
    memo[key] = result
    return result


def _own_init(node: cst.ClassDef) -> Optional[cst.FunctionDef]:
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    found = None
    for statement in body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__":
            found = statement
    return found


def module_optimizer_summary(analysis) -> Dict[str, OptimizerClass]:
    """The module's top-level classes that are optimizers honouring ``lr=`` (for importers)."""
    found: Dict[str, OptimizerClass] = {}
    module = analysis.module_scope
    for name, bindings in module.bindings.items():
        if len(bindings) == 1 and bindings[0].kind == "class":
            verdict = class_verdict(bindings[0].node, module, analysis)
            if verdict is not None:
                found[name] = verdict
        elif len(bindings) == 1 and bindings[0].kind == "import":
            # Re-exported (``from .adam import MyAdam`` in a package's ``__init__``).
            verdict = optimizer_class(cst.Name(name), module, analysis)
            if verdict is not None:
                found[name] = verdict
    return found
