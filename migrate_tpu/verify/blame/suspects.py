"""Which of a migration's changes blame tries first: a change that only renames an API the
catalogue moved, or touches only comments, docstrings and layout, rarely makes a run diverge;
any other change (a reduce op, a batch size, a learning rate) may.  Blame looks for the culprit
among those others first and falls back to all the changes when they alone do not show the
divergence, so this orders the search and never decides its answer.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path
from typing import Callable, List, Optional, Tuple

from migrate_tpu.runtime.surfaces.moves import MOVES
from migrate_tpu.verify.values.changes import Hunk, apply, code_cells


def _renames() -> List[Tuple["re.Pattern[str]", str]]:
    """The catalogue's renames as patterns on source text: a method's ``.old`` -> ``.new``, a
    symbol's dotted path below the package (``distribute.experimental.TPUStrategy`` ->
    ``distribute.TPUStrategy``: a program names the package ``tf`` or imports from it)."""
    found = []
    for _rule, _handler, kind, old, new, *_rest in MOVES:
        if kind == "method" and old.isidentifier() and new.isidentifier():
            found.append((re.compile(r"\." + re.escape(old) + r"\b"), "." + new))
        elif kind == "symbol" and old.startswith("tensorflow.") and new.startswith("tensorflow."):
            old_tail, new_tail = old.split(".", 1)[1], new.split(".", 1)[1]
            found.append((re.compile(r"\b" + re.escape(old_tail) + r"\b"), new_tail))
    return found


_RENAMES = _renames()


def _tokens(text: str) -> Optional[List[Tuple[int, str]]]:
    """The code's tokens without comments and layout; None where it does not tokenize."""
    try:
        return [(token.type, token.string) for token in tokenize.generate_tokens(io.StringIO(text).readline)
                if token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                      tokenize.DEDENT, tokenize.ENDMARKER)]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None


def renames_only(old: str, new: str) -> bool:
    """Whether ``new`` is ``old`` with the catalogue's renames made (and comments or layout
    changed), token for token."""
    renamed = old
    for pattern, replacement in _RENAMES:
        renamed = pattern.sub(replacement, renamed)
    ours, theirs = _tokens(renamed), _tokens(new)
    return ours is not None and ours == theirs


def _without_docstrings(tree: ast.AST) -> str:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False)


def cosmetic(old: str, new: str) -> bool:
    """Whether ``old`` and ``new`` are the same program but for comments, docstrings and layout."""
    try:
        return _without_docstrings(ast.parse(old)) == _without_docstrings(ast.parse(new))
    except (SyntaxError, ValueError):
        return False


def _texts(root: Path, hunk: Hunk) -> Optional[Tuple[str, str]]:
    """The code ``hunk`` changes, before and with it alone applied: the whole file, or the
    notebook cell."""
    try:
        before = (root / hunk.file).read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    after = apply(hunk.file, before, [hunk])
    if hunk.cell is None:
        return before, after
    old_cells, new_cells = dict(code_cells(before) or []), dict(code_cells(after) or [])
    if hunk.cell not in old_cells or hunk.cell not in new_cells:
        return None
    return old_cells[hunk.cell], new_cells[hunk.cell]


def likely_neutral(root: Path) -> Callable[[Hunk], bool]:
    """For the original's copy at ``root``: whether a hunk, applied alone, only renames moved
    APIs or only changes comments, docstrings and layout."""
    def neutral(hunk: Hunk) -> bool:
        texts = _texts(root, hunk)
        if texts is None:
            return False
        return cosmetic(*texts) or renames_only("".join(_lines(texts[0], hunk.before)), "".join(hunk.new_lines))
    return neutral


def _lines(text: str, span: Tuple[int, int]) -> List[str]:
    return text.splitlines(keepends=True)[span[0]:span[1]]
