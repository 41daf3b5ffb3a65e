"""Many files through worker processes (one file's part: :mod:`migrate_tpu.engine.one_file`).

The engine is generic: it is handed a *migrator* (the protocols of
:mod:`migrate_tpu.engine.contracts`): ``needs_work(data: bytes) -> bool`` (a cheap
textual prefilter, so files that cannot need work are never parsed) and
``migrate(text, path) -> outcome`` (its code, findings and whether it parsed),
which raises :class:`FileError` for input it cannot handle. It reads, decodes,
writes and reports; it knows nothing of what is migrated.

Safety rules (docs/reliability.md explains them to users):

- The parent process reads every file once, applies the prefilter (once: a
  worker gets only files that passed it) and is the only process that writes. Workers get bytes and return bytes, so a worker
  can be killed at any moment without leaving a half-written or temporary
  file behind.
- Files are parsed in worker processes, never in the parent: a file that
  crashes the parser (a stack overflow on a deeply nested expression, the
  system killing a process that uses too much memory) or that takes longer
  than the per-file time limit costs only that file, which is reported.
  There is always at least one worker (``--jobs 1`` and stdin included);
  a handful of files gets only one, since a worker's start-up costs more
  than it saves there.
- Workers end with the parent however it ends, SIGKILL included: each
  holds only its own end of its own pipe, and asks for SIGKILL when its
  parent dies (see :func:`die_with_parent`).
- SIGINT, SIGTERM and SIGHUP stop a run at once: workers are killed, a write
  in progress is finished first (it takes milliseconds), one line is printed
  and the process exits with 128 + the signal number. Every file is then
  either untouched or completely migrated.
- A file that changed on disk after it was read is not overwritten.
- Any file that contains NUL bytes is an error, whatever it mentions: it is
  binary, or UTF-16/32 text in which the textual prefilter cannot see names.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import deque
from contextlib import contextmanager
from multiprocessing.connection import wait as wait_for_any
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, List, Literal, Optional, Sequence, Tuple, Type, Union

from migrate_tpu.engine.cache import ResultCache, unchanged
from migrate_tpu.engine.contracts import Migrator
# one file's part, named here too for the engine's callers (pipeline.FileResult, pipeline.migrate_data, ...)
from migrate_tpu.engine.one_file import (BINARY_MESSAGE, FileResult, display_path, error_result, migrate_candidate,  # noqa: F401
                                         migrate_data, precheck, write_result)
from migrate_tpu.engine.source import SourceError, read_snapshot
from migrate_tpu.engine.workers import Context, Slot, Worker, death_message, reap, start_context, worker_main

# A worker gives up on a file after 60 s plus 60 s per MB of source. The
# environment variable sets a flat limit in seconds instead (0: no limit).
BASE_FILE_TIMEOUT = 60.0
FILE_TIMEOUT_PER_MB = 60.0
FILE_TIMEOUT_VARIABLE = "MIGRATE_TPU_FILE_TIMEOUT"

# A new worker's first file also pays for loading LibCST and the rules: its
# time limit starts this much later.
STARTUP_ALLOWANCE = 15.0

# Extra workers start only when this many files are waiting for one, so that
# a handful of files (a pre-commit batch) is served by a single worker.
SPAWN_BACKLOG = 2
# Once every file has been read, a small backlog stays with the workers there
# are: a new worker first loads LibCST and the rules (about 0.4 s of CPU),
# which costs more than it saves on a handful of files (`check examples/`
# took 3x longer with two workers than with one). More than this many files
# waiting, or a worker busy on one file for longer than LAZY_SPAWN_AFTER
# seconds (a large file), still starts one.
SMALL_BACKLOG = 8
LAZY_SPAWN_AFTER = 1.0

class Interrupted(SystemExit):
    """The run was stopped by a signal; exits with 128 + the signal number."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def file_timeout(value: Optional[float] = None) -> Optional[float]:
    """A flat limit in seconds per file (``value``, else the environment), 0 for none, or None: the default."""
    if value is None:
        raw = os.environ.get(FILE_TIMEOUT_VARIABLE, "").strip()
        try:
            value = float(raw) if raw else None
        except ValueError:
            value = None
    return value


def _limit_for(size: int, flat: Optional[float]) -> Optional[float]:
    if flat is None:
        return BASE_FILE_TIMEOUT + FILE_TIMEOUT_PER_MB * size / 1_000_000
    return flat if flat > 0 else None


