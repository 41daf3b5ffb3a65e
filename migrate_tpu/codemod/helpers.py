"""Small pieces several rules share: arguments of calls, decorators, literals."""

from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

def argument(call: cst.Call, position: Optional[int], keyword: Optional[str]) -> Optional[cst.Arg]:
    """The argument bound to a parameter, given as positional index and/or name."""
    if keyword is not None:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == keyword:
                return arg
    if position is not None:
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        if any(arg.star == "*" for arg in call.args[: position + 1]):
            return None
        if position < len(positional):
            return positional[position]
    return None


def has_star_arguments(call: cst.Call) -> bool:
    return any(arg.star for arg in call.args)


def add_decorator(function: cst.FunctionDef, expression: str) -> cst.FunctionDef:
    """Add ``@expression`` as the outermost decorator (below staticmethod/classmethod)."""
    decorator = cst.Decorator(decorator=cst.parse_expression(expression))
    decorators = list(function.decorators)
    index = 0
    while index < len(decorators) and _plain_name(decorators[index].decorator) in (
        "staticmethod",
        "classmethod",
    ):
        index += 1
    if index == 0 and decorators:
        # Keep the first decorator's leading comments above the new one.
        decorator = decorator.with_changes(leading_lines=decorators[0].leading_lines)
        decorators[0] = decorators[0].with_changes(leading_lines=())
    decorators.insert(index, decorator)
    return function.with_changes(decorators=decorators)


def _plain_name(expr: cst.BaseExpression) -> Optional[str]:
    return expr.value if isinstance(expr, cst.Name) else None


def is_literal(expr: cst.BaseExpression, values: Iterable[object]) -> bool:
    """Whether ``expr`` is one of the given Python literals (True, False, None, ints, strings)."""
    for value in values:
        if isinstance(value, bool) or value is None:
            if isinstance(expr, cst.Name) and expr.value == repr(value):
                return True
        elif isinstance(value, str):
            if isinstance(expr, cst.SimpleString) and expr.evaluated_value == value:
                return True
        elif isinstance(value, int):
            if isinstance(expr, cst.Integer) and expr.evaluated_value == value:
                return True
    return False


def fix_commas(new_args: list, original_args) -> list:
    """Commas after removing or reordering call arguments.

    Every argument but the last gets a comma; the last keeps the original
    call's trailing-comma style, unless its own comma carries a comment (a
    trailing comma is valid in a call, and the comment must survive).
    """
    if not new_args:
        return new_args
    last_comma = original_args[-1].comma if original_args else cst.MaybeSentinel.DEFAULT
    result = []
    for index, arg in enumerate(new_args):
        if index < len(new_args) - 1:
            if arg.comma is cst.MaybeSentinel.DEFAULT:
                arg = arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        else:
            own = arg.comma
            keeps_comment = isinstance(own, cst.Comma) and isinstance(own.whitespace_after, cst.ParenthesizedWhitespace)
            if keeps_comment:
                # The closing parenthesis keeps the indentation it had.
                closing = ""
                if isinstance(last_comma, cst.Comma) and isinstance(last_comma.whitespace_after, cst.ParenthesizedWhitespace):
                    closing = last_comma.whitespace_after.last_line.value
                whitespace = own.whitespace_after.with_changes(last_line=cst.SimpleWhitespace(closing))
                arg = arg.with_changes(comma=own.with_changes(whitespace_after=whitespace))
            else:
                arg = arg.with_changes(comma=last_comma)
        result.append(arg)
    return result
