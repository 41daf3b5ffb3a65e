"""What the migration changed, as hunks of lines: the unit that coverage counts and that
blame takes apart.

A hunk is one run of changed lines in one file (a notebook: in one cell), with the rules of
the fixes that made it (none for a hand migration given with ``--after``), the lines of the
migrated file whose running shows that it ran, and the text that applies it to the original.
Pure: texts in, hunks and texts out; :func:`hunks_between` reads the two copies.
"""

from __future__ import annotations

import ast
import difflib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

# What a fix is known by here: (file relative to the copy, cell or None, first line, last line, rule).
FixPlace = Tuple[str, Optional[int], int, int, str]
SOURCE_SUFFIXES = (".py", ".ipynb")


@dataclass(frozen=True)
class Hunk:
    file: str  # relative to the copy's root, "/"-separated
    cell: Optional[int]  # a notebook's cell, counted from 1 over all its cells
    before: Tuple[int, int]  # [start, end) of the original's lines, from 0
    after: Tuple[int, int]  # [start, end) of the migrated lines, from 0
    new_lines: Tuple[str, ...]  # what replaces the original's lines (ends of line kept)
    rules: Tuple[str, ...]
    watch: Tuple[int, ...]  # lines of the migrated file (from 1) whose running shows the hunk ran
    # the migrated notebook's cell, where a hand migration added or removed cells (else: cell)
    after_cell: Optional[int] = None

    @property
    def migrated_cell(self) -> Optional[int]:
        return self.after_cell if self.after_cell is not None else self.cell

    def place(self, file: Optional[str] = None) -> str:
        """``train.py:32``, ``train.py:31-32`` or ``nb.ipynb cell 4:3`` (the migrated lines);
        ``file``: the file as the user names it."""
        first = self.after[0] + 1 if self.after[1] > self.after[0] else max(self.after[0], 1)
        last = max(self.after[1], first)
        lines = f"{first}-{last}" if last > first else str(first)
        cell = self.migrated_cell
        return f"{file or self.file}{f' cell {cell}' if cell is not None else ''}:{lines}"

    def label(self, file: Optional[str] = None) -> str:
        return self.place(file) + (f" ({', '.join(self.rules)})" if self.rules else "")


def code_cells(text: str) -> Optional[List[Tuple[int, str]]]:
    """``(cell number, code)`` of a notebook's code cells; ``None`` if it is no notebook."""
    try:
        notebook = json.loads(text)
    except ValueError:
        return None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return None
    found = []
    for number, cell in enumerate(cells, 1):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            found.append((number, "".join(source) if isinstance(source, list) else str(source)))
    return found


def _watched(after_text: str, start: int, end: int) -> Tuple[int, ...]:
    """Lines (from 1) whose running shows that the migrated lines [start, end) ran: the
    hunk's own lines, and the head of the innermost statement that holds its first line (a
    line inside a call spread over several lines reports the call's first line)."""
    lines = set(range(start + 1, end + 1)) or {start, start + 1}
    first = start + 1 if end > start else max(start, 1)
    try:
        tree = ast.parse(after_text)
    except (SyntaxError, ValueError):
        return tuple(sorted(line for line in lines if line > 0))
    best: Optional[ast.stmt] = None
    best_top = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            top = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            if top <= first <= (node.end_lineno or node.lineno) and (best is None or top >= best_top):
                best, best_top = node, top
    if best is not None:
        # a compound statement's head (decorators to the line before its body); a simple one whole
        body = getattr(best, "body", None)
        if isinstance(body, list) and body and body[0].lineno > best.lineno:
            head_end = body[0].lineno - 1
        else:
            head_end = best.end_lineno or best.lineno
        lines.update(range(best_top, head_end + 1))
    return tuple(sorted(line for line in lines if line > 0))


def _rules(file: str, cell: Optional[int], start: int, end: int, fixes: Iterable[FixPlace]) -> Tuple[str, ...]:
    """The rules of the fixes that edited the original's lines [start, end) (from 0)."""
    first, last = start + 1, max(end, start + 1)
    found: List[str] = []
    for fix_file, fix_cell, fix_start, fix_end, rule in fixes:
        if fix_file != file or (fix_cell is not None and cell is not None and fix_cell != cell):
            continue
        if fix_start <= last and fix_end >= first - (1 if end == start else 0) and rule not in found:
            found.append(rule)
    return tuple(found)


