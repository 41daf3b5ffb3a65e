"""The worker processes of :mod:`migrate_tpu.engine.pipeline`, one at a time: how one is
started (``start_context``, ``worker_main``), how it ends with its parent however the parent
ends (``die_with_parent``), what the parent keeps of it (``Worker``, and ``Slot``, the path it
is given), how it is reaped and what its death means to the file it had (``death_message``).

Apart from the pipeline because none of this decides anything about a run: the pool there
chooses when a worker starts, what it is given, how long it may take and when it is killed;
a worker only takes bytes and gives back a result.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import threading
import time
from multiprocessing.connection import Connection
from multiprocessing.context import ForkContext, SpawnContext
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Dict, Optional, Sequence, Union

from migrate_tpu.engine.cache import Fingerprint
from migrate_tpu.engine.contracts import Migrator
from migrate_tpu.engine.one_file import FileResult, error_result, migrate_candidate

# Test hook, documented in docs/reliability.md: a worker that is handed a file
# with exactly this base name kills itself with SIGKILL, as the kernel's
# out-of-memory killer would. It exists so that tests can check that a dying
# worker takes down only its own file.
CRASH_HOOK_VARIABLE = "MIGRATE_TPU_TEST_CRASH"

# How many new container objects a worker allocates (net) before the cyclic garbage
# collector runs; Python's default is 700. A LibCST tree is tens of thousands of small
# objects held until its file is done, so at 700 the collector ran 660 times over
# tf-models-official 2.4.0's 104 candidate files, each time walking objects that were
# all alive: 6-10% of a worker's CPU there (benchmarks/README.md). Garbage still goes
# at once when nothing refers to it; only reference cycles wait for the collector.
WORKER_GC_THRESHOLD = 50_000

# How workers are started: fork where it is safe (not on macOS), else spawn.
Context = Union[ForkContext, SpawnContext]


def start_context() -> Context:
    if "fork" in multiprocessing.get_all_start_methods() and sys.platform != "darwin":
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def die_with_parent(parent: int) -> None:
    """End this worker when the process that started it ends, however it ends.

    A parent killed with SIGKILL closes nothing in an orderly way, so EOF on
    the pipe is not enough (a worker busy on a large file reads no pipe):
    on Linux the kernel sends SIGKILL to the worker when its parent dies;
    elsewhere a thread watches the parent's process id.
    """
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # the parent died before prctl took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):  # pragma: no cover - no usable libc
            pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="migrate-tpu-parent-watch", daemon=True).start()


def worker_main(conn: Connection, migrator: Migrator, mode: str, parent: int, not_ours: Sequence[Connection] = ()) -> None:
    # A forked worker inherits the parent's end of its own pipe and of every
    # earlier worker's pipe. Holding them would keep those pipes open after
    # the parent is gone, so no worker would ever see EOF: close them first.
    for inherited in not_ours:
        try:
            inherited.close()
        except OSError:  # pragma: no cover
            pass
    die_with_parent(parent)
    # The parent decides when to stop: it kills workers, which hold no state
    # worth saving (they never write).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    # A crash is reported by the parent in one line; warnings about the
    # analysed code (SyntaxWarning from compile) are not the user's output.
    import faulthandler
    import warnings

    faulthandler.disable()
    warnings.simplefilter("ignore")
    # What the worker inherited (modules, rule tables) lives as long as it does: the
    # collector leaves it alone from now on, and runs less often (WORKER_GC_THRESHOLD).
    gc.freeze()
    gc.set_threshold(WORKER_GC_THRESHOLD, *gc.get_threshold()[1:])
    crash_on = os.environ.get(CRASH_HOOK_VARIABLE)
    seen: Dict[str, Fingerprint] = {}  # one run: the worker ends with it
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        path = Path(task[0])
        if crash_on and path.name == crash_on:
            os.kill(os.getpid(), signal.SIGKILL)
        payload = migrate_candidate(path, task[1], migrator, mode, seen)  # the parent ran precheck
        try:
            conn.send(payload)
        except (EOFError, OSError):
            return
        except Exception as error:  # a result that cannot be pickled
            try:
                conn.send((error_result(payload[0].path, error), None))
            except Exception:
                return


def death_message(exitcode: Optional[int]) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        if -exitcode == getattr(signal, "SIGKILL", 9):
            cause = f"was killed ({name}), often by the system when memory runs out"
        elif -exitcode == getattr(signal, "SIGSEGV", 11):
            cause = f"crashed ({name}), often a stack overflow on a too deeply nested expression"
        else:
            cause = f"died ({name})"
    elif exitcode is None:
        cause = "stopped answering"
    else:
        cause = f"exited unexpectedly (status {exitcode})"
    return f"the worker process analysing this file {cause}; left unchanged"


class Slot:
    """One path of the run, in order: its bytes until sent, then its result."""

    __slots__ = ("path", "data", "snapshot", "result", "tries", "cache_key", "keep_output", "output")

    def __init__(self, path: Path) -> None:
        self.path = path
        # keep_output: new bytes are handed back in ``output`` instead of written (stdin).
        self.keep_output = False
        self.output: Optional[bytes] = None
        self.cache_key: Optional[str] = None
        self.data: Optional[bytes] = None
        self.snapshot: Optional[os.stat_result] = None
        self.result: Optional[FileResult] = None
        self.tries = 0


class Worker:
    __slots__ = ("process", "conn", "slot", "deadline", "limit", "started", "fresh", "allowance")

    def __init__(self, process: BaseProcess, conn: Connection) -> None:
        self.process = process
        self.conn = conn
        self.slot: Optional[Slot] = None
        self.deadline: Optional[float] = None
        self.limit: Optional[float] = None
        self.started = 0.0
        self.fresh = True  # its first file also pays for loading the migrator
        self.allowance = 0.0  # seconds added to the current file's time limit for that


def reap(worker: Worker, grace: float) -> None:
    """Let a worker end within ``grace`` seconds, kill it past that, and close its pipe."""
    try:
        if grace:
            worker.process.join(grace)
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(1.0)
    except (OSError, ValueError, AssertionError):  # pragma: no cover
        pass
    try:
        worker.conn.close()
    except OSError:  # pragma: no cover
        pass
