"""One file through the migrator: read checks, the migrator's run on its text or notebook,
the result and its diff, and the write that keeps a file whole (the parent writes; a worker
only returns bytes).  :mod:`migrate_tpu.engine.pipeline` runs many files through worker
processes."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from migrate_tpu.engine.cache import Fingerprint, fingerprints
from migrate_tpu.engine.contracts import Migrator
from migrate_tpu.engine.file_error import FileError
from migrate_tpu.engine.file_finding import FileFinding
from migrate_tpu.engine.patch import unified_diff
from migrate_tpu.engine.source import SourceError, atomic_write, decode


BINARY_MESSAGE = "binary file (contains NUL bytes), not Python source; left unchanged"


@dataclass
class FileResult:
    path: str
    changed: bool = False
    # parsed: the migrator parsed the file (a parse that failed is an error,
    # not a parse); skipped: the prefilter ruled it out, so it was only
    # checked for being readable text (see :func:`precheck`).
    parsed: bool = False
    skipped: bool = False
    reports: List[FileFinding] = field(default_factory=list)
    diff: bytes = b""
    error: Optional[str] = None
    error_line: int = 0
    written: bool = False
    # False for a path that was never read (missing, a broken link, unreadable): an
    # error, not a scanned file.
    scanned: bool = True
    # The other files the result depends on, as they were: (path, size, mtime_ns) each
    # (``cache.fingerprints``); a cached result is reused only while they still match.
    depends_on: Tuple[Tuple[str, int, int], ...] = ()

    @property
    def failed(self) -> bool:
        return self.error is not None


def display_path(path: Path) -> str:
    """The path as users see it: relative to the current folder when inside it.

    Called for every file of a tree, so it works on strings, not Path objects.
    """
    text = os.fspath(path)
    absolute = os.path.abspath(text)
    here = os.getcwd()
    prefix = here if here.endswith(os.sep) else here + os.sep
    if absolute.startswith(prefix):
        relative = absolute[len(prefix) :]
    elif absolute == here:
        relative = "."
    else:
        relative = text
    return relative.replace(os.sep, "/") if os.sep != "/" else relative


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def precheck(path: Path, data: bytes, migrator: Migrator) -> Optional[FileResult]:
    """What is decided about a file before any parse; None when the migrator must see it.

    Run in the parent for every file read. A file with NUL bytes is an error
    whatever it mentions (binary, or UTF-16/32 text the prefilter cannot
    read). A file the prefilter rules out is not parsed, but it is still
    checked for being decodable text (a notebook: a JSON object), so that
    an unreadable file is named even when it has nothing to migrate.
    """
    name = display_path(path)
    if b"\x00" in data:
        return FileResult(name, error=BINARY_MESSAGE, error_line=data[: data.index(b"\x00")].count(b"\n") + 1)
    if migrator.needs_work(data):
        return None
    try:
        if path.suffix == ".ipynb":
            from migrate_tpu.engine.notebook_json import check_notebook_text

            check_notebook_text(data)
        else:
            decode(data)
    except (SourceError, FileError) as error:
        return error_result(name, error)
    return FileResult(name, skipped=True)


def error_result(name: str, error: BaseException, parsed: bool = False) -> FileResult:
    """The one mapping from an exception met while migrating a file to that file's error
    (the migrator raises :class:`FileError` for input it cannot take; whatever else
    escapes it is its bug, which costs this file only)."""
    if isinstance(error, (SourceError, FileError)):
        message = _one_line(error.message)
        if isinstance(error, FileError) and error.cell is not None:
            message = f"cell {error.cell}: {message}"
        return FileResult(name, parsed=parsed, error=message, error_line=error.line)
    if isinstance(error, RecursionError):
        return FileResult(name, parsed=parsed, error="too deeply nested to analyse; left unchanged")
    if isinstance(error, MemoryError):
        return FileResult(name, parsed=parsed, error="out of memory while analysing; left unchanged")
    # A bug in a rule (or a result that cannot be sent back) must cost one file, not the run.
    message = _one_line(f"{type(error).__name__}: {error}")[:300]
    return FileResult(name, parsed=parsed, error=f"internal error ({message}); left unchanged, please report it")


def migrate_data(path: Path, data: bytes, migrator: Migrator, mode: str) -> Tuple[FileResult, Optional[bytes]]:
    """Migrate one file's bytes in this process, without touching the disk.

    Returns the result and, in ``fix`` mode when the file changes, the new
    bytes to write. Never raises for a bad file: every problem becomes
    ``result.error``, a one-line reason. No isolation: :func:`run` and
    :func:`migrate_isolated` do the same in two steps, :func:`precheck` here and
    the rest in a worker process.
    """
    settled = precheck(path, data, migrator)
    if settled is not None:
        return settled, None
    return migrate_candidate(path, data, migrator, mode)


def migrate_candidate(
    path: Path, data: bytes, migrator: Migrator, mode: str, seen: Optional[Dict[str, Fingerprint]] = None
) -> Tuple[FileResult, Optional[bytes]]:
    """A file that passed :func:`precheck`: parse, migrate, and produce the new bytes or diff.
    ``seen``: the fingerprints of the files consulted so far in the run (``cache.fingerprints``)."""
    name = display_path(path)
    result = FileResult(name)
    new_data: Optional[bytes] = None
    migrator.consulted_files()  # what earlier files read is theirs, not this one's
    try:
        result, new_data = _migrate_text_or_notebook(path, data, migrator, mode, name, result)
    except Exception as error:
        return error_result(name, error), None
    result.depends_on = fingerprints((other for other in migrator.consulted_files() if not _same_file(other, path)), seen)
    return result, new_data


def _same_file(name: str, path: Path) -> bool:
    return os.path.abspath(name) == os.path.abspath(path)


def _migrate_text_or_notebook(path: Path, data: bytes, migrator: Migrator, mode: str, name: str, result: FileResult) -> Tuple[FileResult, Optional[bytes]]:
    """Parse, migrate, and produce the new bytes or diff (raises what the migrator raises)."""
    new_data: Optional[bytes] = None
    if path.suffix == ".ipynb":
        from migrate_tpu.engine.notebook import migrate_notebook

        cell_errors: List[FileError] = []
        changed_data, reports, diff_text = migrate_notebook(data, migrator, str(path), name, want_diff=mode == "diff", cell_errors=cell_errors)
        if cell_errors:  # cells that do not parse, left as they are; the others are migrated
            result = _cell_errors_result(name, cell_errors)
        result.parsed = True
        result.reports = reports
        if changed_data != data:
            result.changed = True
            if mode == "diff":
                result.diff = diff_text.encode("utf-8")
            elif mode == "fix":
                new_data = changed_data
        return result, new_data
    decoded = decode(data)
    outcome = migrator.migrate(decoded.text, str(path))
    # The migrator may rule the file out unparsed (the codemod's second prefilter stage).
    result.parsed = outcome.parsed
    result.skipped = not result.parsed
    result.reports = [FileFinding.of(report) for report in outcome.reports]
    if outcome.code != decoded.text:
        encoded = decoded.encode(outcome.code)
        result.changed = True
        if mode == "diff":
            # A BOM stays part of line 1 in the diff, so that patch and git apply match the bytes.
            bom = "\ufeff" if decoded.encoding == "utf-8-sig" else ""
            result.diff = unified_diff(bom + decoded.text, bom + outcome.code, name).encode(decoded.encoding.replace("-sig", ""))
        elif mode == "fix":
            new_data = encoded
    return result, new_data


def _cell_errors_result(name: str, errors: Sequence[FileError]) -> FileResult:
    first = errors[0]
    result = error_result(name, first)
    message = result.error or ""  # error_result gives every error a message
    others = [f"cell {error.cell}" + (f", line {error.line}," if error.line else "") for error in errors[1:]]
    if others:
        message += f"; {' and '.join(others)} {'does' if len(others) == 1 else 'do'} not parse either"
    result.error = message + "; cells that do not parse are left unchanged, the other cells are handled as usual"
    return result


def write_result(path: Path, data: bytes, snapshot: Optional[os.stat_result], result: FileResult) -> None:
    try:
        atomic_write(path, data, expected=snapshot)
        result.written = True
    except SourceError as error:
        result.error = error.message
        result.error_line = 0
        result.changed = False
        for report in result.reports:  # nothing was applied after all: the file is as read
            report.applied = False
            _place_as_read(report)


def _place_as_read(report: FileFinding) -> None:
    """Put a finding back where it is in the file as read (fix mode reports positions
    in the fixed code, and every applied fix at line 0)."""
    if not report.as_read:
        return
    report.line, report.column, report.end_line, report.end_column = report.as_read
    if report.file_as_read:  # a notebook cell's finding: its place in the JSON text too
        report.file_line, report.file_column = report.file_as_read
