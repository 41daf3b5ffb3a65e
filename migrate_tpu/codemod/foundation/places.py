"""One place for positions: how a place (line, column) in one text of a file is found in another.

The codemod reads a file through several texts made from it, and reports every finding
where it is in the file:

- the original text: what the engine hands in (for a notebook, its code cells as one
  program; the engine maps that program to its cells, ``engine/notebook.py``, as the
  engine may not import the codemod);
- the partial text (``stages/partial_parse``): each statement left out of LibCST's parse
  is a placeholder of exactly its lines, so every line keeps its number and its text: a
  place there is the same place in the original, and nothing is translated;
- a stripped text (``migration/doctests``): a docstring's examples as one snippet, each
  line with its prompt and indentation cut off, after lines of the snippet's own (the
  module's imports): ``StrippedLines`` puts a place in it back in the file;
- the fixed text (``migration/api``): the original after the applied fixes:
  ``LineMap`` moves a line of the original to the fixed text (exactly where the line did
  not change), for what is left to report there and for the doctests' edits.

Lines are 1-based throughout; columns are as the caller counts them, and only shifted.
"""

from __future__ import annotations

import difflib
from typing import List, Optional, Sequence, Tuple

# (line, column, end line, end column)
Place = Tuple[int, int, int, int]


class LineMap:
    """Line numbers of ``before`` moved to ``after``, a text made from it by edits: exact for
    lines that did not change, the first line of the replacement for lines that did."""

    def __init__(self, before: str, after: str) -> None:
        old_lines, new_lines = before.splitlines(), after.splitlines()
        self._blocks = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes()
        self._count = len(new_lines)

    def __call__(self, line: int) -> int:
        index = line - 1
        for tag, i1, i2, j1, _j2 in self._blocks:  # every original line is in one equal, replace or delete block
            if i1 <= index < i2:
                return j1 + (index - i1 if tag == "equal" else 0) + 1
        return max(1, min(line, self._count))

    def lines(self, line: int, end_line: int) -> Tuple[int, int]:
        """A span's first and last lines moved: its first line moves, its height stays."""
        moved = self(line)
        return moved, moved + (end_line - line)


class StrippedLines:
    """A text made of lines of another, each with a prefix cut off (a doctest's code, its
    prompt and indentation gone), after lines of its own (the imports put before it).

    ``origins[n - 1]``: where line ``n`` of the stripped text comes from, as (line of the
    original, length of the prefix cut), or None for a line of its own."""

    def __init__(self, origins: Sequence[Optional[Tuple[int, int]]]) -> None:
        self._origins: List[Optional[Tuple[int, int]]] = list(origins)

    def holds(self, line: int) -> bool:
        """Whether line ``line`` of the stripped text is a line of the original."""
        return 0 < line <= len(self._origins) and self._origins[line - 1] is not None

    def place(self, place: Place) -> Place:
        """``place`` (its line held: ``holds``) in the original: the lines its own, the columns
        shifted by the prefixes cut; an end on a line of its own ends on the first line."""
        line, column, end_line, end_column = place
        start = self._origins[line - 1]
        if start is None:
            raise ValueError(f"line {line} is the stripped text's own")
        end = self._origins[end_line - 1] if 0 < end_line <= len(self._origins) else None
        end = end if end is not None else start
        return start[0], column + start[1], end[0], end_column + end[1]
