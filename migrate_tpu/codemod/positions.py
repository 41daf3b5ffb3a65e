"""Line and column of a few nodes, computed by one code generation pass.

LibCST's PositionProvider records every node of the tree; findings need the
positions of a handful. This code generation state tracks lines and columns
lazily and records only the nodes asked for.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Dict, Iterable, Iterator, Optional, Tuple

import libcst as cst
from libcst._nodes.internal import CodegenState

# (start line, start column, end line, end column), lines 1-based, columns 0-based.
Span = Tuple[int, int, int, int]


class _AllFound(Exception):
    """Raised once every wanted node has its span: the rest of the file is not generated."""


class _SpanState(CodegenState):
    def __init__(self, module: cst.Module, wanted: set) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.wanted = wanted
        self.starts: Dict[int, Tuple[int, int]] = {}
        self.ends: Dict[int, Tuple[int, int]] = {}
        self._syntactic: set = set()
        self._counted = 0
        self._line = 1
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


def spans(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> Dict[int, Span]:
    """Spans of ``nodes`` (by id) in ``module``'s generated code."""
    wanted = {id(node) for node in nodes}
    if not wanted:
        return {}
    state = _SpanState(module, wanted)
    try:
        module._codegen(state)
    except _AllFound:
        pass
    result = {}
    for key, start in state.starts.items():
        end = state.ends.get(key, start)
        result[key] = (start[0], start[1], end[0], end[1])
    return result
