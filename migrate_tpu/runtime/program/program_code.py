"""What a program's code says before it runs, read as Python reads it: its tokens outside comments
and docstrings, in the program (a ``.py`` file, or a notebook's code cells without IPython's own
lines) and in the modules of its folder that it imports, breadth first.

One reading for every question asked of a program's code before a run: whether it builds
``MultiWorkerMirroredStrategy`` itself (``run --hosts`` runs it as a cluster of worker processes,
:mod:`~migrate_tpu.runtime.process.pod`) and whether it reads its cluster, ``TF_CONFIG``, itself
(verify runs it as a cluster from the first run, :mod:`migrate_tpu.verify.runs.cluster`).  A
comment, a docstring or a notebook's output that names something is not code that uses it; a
helper module of the program's folder that builds the strategy is.

Standard library only (and the notebook grammar of :mod:`migrate_tpu.magics`), Python 3.7 syntax.
"""

from __future__ import absolute_import, division, print_function

import io
import json
import os
import re
import token
import tokenize
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

from migrate_tpu import magics

#: How many files of a program are read at most (the program and the modules it imports).
MAX_FILES = 50

_IMPORTED = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+(?:\s*,\s*[\w.]+)*))", re.M)
_DOCSTRING_AFTER = (None, token.NEWLINE, token.INDENT, token.DEDENT, tokenize.NL)


def code_pieces(path: str) -> Iterator[Tuple[Optional[int], str]]:
    """``(cell, code)`` of a notebook's code cells (numbered from 1 among all its cells, IPython's
    own lines blanked so the numbering holds), or ``(None, text)`` of a module."""
    try:
        with io.open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except (OSError, TypeError, ValueError):
        return
    if not str(path).endswith(".ipynb"):
        yield None, text
        return
    try:
        cells = json.loads(text).get("cells")
    except (ValueError, AttributeError):
        return
    for number, cell in enumerate(cells if isinstance(cells, list) else [], 1):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else str(source)
            if not magics.is_python_cell(source):
                continue
            kinds = magics.line_kinds(source) or []
            lines = source.splitlines()
            yield number, "\n".join(line if kind == magics.PYTHON else "" for line, kind in zip(lines, kinds + [magics.PYTHON] * len(lines)))


def _code_tokens(code: str) -> Iterator[tokenize.TokenInfo]:
    """The tokens of ``code`` that are code: no comment, no docstring (a string that is a
    statement of its own at the start of a line); nothing more where it stops parsing."""
    previous: Optional[int] = None
    try:
        for item in tokenize.generate_tokens(io.StringIO(code).readline):
            if item.type in (token.COMMENT, tokenize.NL):
                continue
            docstring = item.type == token.STRING and previous in _DOCSTRING_AFTER
            previous = item.type
            if not docstring:
                yield item
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return


def _imported_files(code: str, folder: str) -> Iterator[str]:
    for match in _IMPORTED.finditer(code):
        for name in (match.group(1) or match.group(2) or "").split(","):
            base = os.path.join(folder, *name.strip().split("."))
            for candidate in (base + ".py", os.path.join(base, "__init__.py")):
                if os.path.isfile(candidate):
                    yield candidate


def first_place(program: str, wanted: Callable[[tokenize.TokenInfo], bool]) -> Optional[Dict[str, Any]]:
    """``{"file", "line", "source"}`` (and ``"cell"`` in a notebook) of the first token of code
    that ``wanted`` accepts, in ``program`` or a module of its folder it imports; ``None``."""
    folder = os.path.dirname(os.path.abspath(str(program)))
    queue: List[str] = [str(program)]
    seen: Set[str] = set()
    while queue and len(seen) < MAX_FILES:
        path = queue.pop(0)
        if os.path.abspath(path) in seen:
            continue
        seen.add(os.path.abspath(path))
        for cell, code in code_pieces(path):
            for item in _code_tokens(code):
                if wanted(item):
                    lines = code.splitlines()
                    row = item.start[0]
                    place = {"file": path, "line": row, "source": lines[row - 1].strip() if 0 < row <= len(lines) else ""}
                    if cell is not None:
                        place["cell"] = cell
                    return place
            queue.extend(_imported_files(code, folder))
    return None


def names_used(program: str, candidates: Set[str]) -> Set[str]:
    """Which of ``candidates`` the program's code (or a module of its folder it imports) names: a
    name, an attribute or an imported name, never a comment, a string or a docstring.  One walk
    of the files, ended once every candidate is found."""
    found: Set[str] = set()

    def wanted(item: tokenize.TokenInfo) -> bool:
        if item.type == token.NAME and item.string in candidates:
            found.add(item.string)
        return found == candidates

    first_place(program, wanted)
    return found
