"""Jupyter notebooks through the migrator: code cells in, code cells out.

A notebook's code cells are migrated as one program, in order, so that a name
bound in one cell is known in the cells after it. IPython syntax that is not
Python (``%magic``, ``!shell``, ``x = !cmd``, ``obj?``) is masked by a
placeholder statement of the same line count before migration and put back
exactly afterwards. A cell that starts with a cell magic is left as it is,
except ``%%time``-like magics whose body is Python: their body is migrated;
and ``%%writefile name.py`` cells, whose body is migrated on its own, as the
module it writes.

The file is never re-serialised: the byte span of each changed cell's
``source`` value is replaced in the original text and everything else
(outputs, execution counts, ids, metadata, indentation, key order, the final
newline) stays byte for byte. The result is parsed again and compared with
the intended notebook before it is handed back (that reading and writing of the
JSON text is ``notebook_json.py``'s).

Cells are numbered as in the notebook, from 1, counting markdown cells too,
like ``migrate-tpu run`` does.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from typing import Collection, Dict, Iterable, List, Optional, Sequence, Tuple, Union, cast

from migrate_tpu import magics
from migrate_tpu.engine.contracts import Migrator, Outcome
from migrate_tpu.engine.file_error import FileError
from migrate_tpu.engine.file_finding import FileFinding
from migrate_tpu.engine.notebook_json import Cell, file_position, load_notebook, notebook_language, splice, uses_ascii_escapes, verify_splice
from migrate_tpu.engine.patch import unified_diff

_MARK = "migrate-tpu-masked"
# IPython lines become this statement. An import, so that the block at the top
# of a notebook (`%tensorflow_version 2.x`, `!pip install ...`, imports) stays
# one block to the migrator, and imports it adds go after it, not before it.
_PLACEHOLDER = "import _migrate_tpu_ipython  # " + _MARK
_CELL_MARK = "# migrate-tpu-cell"
_MARK_LINE = re.compile(r"^[ \t]*" + re.escape(_PLACEHOLDER) + r" (\d+)$")
_CELL_LINE = re.compile(r"^" + _CELL_MARK + r" (\d+)\r?\n?$")
_INLINE = "  # migrate-tpu-inline"
_INLINE_LINE = re.compile(r"^(?P<indent>[ \t]*)(?P<code>.*)" + re.escape(_INLINE) + r" (?P<index>\d+)$")


# -- magics -------------------------------------------------------------------------
# Which lines are IPython's is decided by migrate_tpu.magics, the grammar `run` uses
# too: a line the migration masks is a line the runtime does not run as Python.

# What a placeholder stands for: a whole IPython line, or the (indent, magic) that a
# ``%time``-like line puts before the statement it runs.
Stashed = Union[str, Tuple[str, str]]


def mask_cell(source: str, stash: List[Stashed]) -> Optional[str]:
    """``source`` with IPython lines replaced by placeholders (originals go to
    ``stash``); ``None`` when the cell is a cell magic that is not Python."""
    kinds = magics.line_kinds(source)
    if kinds is None:
        return None
    if all(kind == magics.PYTHON for kind in kinds):
        return source
    lines = source.splitlines(keepends=True)
    out = []
    indent = ""
    for line, kind in zip(lines, kinds):
        if kind == magics.PYTHON:
            out.append(line)
            continue
        ending = line[len(line.rstrip("\r\n")) :]
        body = line[: len(line) - len(ending)]
        alone = kind != magics.CONTINUATION and not body.endswith("\\")
        timed = magics.timed_statement(body) if alone and kind == magics.IPYTHON else None
        if timed and _is_one_statement(timed[2]):
            magic_indent, magic, code = timed
            stash.append((magic_indent, magic))
            out.append(f"{magic_indent}{code}{_INLINE} {len(stash) - 1}{ending}")
            continue
        if kind != magics.CONTINUATION:
            indent = line[: len(line) - len(line.lstrip(" \t"))]
        stash.append(body)
        out.append(f"{indent}{_PLACEHOLDER} {len(stash) - 1}{ending}")
    return "".join(out)


def _is_one_statement(code: str) -> bool:
    import ast

    if code.rstrip().endswith("\\"):
        return False
    try:
        tree = compile(code, "<magic>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return isinstance(tree, ast.Module) and len(tree.body) == 1


def unmask(text: str, stash: Sequence[Stashed], restored: Optional[List[int]] = None) -> str:
    """``text`` with the placeholders of :func:`mask_cell` replaced by the
    IPython lines they stand for; ``restored`` collects the stash indexes met."""
    if _MARK not in text and _INLINE not in text:
        return text
    out = []
    for line in text.splitlines(keepends=True):
        ending = line[len(line.rstrip("\r\n")) :]
        body = line[: len(line) - len(ending)]
        match = _MARK_LINE.match(body)
        stashed = stash[int(match.group(1))] if match and int(match.group(1)) < len(stash) else None
        if match and isinstance(stashed, str):
            out.append(stashed + ending)
            if restored is not None:
                restored.append(int(match.group(1)))
            continue
        inline = _INLINE_LINE.match(body)
        stashed = stash[int(inline.group("index"))] if inline and int(inline.group("index")) < len(stash) else None
        if inline and isinstance(stashed, tuple):
            indent, magic = stashed
            out.append(indent + magic + inline.group("code") + ending)
            if restored is not None:
                restored.append(int(inline.group("index")))
            continue
        out.append(line)
    return "".join(out)


# -- one notebook -------------------------------------------------------------------


@dataclass
class _Program:
    text: str = ""
    starts: Dict[int, int] = field(default_factory=dict)  # cell -> first line in text
    lengths: Dict[int, int] = field(default_factory=dict)  # cell -> line count
    trailing_newline: Dict[int, bool] = field(default_factory=dict)
    masked: Dict[int, str] = field(default_factory=dict)
    stash: List[Stashed] = field(default_factory=list)
    # `%%writefile name.py` cells: (the lines up to the magic, the body, the file's name).
    files: Dict[int, Tuple[str, str, str]] = field(default_factory=dict)

    def locate(self, line: int) -> Tuple[Optional[int], int]:
        for cell, start in self.starts.items():
            if start <= line < start + self.lengths[cell]:
                return cell, line - start + 1
        return None, line


def _build_program(cells: List[Cell], leave_out: Collection[Optional[int]] = ()) -> _Program:
    """The code cells as one program; cells numbered in ``leave_out`` are not part of it."""
    program = _Program()
    parts = []
    line = 1
    for cell in cells:
        if cell.kind != "code" or not cell.source.strip() or cell.number in leave_out:
            continue
        written = _written_python_file(cell.source)
        if written is not None:
            program.files[cell.number] = written
            continue
        masked = mask_cell(cell.source, program.stash)
        if masked is None:
            continue
        program.trailing_newline[cell.number] = masked.endswith(("\n", "\r"))
        if not program.trailing_newline[cell.number]:
            masked += "\n"
        program.masked[cell.number] = masked
        parts.append(f"{_CELL_MARK} {cell.number}\n")
        line += 1
        program.starts[cell.number] = line
        count = masked.count("\n")
        program.lengths[cell.number] = count
        line += count
        parts.append(masked)
    program.text = "".join(parts)
    return program


_WRITEFILE = re.compile(r"^[ \t]*%%(?:writefile|file)\b(?P<args>[^\r\n]*)(?:\r?\n|$)")


def _written_python_file(source: str) -> Optional[Tuple[str, str, str]]:
    """``(head, body, file name)`` of a ``%%writefile name.py`` cell, else None.

    Such a cell writes a separate Python module: its body is migrated on its
    own, not as part of the notebook's program.
    """
    blank = len(source) - len(source.lstrip("\r\n \t"))
    start = source.rfind("\n", 0, blank) + 1
    match = _WRITEFILE.match(source, start)
    if not match:
        return None
    words = match.group("args").split()
    names = [word for word in words if not word.startswith("-")]
    if len(names) != 1 or not names[0].strip("'\"").endswith(".py"):
        return None
    return source[: match.end()], source[match.end() :], names[0].strip("'\"")


def _split_program(code: str, program: _Program) -> Dict[int, str]:
    """The migrated program's text of each cell, magics restored."""
    texts: Dict[int, List[str]] = {}
    current: Optional[int] = None
    preamble: List[str] = []
    for line in code.splitlines(keepends=True):
        match = _CELL_LINE.match(line)
        if match:
            current = int(match.group(1))
            if current in texts or current not in program.starts:
                raise FileError("internal error: the cell structure was lost while migrating; notebook left unchanged")
            texts[current] = []
            continue
        (texts[current] if current is not None else preamble).append(line)
    if sorted(texts) != sorted(program.starts):
        raise FileError("internal error: the cell structure was lost while migrating; notebook left unchanged")
    if preamble:
        first = min(texts)
        texts[first] = preamble + texts[first]
    result = {}
    restored: List[int] = []
    for number, lines in texts.items():
        text = unmask("".join(lines), program.stash, restored)
        if not program.trailing_newline[number] and text.endswith("\n"):
            text = text[:-1]
            if text.endswith("\r"):
                text = text[:-1]
        result[number] = text
    if sorted(restored) != list(range(len(program.stash))):
        raise FileError("internal error: an IPython line could not be put back after migrating; notebook left unchanged")
    return result


