"""Where a reference to a moved symbol sits, and so what may be done to it.

A moved class is not only called: it is subclassed, checked with ``isinstance``,
named in annotations, bound to an alias, used as a default value. Each of these
positions allows a different fix (see ``rules/tables``' ``TableRule``); this module only
tells them apart, from the chain of nodes that leads to the reference.
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst

CALL = "call"
ATTRIBUTE = "attribute reference"
BASE = "base class"
TYPE_CHECK = "isinstance/issubclass"
ANNOTATION = "annotation"
ALIAS = "alias assignment"
DEFAULT = "default argument"
DECORATOR = "decorator"
IMPORT = "from-import"
STRING = "string annotation"
NAME_LOOKUP = "getattr/hasattr string"

# Every position a reference can take, in the order the docs list them.
ALL = (CALL, ATTRIBUTE, BASE, TYPE_CHECK, ANNOTATION, STRING, ALIAS, DEFAULT, DECORATOR, IMPORT, NAME_LOOKUP)

_TYPE_CHECKS = ("isinstance", "issubclass")


def position_of(stack: Sequence[cst.CSTNode]) -> str:
    """The position of ``stack[-1]`` (a Name or Attribute), given its ancestors."""
    node = stack[-1]
    parent = stack[-2] if len(stack) > 1 else None
    if isinstance(parent, cst.Call) and parent.func is node:
        return CALL
    if isinstance(parent, cst.Decorator):
        return DECORATOR
    if isinstance(parent, cst.Param) and parent.default is node:
        return DEFAULT
    if isinstance(parent, cst.Assign) and parent.value is node:
        return ALIAS
    if isinstance(parent, cst.AnnAssign) and parent.value is node:
        return ALIAS
    if isinstance(parent, cst.Arg) and len(stack) > 2:
        grand = stack[-3]
        if isinstance(grand, cst.ClassDef) and any(base is parent for base in grand.bases):
            return BASE
        if _is_type_check_classes(grand, parent):
            return TYPE_CHECK
    if isinstance(parent, cst.Element) and len(stack) > 4 and isinstance(stack[-3], cst.Tuple):
        if isinstance(stack[-4], cst.Arg) and _is_type_check_classes(stack[-5], stack[-4]):
            return TYPE_CHECK
    for ancestor in reversed(stack[:-1]):
        # A class inside a subscript is a type expression (``Union[A, B]``,
        # ``Optional[A]``, ``Type[A]``), written in an annotation or a type alias.
        if isinstance(ancestor, (cst.Annotation, cst.SubscriptElement)):
            return ANNOTATION
        if isinstance(ancestor, (cst.BaseStatement, cst.BaseSmallStatement, cst.Lambda, cst.Call)):
            break
    return ATTRIBUTE


def _is_type_check_classes(call: cst.CSTNode, arg: cst.Arg) -> bool:
    """``arg`` is the class argument of ``isinstance``/``issubclass``."""
    return (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Name)
        and call.func.value in _TYPE_CHECKS
        and len(call.args) == 2
        and call.args[1] is arg
    )


def in_annotation(stack: Sequence[cst.CSTNode]) -> bool:
    for ancestor in reversed(stack[:-1]):
        if isinstance(ancestor, cst.Annotation):
            return True
        if isinstance(ancestor, (cst.BaseStatement, cst.BaseSmallStatement)):
            return False
    return False
