"""Whether a multi-worker program reads its cluster itself, decided from its code (not from
how it failed): such a program cannot run as one worker, and verify runs it as a cluster of
worker processes from the first run on.

Reading the cluster, in any of the spellings of 2020 code: the text ``TF_CONFIG`` in a string
(``os.environ['TF_CONFIG']``, ``os.environ.get("TF_CONFIG") or '{}'``, ``os.getenv(...)``, a
``json.loads`` of any of them) or ``TFConfigClusterResolver``, in the program or in a module
of its folder that it imports.  Comments and docstrings do not count.
"""

from __future__ import annotations

import io
import re
import token
import tokenize
from pathlib import Path
from typing import Iterator, Optional, Set, Tuple

from migrate_tpu.verify.values.changes import code_cells

_IMPORTED = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+(?:\s*,\s*[\w.]+)*))", re.M)


def _code_pieces(path: Path) -> Iterator[Tuple[Optional[int], str]]:
    """``(cell, code)`` of a notebook's code cells, or ``(None, text)`` of a module."""
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return
    if path.suffix == ".ipynb":
        for number, code in code_cells(text) or []:
            # IPython's own lines (%magic, !shell) are no Python: blanked, keeping the numbering
            yield number, "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines())
    else:
        yield None, text


def _reads_in(code: str) -> Optional[Tuple[int, str]]:
    """The first line of ``code`` that reads TF_CONFIG, with its text."""
    lines = code.splitlines()
    previous = None
    try:
        for item in tokenize.generate_tokens(io.StringIO(code).readline):
            docstring = item.type == token.STRING and (previous is None or previous in (token.NEWLINE, token.INDENT, token.DEDENT, tokenize.NL))
            if (item.type == token.STRING and "TF_CONFIG" in item.string and not docstring) or \
                    (item.type == token.NAME and item.string == "TFConfigClusterResolver"):
                row = item.start[0]
                return row, lines[row - 1].strip() if 0 < row <= len(lines) else ""
            if item.type not in (token.COMMENT, tokenize.NL):
                previous = item.type
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return None


def reads_its_cluster(program: Path) -> Optional[dict]:
    """``{"file", "line", "cell", "source"}`` where ``program`` (or a module of its folder that it
    imports) reads TF_CONFIG; ``None`` where it does not."""
    folder = program.parent
    seen: Set[Path] = set()
    queue = [program]
    while queue:
        path = queue.pop(0)
        if path in seen or len(seen) > 50:
            continue
        seen.add(path)
        for cell, code in _code_pieces(path):
            found = _reads_in(code)
            if found is not None:
                place = {"file": path, "line": found[0], "source": found[1]}
                if cell is not None:
                    place["cell"] = cell
                return place
            for match in _IMPORTED.finditer(code):
                for name in (match.group(1) or match.group(2) or "").split(","):
                    module = folder.joinpath(*name.strip().split(".")).with_suffix(".py")
                    if module.is_file():
                        queue.append(module)
    return None
