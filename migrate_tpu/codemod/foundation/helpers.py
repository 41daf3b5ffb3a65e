"""Small pieces several rules share: arguments of calls, decorators, literals."""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence

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
    """Commas after reordering call arguments (or removing some: see ``remove_arguments``).

    Every argument but the last gets a comma, followed by what followed the argument in
    its place before (a line break stays where it was) or a space; the last keeps what
    followed the original call's last argument (its trailing-comma style, a ``)`` on a line
    of its own). A comment after an argument goes with it; after the last one, it keeps
    its comma (a trailing comma is valid in a call, and the comment must survive) and the
    ``)`` goes to the next line, indented as the original ``)`` was.
    """
    if not new_args:
        return new_args
    end = after_argument(original_args[-1]) if original_args else cst.SimpleWhitespace("")
    trailing = bool(original_args) and isinstance(original_args[-1].comma, cst.Comma)
    result = []
    for index, arg in enumerate(new_args):
        own = after_argument(arg)
        if index < len(new_args) - 1:
            if has_comment(own):
                arg = followed_by(arg, own, True)
            else:
                place = after_argument(original_args[index]) if index < len(original_args) - 1 else None
                gap = place if place is not None and not has_comment(place) else cst.SimpleWhitespace(" ")
                arg = followed_by(arg, gap, True)
        elif isinstance(own, cst.ParenthesizedWhitespace) and has_comment(own):
            closing = end.last_line if isinstance(end, cst.ParenthesizedWhitespace) else cst.SimpleWhitespace("")
            indent = end.indent if isinstance(end, cst.ParenthesizedWhitespace) else own.indent
            arg = followed_by(arg, own.with_changes(last_line=closing, indent=indent), isinstance(arg.comma, cst.Comma))
        else:
            if isinstance(end, cst.ParenthesizedWhitespace) and has_comment(end):
                end = end.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])  # that comment went with its argument
            arg = followed_by(arg, end, trailing)
        result.append(arg)
    return result


def after_argument(arg: cst.Arg) -> cst.BaseParenthesizableWhitespace:
    """The whitespace after an argument: after its comma, when it has one."""
    return arg.comma.whitespace_after if isinstance(arg.comma, cst.Comma) else arg.whitespace_after_arg


def followed_by(arg: cst.Arg, whitespace: cst.BaseParenthesizableWhitespace, comma: bool) -> cst.Arg:
    """``arg`` with ``whitespace`` after it, after a comma or none."""
    if comma:
        own = arg.comma if isinstance(arg.comma, cst.Comma) else cst.Comma()
        return arg.with_changes(comma=own.with_changes(whitespace_after=whitespace), whitespace_after_arg=cst.SimpleWhitespace(""))
    return arg.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=whitespace)


def has_comment(whitespace: cst.BaseParenthesizableWhitespace) -> bool:
    """Whether a line break between arguments holds a comment (at a line's end or on a line of its own)."""
    return isinstance(whitespace, cst.ParenthesizedWhitespace) and (
        whitespace.first_line.comment is not None or any(line.comment is not None for line in whitespace.empty_lines)
    )


def remove_arguments(call: cst.Call, replacements: Sequence[Optional[cst.Arg]]) -> cst.Call:
    """``call`` with each of its arguments replaced by the one at its index in ``replacements``,
    or removed where that is None, laid out as a person would leave it.

    An argument alone on its line takes the line with it (no blank line is left), and with
    it the comments that speak only of it: the comment lines right above it (with no blank
    line between) and the comment at the end of its line. A comment on a line that holds
    other arguments stays. When the last argument goes, the ``)`` joins the line above, the
    call's trailing comma (or its absence) and a ``)`` on a line of its own kept as they
    were; where a comment stays at the end of the line above, the ``)`` keeps a line of its
    own. An argument sharing its line leaves the others there, with the spacing that
    separated them.
    """
    args: List[cst.Arg] = [old if new is None else new for old, new in zip(call.args, replacements)]
    removed = [new is None for new in replacements]
    lead = call.whitespace_before_args
    removed_last = bool(removed) and removed[-1]
    for index in reversed(range(len(args))):
        if not removed[index]:
            continue
        arg = args[index]
        last = index == len(args) - 1
        before = lead if index == 0 else after_argument(args[index - 1])
        after = after_argument(arg)
        gap: cst.BaseParenthesizableWhitespace
        if isinstance(before, cst.ParenthesizedWhitespace) and (last or isinstance(after, cst.ParenthesizedWhitespace)):
            # Alone on its line: the comment lines right above it go with it.
            kept = list(before.empty_lines)
            while kept and kept[-1].comment is not None:
                kept.pop()
            if isinstance(after, cst.ParenthesizedWhitespace):
                gap = after.with_changes(first_line=before.first_line, empty_lines=kept + list(after.empty_lines))
            elif before.first_line.comment is None and not any(line.comment is not None for line in kept):
                gap = after  # the ``)`` joins the line above
            else:
                gap = before.with_changes(empty_lines=kept)
        elif last or isinstance(after, cst.ParenthesizedWhitespace):
            gap = after
        else:
            gap = before
        del args[index]
        del removed[index]
        if index == 0:
            lead = gap if args or has_comment(gap) else cst.SimpleWhitespace("")
        else:
            # The last argument gone: the call keeps its trailing comma, or its lack of one.
            comma = not last or isinstance(arg.comma, cst.Comma)
            args[index - 1] = followed_by(args[index - 1], gap, comma)
    if args and call.args and removed_last:
        closing = after_argument(call.args[-1])
        end = after_argument(args[-1])
        if not isinstance(closing, cst.ParenthesizedWhitespace) and isinstance(end, cst.ParenthesizedWhitespace) and not has_comment(end):
            # The comment that kept the ``)`` on a line of its own went with a later removal.
            args[-1] = followed_by(args[-1], closing, isinstance(args[-1].comma, cst.Comma))
    return call.with_changes(args=args, whitespace_before_args=lead)
