"""Source lines of a statement, read from the standard library's tree of the same source.

The patch names the rules behind each hunk, so each applied change needs the lines it
edits. LibCST's positions cost a code generation pass over the module (about 15% more
per file on the all-TF benchmark tree); the standard library's tree of the source,
which the migration already builds to splice its output, has every statement's lines
for free. The two trees list statements in the same order, so a change's path of
LibCST nodes (module first) is followed statement by statement through both.
"""

from __future__ import annotations

import ast
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union, cast

import libcst as cst

Lines = Tuple[int, int]
# A statement that begins a line of its own, the line of its first token, and the indented
# blocks around it, outermost first (``StatementLines.start_of``).
Start = Tuple[cst.CSTNode, int, Tuple[cst.IndentedBlock, ...]]
# The ``ast`` side of a LibCST statement: its node, or for a line of ``a; b`` its small
# statements' nodes.
Paired = Union[ast.stmt, List[ast.stmt]]


def leading_lines(statement: cst.CSTNode) -> List[cst.EmptyLine]:
    """The comment and blank lines LibCST generates before ``statement``'s first token: its
    own, then (for a decorated one) those before its first decorator."""
    leading = list(getattr(statement, "leading_lines", ()))
    decorators = getattr(statement, "decorators", ())
    if decorators:
        leading += decorators[0].leading_lines
    return leading


def line_offsets(text, newline="\n") -> List[int]:
    """``offsets[n]``: where line ``n`` (1-based) begins in ``text`` (``str`` or ``bytes``,
    with ``newline`` of the same type); one more entry, the text's end, closes the last line."""
    offsets = [0, 0]
    find = text.find
    at = find(newline)
    while at >= 0:
        offsets.append(at + 1)
        at = find(newline, at + 1)
    offsets.append(len(text))
    return offsets


class StatementLines:
    """Lines of the statements on LibCST paths in one module, from the ``ast`` of its source.

    The statement pairs of each block are matched once and kept by the block's owner,
    so a file with many changes costs one pass over its statements, not one per change.
    """

    def __init__(self, module: cst.Module, tree: ast.Module) -> None:
        self.module = module
        self.tree = tree
        self._pairs: Dict[int, Optional[Dict[int, Paired]]] = {}

    def _pairs_of(self, owner: cst.CSTNode, tree) -> Optional[Dict[int, Paired]]:
        key = id(owner)  # owners are nodes of ``self.module``, alive while it is
        if key not in self._pairs:
            # Every owner but the module is a compound statement (``of`` and ``start_of`` check).
            found = _units(owner.body, tree.body) if owner is self.module else _suite_pairs(cast(cst.BaseCompoundStatement, owner), tree)
            self._pairs[key] = None if found is None else {id(c): a for c, a in found}
        return self._pairs[key]

    def of(self, path: Sequence[cst.CSTNode]) -> Optional[Lines]:
        """First and last line of the innermost statement on ``path`` (module first) that
        holds its last node; a compound statement's header alone when the node is in its
        header (a decorator, an ``if`` test) or is a ``def``/``class`` itself (a fix adds a
        decorator there). None when the two trees do not line up."""
        if not path or path[0] is not self.module:
            return None
        pairs = self._pairs_of(self.module, self.tree)
        found: Optional[Lines] = None
        index = 1
        while index < len(path) and pairs is not None:
            node = path[index]
            match = pairs.get(id(node))
            if match is None:
                index += 1  # a suite or clause between a statement and its body
                continue
            if isinstance(node, cst.SimpleStatementLine):
                statements = cast("List[ast.stmt]", match)  # ``_units`` pairs a line with its small statements' nodes
                found = (statements[0].lineno, statements[-1].end_lineno or statements[-1].lineno)
                if index + 1 < len(path):  # narrow to one of ``a; b``
                    for position, child in enumerate(node.body):
                        if child is path[index + 1] and position < len(statements):
                            found = (statements[position].lineno, statements[position].end_lineno or statements[position].lineno)
                return found
            if isinstance(match, list):
                return None
            found = (match.lineno, match.end_lineno or match.lineno)
            if not isinstance(node, cst.BaseCompoundStatement):  # a small statement of ``if x: a; b``
                return found
            header = _header(match)
            if index == len(path) - 1:
                return header if isinstance(node, (cst.FunctionDef, cst.ClassDef)) else found
            pairs = self._pairs_of(node, match)
            if pairs is None:
                return header
            if not any(id(later) in pairs for later in path[index + 1 :]):
                return header  # the change is in the header
            index += 1
        return found

    def start_of(self, path: Sequence[cst.CSTNode]) -> Optional[Start]:
        """The innermost statement on ``path`` (module first) that begins a line of its own
        (in the module or an indented block; not an ``elif``, not ``b`` of ``if x: a; b``),
        the line of its first token (its first decorator's), and the indented blocks it
        sits in, outermost first: enough to generate it alone from where it begins
        (``positions``). None when no statement of the path lines up in both trees."""
        if not path or path[0] is not self.module:
            return None
        pairs = self._pairs_of(self.module, self.tree)
        found: Optional[Start] = None
        blocks: List[cst.IndentedBlock] = []
        index = 1
        while index < len(path) and pairs is not None:
            node = path[index]
            match = pairs.get(id(node))
            if match is None:
                if isinstance(node, cst.IndentedBlock):
                    blocks.append(node)
                index += 1  # a suite or clause between a statement and its body
                continue
            if isinstance(node, cst.If) and isinstance(path[index - 1], cst.If) and cast(cst.If, path[index - 1]).orelse is node:
                # An ``elif`` is generated with its ``if``; the statements in its blocks are not.
                pairs = self._pairs_of(node, match)
                index += 1
                continue
            if not isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) or (isinstance(match, list) and not match):
                break
            first = match[0] if isinstance(match, list) else match
            decorators = getattr(node, "decorators", ())
            listed = getattr(first, "decorator_list", None)
            if bool(decorators) != bool(listed):
                break
            found = (node, listed[0].lineno if listed else first.lineno, tuple(blocks))
            if not isinstance(node, cst.BaseCompoundStatement):
                break
            pairs = self._pairs_of(node, match)
            index += 1
        return found