def run(
    paths: Sequence[Path],
    migrator: Migrator,
    mode: str,
    jobs: Optional[int] = None,
    timeout: Optional[float] = None,
    cache: Optional[ResultCache] = None,
) -> Iterator[FileResult]:
    """Results in the order of ``paths``; files the prefilter rules out are never parsed.

    Files are read here; candidates are migrated in worker processes and
    written here. While this generator is open, SIGINT, SIGTERM and SIGHUP
    stop the run (see :class:`Interrupted`).
    """
    pool = _Pool(migrator, mode, jobs or default_jobs(), file_timeout(timeout), cache)
    with _SignalGuard(pool) as guard:
        try:
            yield from pool.results(paths, guard)
        finally:
            pool.close()


def migrate_isolated(data: bytes, path: Path, migrator: Migrator, mode: str, timeout: Optional[float] = None) -> Tuple[FileResult, Optional[bytes]]:
    """One file's bytes through a worker process, for source that is not on disk (stdin).

    Like :func:`migrate_data`: nothing is written, and in ``fix`` mode the
    new bytes come back. But a parser crash or a file over the time limit
    becomes ``result.error`` instead of taking this process down, and stop
    signals end the call as they end :func:`run`.
    """
    path = Path(path)
    settled = precheck(path, data, migrator)
    if settled is not None:
        return settled, None
    pool = _Pool(migrator, mode, 1, file_timeout(timeout))
    with _SignalGuard(pool) as guard:
        try:
            return pool.one(path, data, guard)
        finally:
            pool.close()


# -- signals ----------------------------------------------------------------------


def stop_signals() -> "_SignalGuard":
    """A context in which SIGINT, SIGTERM and SIGHUP end the process the way :func:`run` does.

    For the command line to wrap a whole command (discovery included): a
    signal prints one line and exits with 128 + its number instead of a
    traceback. :func:`run` installs its own guard inside, which also stops
    its workers and waits for a write in progress.
    """
    return _SignalGuard(None)


_STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
# What signal.signal returns and takes back: a handler, SIG_DFL / SIG_IGN, or None (not set from Python).
_SignalHandler = Union[Callable[[int, Optional[FrameType]], Any], int, signal.Handlers, None]


