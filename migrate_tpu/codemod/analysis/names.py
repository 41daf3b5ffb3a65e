"""What a name or dotted expression stands for, however TensorFlow was imported.

``import tensorflow as tf2``, ``from tensorflow import distribute as tfd``,
``import tensorflow.compat.v2 as tf``, ``tfv = tensorflow.compat.v2`` and
``from tensorflow.distribute.experimental import TPUStrategy`` all lead to the
same canonical names (``tensorflow.distribute.experimental.TPUStrategy``).
A local object that merely happens to be called ``tf`` (a parameter, an
assignment, a loop variable) resolves to nothing, and nothing is touched.
"""

from __future__ import annotations

from typing import List, Optional, Set, Tuple, cast

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Binding, Scope

TENSORFLOW = "tensorflow"
# The names a fix may import TensorFlow as, in the order it tries them.
IMPORT_ALIASES = ("tf", TENSORFLOW)

# Spellings of the TF 2 API that mean the same as ``tensorflow`` itself; the v2
# API is also reached from a ``compat.v1`` alias (``tf.compat.v2.keras`` after
# ``import tensorflow.compat.v1 as tf``). ``tensorflow.compat.v1.*`` itself is
# another API and keeps its name.
_SAME_AS_TENSORFLOW = (
    "tensorflow.compat.v1.compat.v2",
    "tensorflow.compat.v2",
    "tensorflow_core.compat.v1.compat.v2",
    "tensorflow_core.compat.v2",
    "tensorflow_core",
)


def canonical(name: str) -> str:
    for prefix in _SAME_AS_TENSORFLOW:
        if name == prefix or name.startswith(prefix + "."):
            return canonical(TENSORFLOW + name[len(prefix) :])
    return name


def is_tensorflow(name: Optional[str]) -> bool:
    return name is not None and (name == TENSORFLOW or name.startswith(TENSORFLOW + "."))


def lookup(scope: Scope, name: str) -> Optional[Tuple[Scope, List[Binding]]]:
    """The scope that binds ``name`` as seen from ``scope`` (Python's LEGB, less builtins)."""
    current: Optional[Scope] = scope
    first = True
    while current is not None:
        if name in current.globals:
            current = current.module()
        if current.kind == "class" and not first:
            # A class body is not visible from the functions nested in it.
            current = current.parent
            continue
        bindings = current.bindings.get(name)
        if bindings:
            return current, bindings
        first = False
        current = current.parent
    return None


def _is_none(node: Optional[cst.CSTNode]) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def qualified_name(expr: cst.CSTNode, scope: Scope, _depth: int = 0) -> Optional[str]:
    """The dotted name ``expr`` refers to, or None when it is not an import.

    Every binding of the head name must agree; ``x = None`` beside an import
    (the ``try: import ... except ImportError: x = None`` shim) is ignored.
    """
    if _depth > 8:
        return None
    if isinstance(expr, cst.Attribute):
        head = qualified_name(expr.value, scope, _depth + 1)
        # ``canonical``: ``tf.compat.v2`` written after ``import tensorflow.compat.v1 as tf``.
        return canonical(f"{head}.{expr.attr.value}") if head else None
    if not isinstance(expr, cst.Name):
        return None
    found = lookup(scope, expr.value)
    if found is None:
        return None
    owner, bindings = found
    # What a name stands for depends only on the scope that binds it: answer once.
    key = ("qualified", expr.value)
    if key in owner.memo:
        return cast("Optional[str]", owner.memo[key])
    owner.memo[key] = None  # guards cycles such as ``a = b; b = a``
    result = _bindings_name(bindings, _depth)
    owner.memo[key] = result
    return result


def _bindings_name(bindings: List[Binding], _depth: int) -> Optional[str]:
    results = set()
    for binding in bindings:
        if binding.kind == "import":
            results.add(canonical(cast(str, binding.target)))  # an import binding always has its target
        elif binding.kind == "assign" and _is_none(binding.value):
            continue
        elif binding.kind == "assign" and isinstance(binding.value, (cst.Name, cst.Attribute)):
            target = qualified_name(binding.value, binding.scope, _depth + 1)
            if target is None:
                return None
            results.add(target)
        else:
            return None
    if len(results) == 1:
        return results.pop()
    return None


