"""One file through the migrator, and many files through a process pool.

The engine is generic: it is handed a *migrator* with two methods,
``needs_work(data: bytes) -> bool`` (a cheap textual prefilter, so files that
cannot need work are never parsed) and ``migrate(text, path) -> outcome``
(``outcome.code`` and ``outcome.reports``), which raises :class:`FileError`
for input it cannot handle. It reads, decodes, writes and reports; it knows
nothing of what is migrated.
"""

from __future__ import annotations

import difflib
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, List, Optional, Sequence

from migrate_tpu.engine.source import SourceError, atomic_write, decode, read_bytes

# Below this many files that pass the prefilter, a pool costs more than it saves.
POOL_THRESHOLD = 6


class FileError(Exception):
    """Input the migrator cannot handle; ``line`` is 1-based, 0 when unknown."""

    def __init__(self, message: str, line: int = 0, cell: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.cell = cell


@dataclass
class FileResult:
    path: str
    changed: bool = False
    parsed: bool = False
    reports: List[object] = field(default_factory=list)
    diff: bytes = b""
    error: Optional[str] = None
    error_line: int = 0
    written: bool = False

    @property
    def failed(self) -> bool:
        return self.error is not None


def display_path(path: Path) -> str:
    """The path as users see it: relative to the current folder when inside it."""
    try:
        return Path(os.path.abspath(path)).relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_posix()


def unified_diff(old: str, new: str, name: str) -> str:
    name = name.lstrip("/")  # an absolute path outside the current folder
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    lines = []
    for line in difflib.unified_diff(old_lines, new_lines, fromfile=f"a/{name}", tofile=f"b/{name}"):
        if line.startswith(("---", "+++")):
            lines.append(line)
        elif not line.endswith(("\n", "\r")):
            lines.append(line + "\n\\ No newline at end of file\n")
        else:
            lines.append(line)
    return "".join(lines)


def process_file(path: Path, migrator, mode: str, data: Optional[bytes] = None) -> FileResult:
    """Migrate one file: ``mode`` is ``diff`` (no writes), ``fix`` or ``check``."""
    name = display_path(path)
    result = FileResult(name)
    try:
        if data is None:
            data = read_bytes(path)
        if not migrator.needs_work(data):
            return result
        if path.suffix == ".ipynb":
            from migrate_tpu.engine.notebook import migrate_notebook

            new_data, reports, diff_text = migrate_notebook(data, migrator, str(path), name, want_diff=mode == "diff")
            result.parsed = True
            result.reports = reports
            if new_data != data:
                result.changed = True
                if mode == "diff":
                    result.diff = diff_text.encode("utf-8")
                elif mode == "fix":
                    atomic_write(path, new_data)
                    result.written = True
            return result
        decoded = decode(data)
        result.parsed = True
        outcome = migrator.migrate(decoded.text, str(path))
        result.reports = list(outcome.reports)
        if outcome.code != decoded.text:
            new_data = decoded.encode(outcome.code)
            result.changed = True
            if mode == "diff":
                # A BOM stays part of line 1 in the diff, so that patch and git apply match the bytes.
                bom = "\ufeff" if decoded.encoding == "utf-8-sig" else ""
                result.diff = unified_diff(bom + decoded.text, bom + outcome.code, name).encode(decoded.encoding.replace("-sig", ""))
            elif mode == "fix":
                atomic_write(path, new_data)
                result.written = True
    except (SourceError, FileError) as error:
        result.error = error.message
        result.error_line = error.line
        if getattr(error, "cell", None) is not None:
            result.error = f"cell {error.cell}: {error.message}"
        result.changed = False
        result.diff = b""
    except RecursionError:
        result.error = "too deeply nested to analyse"
    except MemoryError:
        result.error = "out of memory while analysing"
    return result


# -- the pool ---------------------------------------------------------------------

_worker_state = {}


def _init_worker(migrator, mode: str) -> None:
    import signal

    # The parent decides when to stop; workers finish or drop their file.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_state["migrator"] = migrator
    _worker_state["mode"] = mode


def _work(path: Path) -> FileResult:
    return process_file(path, _worker_state["migrator"], _worker_state["mode"])


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def run(paths: Sequence[Path], migrator, mode: str, jobs: Optional[int] = None) -> Iterator[FileResult]:
    """Results in the order of ``paths``; files the prefilter rules out are never parsed."""
    jobs = jobs or default_jobs()
    candidates: List[Path] = []
    for path in paths:
        try:
            data = read_bytes(path)
        except SourceError as error:
            yield FileResult(display_path(path), error=error.message)
            continue
        if migrator.needs_work(data):
            candidates.append(path)
        else:
            yield FileResult(display_path(path))
    if jobs <= 1 or len(candidates) < POOL_THRESHOLD:
        for path in candidates:
            yield process_file(path, migrator, mode)
        return
    yield from _pooled(candidates, migrator, mode, jobs)


def _pooled(candidates: List[Path], migrator, mode: str, jobs: int) -> Iterator[FileResult]:
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() and sys.platform != "darwin" else "spawn"
    context = multiprocessing.get_context(method)
    chunksize = max(1, min(16, len(candidates) // (jobs * 8)))
    executor = ProcessPoolExecutor(max_workers=min(jobs, len(candidates)), mp_context=context, initializer=_init_worker, initargs=(migrator, mode))
    done = set()
    try:
        for path, result in zip(candidates, executor.map(_work, candidates, chunksize=chunksize)):
            done.add(path)
            yield result
    except Exception as error:  # a worker died: its files are reported, the rest go on alone
        from concurrent.futures.process import BrokenProcessPool

        if not isinstance(error, BrokenProcessPool):
            raise
        executor.shutdown(wait=False, cancel_futures=True)
        executor = None
        for path in candidates:
            if path in done:
                continue
            yield _isolated(path, migrator, mode, context)
    finally:
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)


def _isolated(path: Path, migrator, mode: str, context) -> FileResult:
    """Process one file in a fresh worker, so that a crash takes only this file."""
    from concurrent.futures.process import BrokenProcessPool

    with ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_init_worker, initargs=(migrator, mode)) as single:
        try:
            return single.submit(_work, path).result()
        except BrokenProcessPool:
            return FileResult(display_path(path), error="the worker processing this file died (crash or out of memory); file left unchanged")