class _SignalGuard:
    """Turns stop signals into :class:`Interrupted`, never in the middle of a write."""

    def __init__(self, pool: Optional["_Pool"]) -> None:
        self.pool = pool
        self.owner = os.getpid()
        self.saved: Dict[int, _SignalHandler] = {}
        self.depth = 0
        self.pending: Optional[int] = None
        self.stopping = False

    def __enter__(self) -> "_SignalGuard":
        if threading.current_thread() is not threading.main_thread():
            return self
        for name in _STOP_SIGNALS:
            signum = getattr(signal, name, None)
            if signum is None:
                continue
            try:
                if signal.getsignal(signum) is signal.SIG_IGN:  # nohup, background jobs: respect it
                    continue
                self.saved[signum] = signal.signal(signum, self._handle)
            except (ValueError, OSError):  # pragma: no cover - not the main interpreter
                continue
        return self

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], traceback: Optional[TracebackType]
    ) -> Literal[False]:
        for signum, previous in self.saved.items():
            try:
                signal.signal(signum, previous)
            except (ValueError, OSError, TypeError):  # pragma: no cover
                pass
        self.saved = {}
        return False

    def _handle(self, signum: int, frame: Optional[FrameType]) -> None:
        if os.getpid() != self.owner:  # a worker between fork and its own signal setup
            if signum != signal.SIGINT:
                os._exit(128 + signum)
            return
        if self.stopping:
            return
        if self.depth:
            self.pending = signum
            return
        self.stop(signum)

    def stop(self, signum: int) -> None:
        self.stopping = True
        if self.pool is not None:
            self.pool.kill_all()
        name = signal.Signals(signum).name
        if self.pool is not None and self.pool.mode == "fix":
            written = self.pool.written
            done = f"{written} {'file' if written == 1 else 'files'} written in full, every other file untouched"
        else:
            done = "no file was changed"
        try:
            os.write(2, f"migrate-tpu: interrupted by {name}; stopped ({done}).\n".encode())
        except OSError:  # pragma: no cover - stderr closed
            pass
        raise Interrupted(signum)

    @contextmanager
    def critical(self) -> Iterator[None]:
        """A section that a stop signal waits for (a write: milliseconds)."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if not self.depth and self.pending is not None and not self.stopping:
                signum, self.pending = self.pending, None
                self.stop(signum)


# -- the pool ---------------------------------------------------------------------


class _Pool:
    def __init__(self, migrator: Migrator, mode: str, jobs: int, timeout: Optional[float], cache: Optional[ResultCache] = None) -> None:
        self.cache = cache
        self.migrator = migrator
        self.mode = mode
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self.workers: List[Worker] = []
        self.written = 0
        self._context: Optional[Context] = None
        self.all_read = False  # every path has been read: the backlog is all there is
        self.reading = False  # reading ahead: the first worker starts, no others yet

    # workers ------------------------------------------------------------------

    def _spawn(self) -> Worker:
        if self._context is None:
            self._context = start_context()
        context = self._context
        parent_end, child_end = context.Pipe()
        # Under fork the child gets copies of these parent-side ends, which it
        # must close; under spawn it gets only what is passed, so pass nothing.
        not_ours = [parent_end] + [worker.conn for worker in self.workers] if context.get_start_method() == "fork" else []
        process = context.Process(
            target=worker_main, args=(child_end, self.migrator, self.mode, os.getpid(), not_ours), name="migrate-tpu-worker", daemon=True
        )
        process.start()
        child_end.close()
        worker = Worker(process, parent_end)
        self.workers.append(worker)
        return worker

    def _retire(self, worker: Worker) -> None:
        if worker in self.workers:
            self.workers.remove(worker)
        reap(worker, grace=0.0)

    def _idle_worker(self, backlog: int) -> Optional[Worker]:
        for worker in self.workers:
            if worker.slot is None:
                return worker
        if not self.workers or (len(self.workers) < self.jobs and self._worth_another_worker(backlog)):
            return self._spawn()
        return None

    def _worth_another_worker(self, backlog: int) -> bool:
        if self.reading:  # decided once reading pauses: the tree may be a handful of files
            return False
        if not self.all_read:  # reading paused with the read-ahead window full: a large tree
            return backlog > SPAWN_BACKLOG
        if backlog > SMALL_BACKLOG:
            return True
        now = time.monotonic()
        return any(worker.slot is not None and now >= self._slow_after(worker) for worker in self.workers)

    @staticmethod
    def _slow_after(worker: Worker) -> float:
        # A worker's first file also pays for loading the migrator, which can
        # take seconds on a loaded machine: that is not a sign of a large file.
        return worker.started + LAZY_SPAWN_AFTER + worker.allowance

    def _growth_check_at(self, backlog: int) -> Optional[float]:
        """When a busy worker will have held its file long enough to justify another worker, if it can."""
        if not self.all_read or not backlog or len(self.workers) >= self.jobs:
            return None
        times = [self._slow_after(worker) for worker in self.workers if worker.slot is not None]
        return min(times) if times else None

    def kill_all(self) -> None:
        """Called from the signal handler: workers die at once (they never write)."""
        for worker in list(self.workers):
            if worker.process.pid is None:  # never started: nothing to kill
                continue
            try:
                os.kill(worker.process.pid, signal.SIGKILL)
            except OSError:
                pass

    def close(self) -> None:
        for worker in list(self.workers):
            if worker.slot is None and worker.process.is_alive():
                try:
                    worker.conn.send(None)
                except (OSError, ValueError):
                    pass
            else:
                try:
                    worker.process.kill()
                except (OSError, ValueError):  # pragma: no cover
                    pass
        for worker in list(self.workers):
            reap(worker, grace=2.0)
        self.workers = []

    # the run ------------------------------------------------------------------

    def _prepare(self, path: Path) -> Slot:
        slot = Slot(path)
        try:
            data, snapshot = read_snapshot(path)
        except SourceError as error:
            slot.result = FileResult(display_path(path), error=error.message, scanned=False)
            return slot
        settled = precheck(path, data, self.migrator)
        if settled is not None:
            slot.result = settled
        else:
            if self.cache is not None:
                slot.cache_key = self.cache.key(display_path(path), self.mode, data)
                cached = self.cache.load(slot.cache_key)
                # A cached change still has to be written by fix: only clean results are reused there.
                # Anything but a result (an entry written by something else) is a miss too, and
                # so is a result whose other files (a factory's module, a base class's) changed.
                if isinstance(cached, FileResult) and not (self.mode == "fix" and cached.changed) and unchanged(cached.depends_on):
                    slot.result = cached
                    return slot
            slot.data = data
            slot.snapshot = snapshot
        return slot

    def results(self, paths: Iterable[Path], guard: _SignalGuard) -> Iterator[FileResult]:
        slots: Deque[Slot] = deque()
        waiting: Deque[Slot] = deque()
        source = iter(paths)
        exhausted = False
        outstanding = 0
        window = max(8, self.jobs * 4)
        while True:
            self.reading = True
            while not exhausted and outstanding < window:
                try:
                    path = next(source)
                except StopIteration:
                    exhausted = self.all_read = True
                    break
                slot = self._prepare(Path(path))
                slots.append(slot)
                if slot.result is None:
                    waiting.append(slot)
                    outstanding += 1
                    outstanding -= self._dispatch(waiting)  # start work while reading on
            self.reading = False
            outstanding -= self._dispatch(waiting)
            while slots:
                done = slots[0].result
                if done is None:
                    break
                slots.popleft()
                yield done
            if not slots:
                if exhausted:
                    return
                continue
            outstanding -= self._wait(guard, wake_at=self._growth_check_at(len(waiting)))

    def one(self, path: Path, data: bytes, guard: _SignalGuard) -> Tuple[FileResult, Optional[bytes]]:
        """One candidate's bytes through a worker: its result and, in ``fix`` mode, its new bytes."""
        slot = Slot(path)
        slot.data = data
        slot.keep_output = True
        waiting: Deque[Slot] = deque([slot])
        while slot.result is None:
            self._dispatch(waiting)
            if slot.result is None:
                self._wait(guard)
        return slot.result, slot.output

    def _dispatch(self, waiting: Deque[Slot]) -> int:
        """Hand waiting files to idle (or new) workers; returns files settled without one."""
        settled = 0
        while waiting:
            worker = self._idle_worker(len(waiting))
            if worker is None:
                break
            slot = waiting.popleft()
            if not self._send(worker, slot):
                if slot.result is None:
                    waiting.appendleft(slot)
                else:
                    settled += 1
        return settled

    def _send(self, worker: Worker, slot: Slot) -> bool:
        data = slot.data
        assert data is not None, "only a slot that holds its bytes waits for a worker"
        slot.tries += 1
        try:
            worker.conn.send((str(slot.path), data))
        except (OSError, ValueError):  # the worker died while idle
            self._retire(worker)
            if slot.tries >= 3:
                slot.result = FileResult(display_path(slot.path), error="could not hand this file to a worker process; left unchanged")
                slot.data = None
            return False
        worker.slot = slot
        worker.started = time.monotonic()
        worker.limit = _limit_for(len(data), self.timeout)
        worker.allowance = STARTUP_ALLOWANCE if worker.fresh else 0.0
        worker.fresh = False
        worker.deadline = None if worker.limit is None else worker.started + worker.limit + worker.allowance
        slot.data = None
        return True

    def _wait(self, guard: _SignalGuard, wake_at: Optional[float] = None) -> int:
        """Wait for at least one busy worker to answer, die or run out of time (or
        until ``wake_at``, to reconsider the pool's size); returns files settled."""
        busy = [w for w in self.workers if w.slot is not None]
        if not busy:  # pragma: no cover - the scheduler always keeps one busy here
            return 0
        deadlines = [w.deadline for w in busy if w.deadline is not None] + ([wake_at] if wake_at is not None else [])
        limit = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
        handles = [w.conn for w in busy] + [w.process.sentinel for w in busy]
        ready = set(wait_for_any(handles, limit))
        settled = 0
        now = time.monotonic()
        for worker in busy:
            if worker.conn in ready or worker.process.sentinel in ready:
                payload = None
                try:
                    if worker.conn.poll():
                        payload = worker.conn.recv()
                except (EOFError, OSError):
                    payload = None
                if payload is not None:
                    self._finish(worker, payload, guard)
                else:
                    self._fail(worker, None)
                settled += 1
            elif worker.deadline is not None and now >= worker.deadline:
                elapsed = now - worker.started
                self._fail(worker, f"gave up after {elapsed:.0f} s (too large or too deeply nested to analyse in time; "
                                   f"{FILE_TIMEOUT_VARIABLE} sets the limit); left unchanged")
                settled += 1
        return settled

    def _finish(self, worker: Worker, payload: Tuple[FileResult, Optional[bytes]], guard: _SignalGuard) -> None:
        slot = worker.slot
        assert slot is not None, "only a busy worker answers"
        worker.slot = None
        result, new_data = payload
        if new_data is not None and slot.keep_output:
            slot.output = new_data
        elif new_data is not None:
            with guard.critical():
                write_result(slot.path, new_data, slot.snapshot, result)
                if result.written:
                    self.written += 1
        elif self.cache is not None and slot.cache_key is not None and not result.failed:
            with guard.critical():  # a stop signal must not strand the entry's temp file
                self.cache.store(slot.cache_key, result)
        slot.result = result

    def _fail(self, worker: Worker, message: Optional[str]) -> None:
        slot = worker.slot
        assert slot is not None, "only a busy worker dies or runs out of time"
        worker.slot = None
        if message is None:
            try:
                worker.process.join(1.0)
            except (OSError, ValueError, AssertionError):  # pragma: no cover
                pass
            message = death_message(worker.process.exitcode)
        self._retire(worker)
        slot.result = FileResult(display_path(slot.path), error=message)
