"""TPU301 before LibCST: ``StrategyFacts.kinds`` over-approximated on the ``ast`` tree, for the
rule's ``may_fire`` (``stages/syntax_stage.py``): whether the receiver of a ``run`` call may
be a TPU strategy.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, FrozenSet, Optional, cast

from migrate_tpu.codemod.analysis.strategies import STRATEGY_LIKE, TPU
from migrate_tpu.codemod.foundation.receivers import name_and_attributes

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.stages.source_index import SourceIndex


def strategy_word(name: str) -> bool:
    """The last name of every strategy constructor and of ``get_strategy`` (``CONSTRUCTORS``)."""
    return name.endswith("Strategy") or name == "get_strategy"


def name_may_be_tpu(index: SourceIndex, name: str) -> bool:
    """Whether ``StrategyFacts`` may find a TPU strategy in ``name``: True unless every
    binding of it anywhere in the file is one its ``_bindings_kinds`` gives no TPU kind."""
    if STRATEGY_LIKE.match(name):
        return True
    for kind, node in index.bindings(name):
        if kind == "import":
            # The project's modules are asked, as the rule does; a relative import (None) is not followed here.
            if not isinstance(node, str) or (index.lookup is not None and tpu_kind(index.lookup.factory_kinds(node, index.path, call=False))):
                return True
        elif kind == "param":
            if node is not None:  # an annotation may name a strategy class
                return True
        elif kind == "assign":
            if value_may_be_tpu(index, node):
                return True
        else:
            return True
    return False


def attribute_may_be_tpu(index: SourceIndex, place: int) -> bool:
    """Whether ``StrategyFacts`` may find a TPU strategy in the receiver of ``calls[place]``
    when it is no plain name, as its ``_attribute_kinds`` reads ``a.b``: a name like a
    strategy's (``config.strategy``) may be one; otherwise only ``self.X`` in a method and an
    attribute of an imported module, which the tree is asked about, can be, never ``a.b.c``
    (``tf.compat.v1.app.run(main)``). On tensor2tensor 1.15.7, ``tf.app.run(main)`` sent two
    files of TF1 code to LibCST. Any other receiver (a call's result) may be one."""
    receiver = cast(ast.Attribute, index.calls_node(place).func).value  # ``receiver.run(...)``
    if not isinstance(receiver, ast.Attribute):
        return True
    if STRATEGY_LIKE.match(receiver.attr):
        return True
    if not isinstance(receiver.value, ast.Name):
        return False
    values = index.self_attribute_values(place)
    if values is not None:
        # ``self.X``: what the class's methods give it, unless ``value_may_be_tpu`` rules out
        # every value (none given: only a name like a strategy's, ruled out above, may be one).
        # On TF-Agents 0.5.0, ``self._session.run(...)`` after ``self._session =
        # tf.compat.v1.Session()`` kept three files of TF1 code parsed.
        return any(value_may_be_tpu(index, value) for value in values)
    targets = index.imported_only(receiver.value.id)
    if targets is None:
        return True  # bound otherwise in the file: not followed here
    return index.lookup is not None and any(
        tpu_kind(index.lookup.factory_kinds(f"{target}.{receiver.attr}", index.path, call=False)) for target in targets
    )


def value_may_be_tpu(index: SourceIndex, value: object) -> bool:
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
    if strategy_word(last):
        return True
    bindings = index.bindings(head)
    if not bindings:
        return False  # unbound here (a builtin): no qualified name
    if all(kind == "param" for kind, _ in bindings):
        return False  # ``self.session()``: a parameter has no qualified name
    targets = index.imported_only(head)
    if targets is None:
        return True  # a def of this file (its returns), an alias, ...: not followed here
    if isinstance(func, ast.Name) and any(strategy_word(t.rpartition(".")[2]) for t in targets):
        return True  # ``from tensorflow.distribute import TPUStrategy as T``
    # A module's own function may return a strategy (``factory_kinds``), never TensorFlow's:
    # the tree is asked what the callee gives, as ``StrategyFacts`` asks it (a class of the
    # tree, a driver or an environment, gives none; on TF-Agents 0.5.0, 12 of the 19 files
    # LibCST parsed for nothing called ``driver.run()`` on one).
    if index.lookup is None:
        return False
    return any(
        not target.startswith("tensorflow") and tpu_kind(index.lookup.factory_kinds(target + rest, index.path))
        for target in targets
    )


def tpu_kind(kinds: Optional[FrozenSet[str]]) -> bool:
    """Whether ``StrategyFacts``' kinds hold a TPU strategy (``may_be_tpu``)."""
    return kinds is not None and TPU in kinds
