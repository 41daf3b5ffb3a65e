"""Two of verify's runs at once, where they do not depend on each other and the machine has room.

verify's runs are processes that mostly wait on one core each (the emulated cores' work is
small; TensorFlow's start and tracing are single-threaded Python), so on two cores the original
and its migration, or blame's baseline and its first test, take about the time of one run
side by side.  The run in this process goes as :func:`running.run_one` runs it; the other runs
in a process of its own (:mod:`migrate_tpu.runtime.process.launch_apart`), forked from the same warm
servers, in its own copy of the folder as always.

Room is what decides, never the verdict:

* a second run starts only with at least two CPUs this process may use and
  :data:`START_AVAILABLE` of memory available (``--jobs 1`` or ``MIGRATE_TPU_VERIFY_JOBS=1``:
  never);
* while both run, the memory available is watched; under :data:`FLOOR` (the larger of 2 GiB and
  a tenth of the machine's) the side run is stopped, and run again alone, in a fresh copy,
  after the other;
* a run of a pair killed by SIGKILL (the kernel's out-of-memory killer) is run again alone
  too (its partner, where it ended well, is kept);
* once two runs did not fit, the rest of the command runs one after the other.  A pair's
  results are used as they are only where neither run was stopped, so a verdict is the one the
  same runs would give one after the other.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from migrate_tpu.runtime.process import launch_apart  # the caller's half: standard library only
from migrate_tpu.runtime.process.launch import builds_its_own_cluster
from migrate_tpu.verify.runs.plan import copy_tree, put_in_place
from migrate_tpu.verify.runs.running import RunRequest, run_one
from migrate_tpu.verify.values.verdict import RunResult

#: ``MIGRATE_TPU_VERIFY_JOBS=1``: verify's runs one after the other (as ``--jobs 1``).
JOBS_VARIABLE = "MIGRATE_TPU_VERIFY_JOBS"
#: Memory available that a second run needs to start beside the first.
START_AVAILABLE = 4 << 30
#: Under this much available memory while two run (or under a tenth of the machine's,
#: whichever is larger), the side run is stopped and run again alone.
FLOOR = 2 << 30
#: How often the memory available is read while two run (seconds).
WATCH_SECONDS = 0.2
#: Exit statuses of a run killed by SIGKILL: as ``Popen.wait`` gives it, and as the launcher's
#: supervision (``--timeout``) does.
KILLED = frozenset({-signal.SIGKILL, 128 + signal.SIGKILL})
#: Where this module keeps the side run's outcome and its own output, beside the run's record.
RESULT_SUFFIX = ".result.json"


def jobs_wanted(jobs: Optional[int]) -> int:
    """How many runs at once: ``jobs`` (1 or 2; more is 2), else ``MIGRATE_TPU_VERIFY_JOBS``, else 2."""
    if jobs is None:
        try:
            jobs = int(os.environ.get(JOBS_VARIABLE) or 2)
        except ValueError:
            jobs = 2
    return 1 if jobs <= 1 else 2


def memory_available() -> Optional[int]:
    """Bytes of memory available (``MemAvailable`` of /proc/meminfo), or ``None`` where unknown."""
    return _meminfo().get("MemAvailable")


def _meminfo() -> Dict[str, int]:
    found: Dict[str, int] = {}
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                name, _, value = line.partition(":")
                parts = value.split()
                if parts and parts[0].isdigit():
                    found[name] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    except OSError:
        pass
    return found


def floor() -> int:
    """The memory available under which a side run is stopped (see the module's docstring)."""
    return max(FLOOR, _meminfo().get("MemTotal", 0) // 10)


#: Set once two runs did not fit in memory: this process runs the rest one after the other.
_SHORT = {"of_memory": False}


def room_for_two(jobs: Optional[int]) -> bool:
    """Whether a second run may start beside one now (never again once two did not fit)."""
    if jobs_wanted(jobs) < 2 or _SHORT["of_memory"]:
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    available = memory_available()
    return cpus >= 2 and available is not None and available >= START_AVAILABLE


class SideRun:
    """A run in a process of its own (see the module's docstring); :meth:`finish` gives its
    result, or ``None`` where it was stopped for want of memory or killed (run it again alone)."""

    def __init__(self, request: RunRequest) -> None:
        self.request = request
        self.result_path = request.record_path.with_suffix(RESULT_SUFFIX)
        self.stopped_for_memory = False
        self._done = threading.Event()
        env = dict(os.environ)
        for name, value in request.variables().items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        files = launch_apart.ApartFiles(str(request.stdout_path), str(request.stderr_path), str(self.result_path),
                                        str(request.record_path.with_suffix(".side.log")))
        self.process, lifeline = launch_apart.start(request.copy.program, request.args, request.launch_options(), request.copy.cwd, env, files)
        self._lifeline: Optional[int] = lifeline  # closes when this process ends: the side run ends too
        self._watcher = threading.Thread(target=self._watch_memory, name="migrate-tpu-verify-memory", daemon=True)
        self._watcher.start()

    def _watch_memory(self) -> None:
        low = floor()
        while not self._done.wait(WATCH_SECONDS):
            available = memory_available()
            if available is not None and available < low and self.process.poll() is None:
                self.stopped_for_memory = _SHORT["of_memory"] = True
                self._kill()
                return

    def _kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # its group: it leads one (start_new_session)
        except OSError:
            pass

    def finish(self) -> Optional[RunResult]:
        """Wait for the run; its result, or ``None`` where it did not end on its own."""
        try:
            self.process.wait()
        finally:
            self._close()
        if self.stopped_for_memory or not self.result_path.exists():
            end_processes_in(self.request.copy.root)  # its copy is put back for a run alone
            return None
        outcome = json.loads(self.result_path.read_text("utf-8"))
        status = int(outcome["status"])
        if status == 130:  # the run was interrupted (Ctrl-C): so is verification
            raise KeyboardInterrupt
        if status in KILLED:
            _SHORT["of_memory"] = True
            return None
        return self.request.result(status, float(outcome["seconds"]))

    def stop(self) -> None:
        """End the run now (verification stops, or no longer needs it), every process of it:
        its copy may be put back for a run again alone as soon as this returns."""
        if self.process.poll() is None:
            self._kill()
        try:
            self.process.wait()
        finally:
            self._close()
            end_processes_in(self.request.copy.root)

    def _close(self) -> None:
        self._done.set()
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None


#: How long :func:`end_processes_in` waits for what it killed to be gone (seconds).
LEFTOVER_SECONDS = 10.0


def processes_in(folder: Path) -> List[int]:
    """The pids of this user's processes whose working folder is ``folder`` or below it (Linux's
    /proc; none where it cannot be read)."""
    root = str(folder.resolve())
    found: List[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cwd = os.readlink(os.path.join("/proc", entry, "cwd"))
        except OSError:  # gone, or another user's
            continue
        if cwd == root or cwd.startswith(root + os.sep):
            found.append(int(entry))
    return found


def end_processes_in(folder: Path) -> None:
    """End every process still working in a side run's copy, and wait until none is left.

    Stopping the launcher's process group does not end the run with it: a warm run (and whatever
    a program starts with a session of its own) is in another group and ends only once it notices
    its launcher gone, and meanwhile it can write into the copy that the rerun is about to get.
    Every process of a run works in its copy (the runtime starts it there), which names them."""
    deadline = time.monotonic() + LEFTOVER_SECONDS
    while time.monotonic() < deadline:
        left = processes_in(folder)
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)


def start_beside(request: RunRequest, jobs: Optional[int]) -> Optional[SideRun]:
    """The run started in a process of its own, or ``None`` where there is no room for a second
    run (the caller runs it in turn)."""
    return SideRun(request) if _may_pair(request, jobs) else None


def _may_pair(request: RunRequest, jobs: Optional[int]) -> bool:
    """Whether ``request`` may run beside another now: room for two, and not a multi-client
    cluster (its workers' ports are taken when it starts, not before)."""
    return room_for_two(jobs) and not (request.hosts and builds_its_own_cluster(request.copy.program))


def killed(run: RunResult) -> bool:
    """Whether a run of a pair was killed by SIGKILL (the out-of-memory killer, where two ran at
    once): then the rest runs one after the other."""
    if run.status in KILLED:
        _SHORT["of_memory"] = True
        return True
    return False


def run_pair(first: RunRequest, second: RunRequest, jobs: Optional[int]) -> Tuple[RunResult, RunResult]:
    """Both runs, ``second`` beside ``first`` where there is room, with the results one after the
    other would give: a run that was stopped or killed runs again alone, from a spare of its copy
    made before either ran."""
    if not _may_pair(second, jobs):
        return run_one(first), run_one(second)
    spares = [_spare(request.copy.root) for request in (first, second)]
    try:
        side = SideRun(second)
        try:
            one = run_one(first)
            other = side.finish()
        finally:
            side.stop()
        if killed(one):
            put_in_place(first.copy, spares[0])
            one = run_one(first)
        if other is None:
            put_in_place(second.copy, spares[1])
            other = run_one(second)
        return one, other
    finally:
        for spare in spares:
            shutil.rmtree(spare, ignore_errors=True)


def _spare(root: Path) -> Path:
    spare = root.with_name(root.name + ".spare")
    copy_tree(root, spare)
    return spare