def possible_names(expr: cst.CSTNode, scope: Scope, _depth: int = 0) -> Set[str]:
    """Every dotted name ``expr`` may refer to: one per binding of its head name that is
    an import (or an alias of one), where :func:`qualified_name` needs all of them to
    agree. ``try: from a import m`` / ``except ImportError: from b import m`` gives both;
    a never-silent check asks whether one of them is a moved API."""
    if _depth > 8:
        return set()
    if isinstance(expr, cst.Attribute):
        return {canonical(f"{head}.{expr.attr.value}") for head in possible_names(expr.value, scope, _depth + 1)}
    if not isinstance(expr, cst.Name):
        return set()
    found = lookup(scope, expr.value)
    if found is None:
        return set()
    owner, bindings = found
    # As ``qualified_name``: once per binding scope and name. Asked for every reference, it
    # read every binding each time: a module importing ``tf`` in each of 1,000 blocks took
    # 1,000,000 steps (benchmarks/run.py's growth check).
    key = ("possible", expr.value)
    known = owner.memo.get(key)
    if isinstance(known, frozenset):  # what this function keeps there
        return set(known)
    owner.memo[key] = frozenset()  # guards cycles such as ``a = b; b = a``
    names: Set[str] = set()
    for binding in bindings:
        if binding.kind == "import":
            names.add(canonical(cast(str, binding.target)))  # an import binding always has its target
        elif binding.kind == "assign" and isinstance(binding.value, (cst.Name, cst.Attribute)):
            names |= possible_names(binding.value, binding.scope, _depth + 1)
    owner.memo[key] = frozenset(names)
    return names


def _own_aliases(scope: Scope) -> List[Tuple[str, str]]:
    """Names this scope itself binds to an imported module or symbol (and nothing else)."""
    cached = cast("Optional[List[Tuple[str, str]]]", scope.memo.get("own aliases"))
    if cached is None:
        cached = []
        for name, bindings in scope.bindings.items():
            if bindings and all(b.kind == "import" or (b.kind == "assign" and _is_none(b.value)) for b in bindings):
                targets = {canonical(cast(str, b.target)) for b in bindings if b.kind == "import"}
                if len(targets) == 1:
                    cached.append((name, targets.pop()))
        scope.memo["own aliases"] = cached
    return cached


def module_aliases(scope: Scope) -> List[Tuple[str, str]]:
    """Names visible from ``scope`` that stand for an imported module or symbol."""
    aliases: List[Tuple[str, str]] = []
    hidden: set = set()
    current: Optional[Scope] = scope
    while current is not None:
        for name, target in _own_aliases(current):
            if name not in hidden:
                aliases.append((name, target))
        if current.parent is not None:  # the outermost scope hides nothing further out
            hidden.update(current.bindings)
        current = current.parent
    return aliases


def expression_for(qualified: str, scope: Scope, ready=None) -> Tuple[str, Optional[Tuple[str, Optional[str]]]]:
    """Source text naming ``qualified`` from ``scope``, reusing the file's aliases.

    Returns the text and the import to add (``("tensorflow", "tf")``) when the
    file has no usable alias yet. ``ready(name)``, when given, tells whether an
    alias is bound yet where the text goes (``Analysis.name_ready``).
    """
    best: Optional[Tuple[str, str]] = None
    for name, target in module_aliases(scope):
        if ready is not None and not ready(name):
            continue
        if qualified == target or qualified.startswith(target + "."):
            if best is None or len(target) > len(best[1]):
                best = (name, target)
    if best is not None:
        name, target = best
        return name + qualified[len(target) :], None
    module = scope.module()
    for alias in IMPORT_ALIASES:
        if lookup(scope, alias) is None and alias not in module.bindings:
            rest = qualified[len(TENSORFLOW) :]
            return alias + rest, (TENSORFLOW, alias if alias != TENSORFLOW else None)
    raise LookupError(f"no free name to import TensorFlow for {qualified}")