def _cell_report(report: FileFinding, program: _Program) -> FileFinding:
    # An applied fix has no line in the fixed code; its line as read names its cell.
    cell, _ = program.locate(report.line or (report.as_read[0] if report.as_read else 0))
    if cell is None:
        return report
    return _relocate(report, cell, program.starts[cell] - 1)


def _relocate(report: FileFinding, cell: int, offset: int) -> FileFinding:
    """``report`` in cell coordinates: its lines (and its edits' lines) minus ``offset``."""
    as_read = report.as_read
    if as_read:
        line, column, end_line, end_column = as_read
        as_read = (line - offset, column, end_line - offset, end_column)
    edits = []
    for edit in report.edits:
        edit = dict(edit)
        if "line" in edit:  # an edit's lines are whole numbers (the report formats' "edits")
            edit_line = cast(int, edit["line"])
            edit["line"] = edit_line - offset
            edit["end_line"] = cast(int, edit.get("end_line", edit_line)) - offset
        edits.append(edit)
    # line 0: an applied fix, which has no line in the fixed code
    return report.moved(
        cell=cell,
        line=report.line - offset if report.line else report.line,
        end_line=report.end_line - offset if report.end_line else report.end_line,
        as_read=as_read,
        edits=edits,
    )


def _file_lines(ranges: Iterable[Tuple[int, int]], program: _Program, text: str, by_number: Dict[int, Cell], ensure_ascii: bool) -> List[Tuple[int, int]]:
    """Program line ranges as line ranges of the notebook file's own text."""
    found = []
    for first, last in ranges:
        cell, first_in_cell = program.locate(first)
        if cell is None:
            continue
        last_in_cell = first_in_cell + (last - first)
        found.append(
            (
                file_position(text, by_number[cell], first_in_cell, 1, ensure_ascii)[0],
                file_position(text, by_number[cell], last_in_cell, 1, ensure_ascii)[0],
            )
        )
    return found


