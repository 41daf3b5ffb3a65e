"""Line and column of a few nodes, computed by code generation of the statements holding them.

LibCST's PositionProvider records every node of the tree; findings need the
positions of a handful. This code generation state tracks lines and columns
lazily and records only the nodes asked for. When the caller knows where each
top-level statement begins in the source (``edits.statement_starts``), only the
top-level statements that hold a wanted node are generated, each from its own
first line: findings at the end of a long file no longer cost a code generation
of everything above them. When the caller also knows the innermost statement on its own
line that holds a node, and that statement's line (``lines.StatementLines.start_of``),
only that statement is generated, and checked against the source text.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Dict, Iterable, Iterator, Optional, Sequence, Tuple

import libcst as cst
from libcst._nodes.internal import CodegenState

from migrate_tpu.codemod.foundation.lines import Start, leading_lines, line_offsets

# (start line, start column, end line, end column), lines 1-based, columns 0-based.
Span = Tuple[int, int, int, int]


class _AllFound(Exception):
    """Raised once every wanted node has its span: the rest of the file is not generated."""


class _SpanState(CodegenState):
    def __init__(self, module: cst.Module, wanted: set, line: int = 1) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.wanted = wanted
        self.starts: Dict[int, Tuple[int, int]] = {}
        self.ends: Dict[int, Tuple[int, int]] = {}
        self._syntactic: set = set()
        self._counted = 0
        self._line = line
        self._column = 0
        self._remaining = len(wanted)

    def _where(self) -> Tuple[int, int]:
        tokens = self.tokens
        for index in range(self._counted, len(tokens)):
            token = tokens[index]
            newlines = token.count("\n")
            if newlines:
                self._line += newlines
                self._column = len(token) - token.rfind("\n") - 1
            else:
                self._column += len(token)
        self._counted = len(tokens)
        return self._line, self._column

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self.starts[id(node)] = self._where()

    def _ended(self, node: cst.CSTNode) -> None:
        self.ends[id(node)] = self._where()
        if len(self.ends) >= self._remaining:
            raise _AllFound

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted and id(node) not in self._syntactic and id(node) not in self.ends:
            self._ended(node)

    @contextmanager
    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None, end_node: Optional[cst.CSTNode] = None
    ) -> Iterator[None]:
        if id(node) not in self.wanted:
            yield
            return
        self.starts[id(node)] = self._where()
        self._syntactic.add(id(node))
        yield
        self._ended(node)


def spans(
    module: cst.Module,
    nodes: Iterable[cst.CSTNode],
    *,
    source: Optional[str] = None,
    starts: Optional[Sequence[int]] = None,
    tops: Optional[Dict[int, cst.CSTNode]] = None,
    inner: Optional[Dict[int, Start]] = None,
) -> Dict[int, Span]:
    """Spans of ``nodes`` (by id) in ``module``'s generated code.

    With ``source`` (the text ``module`` was parsed from) and ``starts`` (the offset in it
    where each top-level statement's text begins), only the top-level statements that
    hold a wanted node are generated. ``tops`` maps a node's id to the top-level
    statement it is in (a top-level statement itself needs no entry). ``inner`` maps a
    node's id to the innermost statement on its own line that holds it: that statement
    alone is generated, from its line, and its text must be the source's there. Whatever
    does not line up falls back: an inner statement to its top-level one, a node without
    its top-level statement (or not found in it) to one code generation of the module.
    """
    wanted = {id(node) for node in nodes}
    if not wanted:
        return {}
    if source is not None and starts is not None and len(starts) == len(module.body) + 1:
        found = _spans_by_statement(module, wanted, source, starts, tops or {}, inner or {})
        if found is not None:
            return found
    return _spans_of_module(module, wanted)


def _spans_of_module(module: cst.Module, wanted: set) -> Dict[int, Span]:
    state = _SpanState(module, wanted)
    try:
        module._codegen(state)
    except _AllFound:
        pass
    return _collect(state)


def _collect(state: _SpanState) -> Dict[int, Span]:
    result = {}
    for key, start in state.starts.items():
        end = state.ends.get(key, start)
        result[key] = (start[0], start[1], end[0], end[1])
    return result


def _spans_by_statement(
    module: cst.Module, wanted: set, source: str, starts: Sequence[int], tops: Dict[int, cst.CSTNode], inner: Dict[int, Start]
) -> Optional[Dict[int, Span]]:
    result: Dict[int, Span] = {}
    by_inner: Dict[int, Tuple[Start, set]] = {}
    rest = set()
    for key in wanted:
        start = inner.get(key)
        if start is None:
            rest.add(key)
        else:
            by_inner.setdefault(id(start[0]), (start, set()))[1].add(key)
    line_starts = line_offsets(source) if by_inner else []
    for start, group in by_inner.values():
        found = _spans_from(module, start, group, source, line_starts)
        if found is None:
            rest |= group
        else:
            result.update(found)
    index_of = {id(statement): index for index, statement in enumerate(module.body)}
    groups: Dict[int, set] = {}
    for key in rest:
        top = tops.get(key)
        index = index_of.get(id(top)) if top is not None else index_of.get(key)
        if index is None:
            return None
        groups.setdefault(index, set()).add(key)
    for index in sorted(groups):
        group = groups[index]
        # The statement's text begins at column 0 of this line (statement_starts checks it).
        line = source.count("\n", 0, starts[index]) + 1
        state = _SpanState(module, group, line)
        try:
            module.body[index]._codegen(state)
        except _AllFound:
            pass
        if len(state.starts) != len(group):
            return None  # a node was not where the caller said: generate the module
        result.update(_collect(state))
    return result


def _spans_from(module: cst.Module, start: Start, group: set, source: str, line_starts: Sequence[int]) -> Optional[Dict[int, Span]]:
    """Spans of ``group`` generated from the statement of ``start`` alone, or None when they
    are not all in it or its text is not the source's from its first leading line."""
    statement, line, blocks = start
    first = line - len(leading_lines(statement))  # its comment and blank lines come first
    if first < 1 or first >= len(line_starts) - 1:
        return None
    state = _SpanState(module, group, first)
    state.indent_tokens = [module.default_indent if block.indent is None else block.indent for block in blocks]
    try:
        statement._codegen(state)
    except _AllFound:
        pass
    if len(state.starts) != len(group) or not source.startswith("".join(state.tokens), line_starts[first]):
        return None
    return _collect(state)