def _header(statement: ast.stmt) -> Lines:
    first = min([d.lineno for d in getattr(statement, "decorator_list", ())] + [statement.lineno])
    body = getattr(statement, "body", None)
    last = body[0].lineno - 1 if body else statement.lineno
    return first, max(first, last)


def _units(statements: Sequence[cst.CSTNode], trees: List[ast.stmt]):
    """(LibCST statement, its ``ast`` node) in order; a line of ``a; b`` gets the list of
    its small statements' nodes. None when the counts differ."""
    pairs: List[Tuple[cst.CSTNode, Optional[Paired]]] = []
    at = 0
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            count = len(statement.body)
            pairs.append((statement, list(trees[at : at + count])))
            at += count
        else:  # a compound statement, or a small statement of a one-line suite
            pairs.append((statement, trees[at] if at < len(trees) else None))
            at += 1
    if at != len(trees) or any(a is None or a == [] for _, a in pairs):
        return None
    return pairs


def _suite_pairs(statement: cst.BaseCompoundStatement, tree: ast.stmt):
    """Every (LibCST statement, ``ast`` node) pair in the blocks of a compound statement."""
    pairs = []
    for block, trees in _blocks(statement, tree):
        found = _units(_statements_of(block), trees)
        if found is None:
            return None
        pairs += found
    return pairs


def _statements_of(block) -> Sequence[cst.CSTNode]:
    if isinstance(block, list):
        return block
    return block.body  # IndentedBlock: statements; SimpleStatementSuite: small statements


def _blocks(statement: cst.BaseCompoundStatement, tree: Any) -> Iterator[Tuple[object, List[ast.stmt]]]:
    """The blocks of ``statement`` beside the ``ast`` lists they hold.

    ``tree``: the ``ast`` node of the same kind (``ast.If`` for ``cst.If``); typed ``Any``, as
    its fields follow ``statement``'s kind, which mypy cannot tie to it."""
    if isinstance(statement, cst.Match):
        for case, case_tree in zip(statement.cases, tree.cases):
            yield case.body, case_tree.body
        return
    yield statement.body, tree.body
    if isinstance(statement, cst.If) and statement.orelse is not None:
        orelse = statement.orelse
        yield ([orelse] if isinstance(orelse, cst.If) else orelse.body), tree.orelse
    elif isinstance(statement, (cst.For, cst.While)) and statement.orelse is not None:
        yield statement.orelse.body, tree.orelse
    elif isinstance(statement, (cst.Try, getattr(cst, "TryStar", cst.Try))):
        # mypy cannot narrow by a class found with getattr; a ``TryStar`` has the fields of a ``Try``.
        try_statement = cast(cst.Try, statement)
        for handler, handler_tree in zip(try_statement.handlers, tree.handlers):
            yield handler.body, handler_tree.body
        if try_statement.orelse is not None:
            yield try_statement.orelse.body, tree.orelse
        if try_statement.finalbody is not None:
            yield try_statement.finalbody.body, tree.finalbody