def _cell_diff(old: str, new: str, name: str, number: int) -> str:
    def lines(text: str) -> List[str]:
        split = text.splitlines(keepends=True)
        if split and not split[-1].endswith(("\n", "\r")):
            split[-1] += "\n"
        return split

    header = f"{name.lstrip('/')}:cell {number}"
    return "".join(difflib.unified_diff(lines(old), lines(new), fromfile=f"a/{header}", tofile=f"b/{header}"))


def _cells_that_do_not_parse(program: _Program) -> List[FileError]:
    """Each cell that is not Python on its own, with CPython's message and the line in the cell."""
    import ast

    flags = ast.PyCF_ONLY_AST | getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
    broken = []
    for number, text in program.masked.items():
        try:
            compile(text, f"<cell {number}>", "exec", flags, dont_inherit=True)
        except SyntaxError as error:
            column = f" (column {error.offset})" if error.offset else ""
            broken.append(FileError(f"cannot parse: {error.msg}{column}", line=error.lineno or 0, cell=number))
        except (ValueError, RecursionError, MemoryError):
            continue
    return broken


def _migrate_program(program: _Program, migrator: Migrator, path: str) -> Optional[Outcome]:
    """The migrator's outcome for the notebook's program, or None when it needs no work."""
    if not program.text or not migrator.needs_work(program.text.encode("utf-8")):
        return None
    try:
        return migrator.migrate(program.text, path)
    except FileError as error:
        cell, line = program.locate(error.line) if error.line else (None, 0)
        raise FileError(error.message, line=line, cell=cell)