def text_hunks(file: str, cell: Optional[int], before: str, after: str, fixes: Sequence[FixPlace] = (),
               after_cell: Optional[int] = None) -> List[Hunk]:
    """The hunks turning ``before`` into ``after`` (one file, or one cell of a notebook)."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    hunks = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        hunks.append(Hunk(file, cell, (i1, i2), (j1, j2), tuple(new[j1:j2]), _rules(file, cell, i1, i2, fixes), _watched(after, j1, j2),
                          after_cell))
    return hunks


def _added_cell(file: str, host: Tuple[int, str], added: Tuple[int, str]) -> Hunk:
    """A cell a hand migration added, as lines appended to the original's code cell before it
    (``host``): cells run one after the other in one namespace, so a partial migration that
    keeps it runs it at the same point."""
    number, text = host
    added_number, code = added
    at, count = len(text.splitlines()), len(code.splitlines())
    lines = code.splitlines(keepends=True)
    if lines and text and not text.endswith("\n"):
        lines[0] = "\n" + lines[0]
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return Hunk(file, number, (at, at), (0, count), tuple(lines), (), _watched(code, 0, count), added_number)


def _notebook_hunks(file: str, old_cells: List[Tuple[int, str]], new_cells: List[Tuple[int, str]],
                    fixes: Sequence[FixPlace]) -> List[Hunk]:
    """A notebook's hunks, code cell by code cell, the cells of the two notebooks paired in
    order by their code (a hand migration may add, remove or rewrite cells)."""
    found: List[Hunk] = []
    matcher = difflib.SequenceMatcher(None, [code for _, code in old_cells], [code for _, code in new_cells], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1)
        for (number, old), (new_number, new) in zip(old_cells[i1:i1 + paired], new_cells[j1:j1 + paired]):
            found.extend(text_hunks(file, number, old, new, fixes, new_number if new_number != number else None))
        for number, old in old_cells[i1 + paired:i2]:  # removed: emptied, nothing of it runs
            found.append(Hunk(file, number, (0, len(old.splitlines())), (0, 0), (), _rules(file, number, 0, len(old.splitlines()), fixes), ()))
        for added in new_cells[j1 + paired:j2]:
            host = old_cells[i2 - 1] if i2 > 0 else (old_cells[0][0], "") if old_cells else None
            if host is not None:
                found.append(_added_cell(file, host, added))
    return found


def file_hunks(file: str, before: str, after: str, fixes: Sequence[FixPlace] = ()) -> List[Hunk]:
    """A source file's hunks; a notebook's, cell by cell."""
    if file.endswith(".ipynb"):
        old_cells, new_cells = code_cells(before), code_cells(after)
        if old_cells is not None and new_cells is not None:
            if [n for n, _ in old_cells] == [n for n, _ in new_cells]:  # the same cells (a fix never adds one)
                return [hunk for (number, old), (_, new) in zip(old_cells, new_cells) if old != new
                        for hunk in text_hunks(file, number, old, new, fixes)]
            return _notebook_hunks(file, old_cells, new_cells, fixes)
    return text_hunks(file, None, before, after, fixes)


def _sources(root: Path) -> Dict[str, Path]:
    found = {}
    for folder, folders, files in os.walk(root):
        folders[:] = [f for f in folders if not os.path.islink(os.path.join(folder, f))]
        for name in files:
            path = Path(folder) / name
            if name.endswith(SOURCE_SUFFIXES) and not path.is_symlink():
                found[path.relative_to(root).as_posix()] = path
    return found


def hunks_between(before_root: Path, after_root: Path, fixes: Sequence[FixPlace] = ()) -> List[Hunk]:
    """Every hunk between the original's copy and the migrated copy, file by file."""
    before_files, after_files = _sources(before_root), _sources(after_root)
    hunks: List[Hunk] = []
    for file in sorted(set(before_files) & set(after_files)):
        old = before_files[file].read_text("utf-8", "replace")
        new = after_files[file].read_text("utf-8", "replace")
        if old != new:
            hunks.extend(file_hunks(file, old, new, fixes))
    return hunks


def _apply_to_text(text: str, hunks: Sequence[Hunk]) -> str:
    lines = text.splitlines(keepends=True)
    # from the end, so that earlier places stay put; two insertions at one place: the later first
    for _, hunk in sorted(enumerate(hunks), key=lambda item: (item[1].before, item[0]), reverse=True):
        lines[hunk.before[0]:hunk.before[1]] = list(hunk.new_lines)
    return "".join(lines)


def apply(file: str, before: str, hunks: Sequence[Hunk]) -> str:
    """``before`` (the original's text of ``file``) with ``hunks`` of it applied."""
    mine = [h for h in hunks if h.file == file]
    if not mine:
        return before
    if all(h.cell is None for h in mine):
        return _apply_to_text(before, mine)
    notebook = json.loads(before)
    for number, cell in enumerate(notebook.get("cells", []), 1):
        of_cell = [h for h in mine if h.cell == number]
        if of_cell:
            source = cell.get("source", "")
            text = "".join(source) if isinstance(source, list) else str(source)
            cell["source"] = _apply_to_text(text, of_cell).splitlines(keepends=True)
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def watch_list(hunks: Sequence[Hunk], root: Path) -> Dict[str, List[int]]:
    """What the recorder watches in the migrated copy at ``root``: the file names its code
    objects carry (a notebook cell's: ``PATH:cellN``) -> lines."""
    watched: Dict[str, set] = {}
    for hunk in hunks:
        cell = hunk.migrated_cell
        name = str(root / hunk.file) + (f":cell{cell}" if cell is not None else "")
        watched.setdefault(name, set()).update(hunk.watch)
    return {name: sorted(lines) for name, lines in watched.items()}


def ran(hunk: Hunk, root: Path, lines_ran: Dict[str, List[int]]) -> bool:
    """Whether any watched line of ``hunk`` ran (``lines_ran``: the recorder's)."""
    cell = hunk.migrated_cell
    name = str(root / hunk.file) + (f":cell{cell}" if cell is not None else "")
    seen = lines_ran.get(name) or ()
    return any(line in seen for line in hunk.watch)


def shown_label(hunk: Hunk, root: Path, shown_root: str, program: Optional[Path] = None, shown_program: str = "") -> str:
    """``hunk``'s label with its file as the user names it: the program as given (a hand
    migration's file), any other file under the folder the user named."""
    if program is not None and shown_program and (root / hunk.file) == program:
        return hunk.label(shown_program)
    return hunk.label(os.path.normpath(os.path.join(shown_root or ".", hunk.file)))