def migrate_notebook(
    data: bytes, migrator: Migrator, path: str, name: str, want_diff: bool = False, cell_errors: Optional[List[FileError]] = None
) -> Tuple[bytes, List[FileFinding], str]:
    """``(new bytes, reports with cells, diff)`` for one notebook (the diff: see :func:`notebook_diff`).

    A code cell that does not parse raises :class:`FileError` naming it; with
    ``cell_errors`` given, its error is added there instead, the cell is left
    byte-identical and the other cells are migrated without it.
    """
    text, document, cells = load_notebook(data)
    if notebook_language(document) != "python":
        return data, [], ""
    program, outcome = _migrate_cells(cells, migrator, path, cell_errors)
    reports: List[FileFinding] = []
    new_sources: Dict[int, str] = {}
    program_reports = []
    if outcome is not None:
        program_reports = [_cell_report(FileFinding.of(report), program) for report in outcome.reports]
        reports += program_reports
        if outcome.code != program.text:
            new_sources.update(_split_program(outcome.code, program))
    reports += _migrate_written_files(program, migrator, path, new_sources, cell_errors)
    if cell_errors:
        cell_errors.sort(key=lambda error: error.cell or 0)
    by_number = {cell.number: cell for cell in cells}
    _place_in_file(reports, program_reports, program, text, by_number)
    reports.sort(key=lambda r: (r.cell or 0, r.line, r.column))
    changed = {number: source for number, source in new_sources.items() if source != by_number[number].source}
    if not changed:
        return data, reports, ""
    new_text = splice(text, cells, changed)
    verify_splice(new_text, document, changed)
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    new_data = bom + new_text.encode("utf-8")
    diff_text = ""
    if want_diff:
        # A BOM stays part of line 1, so that the patch matches the file's bytes.
        bom_text = "\ufeff" if bom else ""
        diff_text = notebook_diff(bom_text + text, bom_text + new_text, by_number, changed, name, migrator.notebook_diff)
    return new_data, reports, diff_text


def _migrate_cells(cells: List[Cell], migrator: Migrator, path: str, cell_errors: Optional[List[FileError]]) -> Tuple[_Program, Optional[Outcome]]:
    """The code cells as one program and the migrator's outcome for it. Where the program
    does not parse, the cells that do not parse on their own raise (the first of them), or,
    with ``cell_errors`` given, are added there and left out of the program."""
    program = _build_program(cells)
    try:
        return program, _migrate_program(program, migrator, path)
    except FileError:
        broken = _cells_that_do_not_parse(program)
        if not broken:
            raise
        if cell_errors is None:
            raise broken[0]
        cell_errors.extend(broken)
        program = _build_program(cells, leave_out={error.cell for error in broken})
        return program, _migrate_program(program, migrator, path)


def _migrate_written_files(
    program: _Program, migrator: Migrator, path: str, new_sources: Dict[int, str], cell_errors: Optional[List[FileError]]
) -> List[FileFinding]:
    """The reports of the ``%%writefile name.py`` cells, each body migrated as the module it
    writes; a changed cell's new source goes into ``new_sources``. A body that cannot be
    migrated raises, or, with ``cell_errors`` given, is added there and stays as it is."""
    reports: List[FileFinding] = []
    for number, (head, body, file_name) in program.files.items():
        if not migrator.needs_work(body.encode("utf-8")):
            continue
        offset = head.count("\n")
        try:
            outcome = migrator.migrate(body, os.path.join(os.path.dirname(path), file_name))
        except FileError as error:
            located = FileError(error.message, line=error.line + offset if error.line else 0, cell=number)
            if cell_errors is None:
                raise located
            cell_errors.append(located)  # the module it writes stays as it is
            continue
        reports += [_relocate(FileFinding.of(report), number, -offset) for report in outcome.reports]
        if outcome.code != body:
            new_sources[number] = head + outcome.code
    return reports


def _place_in_file(reports: List[FileFinding], program_reports: List[FileFinding], program: _Program, text: str, by_number: Dict[int, Cell]) -> None:
    """Each report's place in the notebook file's own text, besides its place in its cell."""
    ensure_ascii = uses_ascii_escapes(text)
    for report in reports:
        if report.cell is not None:
            report.file_line, report.file_column = file_position(text, by_number[report.cell], report.line, report.column, ensure_ascii)
            if report.as_read:
                line, column = report.as_read[:2]
                report.file_as_read = file_position(text, by_number[report.cell], line, column, ensure_ascii)
    for report in program_reports:  # the patch is of the JSON text: name its rules on the JSON lines
        if report.change_lines:
            report.change_lines = _file_lines(report.change_lines, program, text, by_number, ensure_ascii)


def notebook_diff(text: str, new_text: str, by_number: Dict[int, "Cell"], changed: Dict[int, str], name: str, style: str = "json") -> str:
    """The notebook's diff: ``json``, a unified diff of the file's own text, which
    ``git apply`` and ``patch`` take (only the changed source lines differ, so
    it stays as small as the change; ``text`` and ``new_text`` start with the
    file's BOM, if it has one); ``cells``, one diff per changed cell's code
    (``name:cell N`` headers), easier to read and not a patch."""
    if style == "cells":
        return "".join(_cell_diff(by_number[number].source, changed[number], name, number) for number in sorted(changed))
    return unified_diff(text, new_text, name)
