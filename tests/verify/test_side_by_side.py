"""verify's two runs at once (migrate_tpu/verify/runs/side_by_side.py), through the real launcher and
real processes, with a stand-in interpreter that runs the program as plain Python (no
TensorFlow): the pair really overlaps, gives what one run after the other gives, and a run that
was killed, or stopped for want of memory, runs again alone from an untouched copy."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from migrate_tpu.runtime.process import launch_apart
from migrate_tpu.runtime.process.warm_pool import _alive  # zombie-aware, as the pool checks its servers
from migrate_tpu.verify.runs import side_by_side
from migrate_tpu.verify.runs.plan import Copy
from migrate_tpu.verify.runs.running import RunRequest

#: Runs the program (the last argument) as plain Python, as `python -m migrate_tpu.runtime`
#: would under the emulation, ending when its launcher is gone as the runtime's runner does
#: first thing; a record is what the program writes itself.
STAND_IN = f"""#!{sys.executable}
import runpy, sys
from migrate_tpu.runtime.process import pod
pod.watch_launcher()
sys.argv = sys.argv[-1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""

#: A program that writes its record, names what it found in its folder and, told so, waits for
#: a partner (two runs at once) or kills itself the first time it runs.
PROGRAM = """import json, os, signal, sys, time
here = os.path.dirname(os.path.abspath(__file__))
meeting = os.environ["MEETING"]
found = sorted(os.listdir(here))
with open(os.path.join(meeting, "pid-" + os.environ.get("ROLE", "")), "w") as handle:
    handle.write(str(os.getpid()))
with open(os.path.join(here, "dirt"), "w") as handle:
    handle.write("a run was here")
role = os.environ.get("ROLE", "")
if role == "wait-for-partner":
    deadline = time.time() + 120
    while not os.path.exists(os.path.join(meeting, "partner")) and time.time() < deadline:
        time.sleep(0.05)
    met = os.path.exists(os.path.join(meeting, "partner"))
elif role == "partner":
    open(os.path.join(meeting, "partner"), "w").close()
    met = True
else:
    met = None
if role == "die-once" and not os.path.exists(os.path.join(meeting, "died")):
    open(os.path.join(meeting, "died"), "w").close()
    os.kill(os.getpid(), signal.SIGKILL)
if role == "grow":
    time.sleep(60)  # stopped by the memory watch long before this
if role == "linger":
    # a process of the run in a session of its own (as a warm run is): stopping the launcher's
    # group leaves it, and it goes on writing into the copy
    if os.fork() == 0:
        os.setsid()
        with open(os.path.join(meeting, "pid-linger-child"), "w") as handle:
            handle.write(str(os.getpid()))
        for index in range(600):
            with open(os.path.join(here, "late-{}".format(index)), "w") as handle:
                handle.write("written after the stop")
            time.sleep(0.01)
        os._exit(0)
    time.sleep(60)
print("ran", role)
with open(os.environ["MIGRATE_TPU_RECORD"], "w") as handle:
    json.dump({"exit_status": 0, "steps": [], "found": found, "met": met, "nice": os.getpriority(os.PRIO_PROCESS, 0)}, handle)
"""


@pytest.fixture
def world(tmp_path, monkeypatch):
    python = tmp_path / "stand-in-python"
    python.write_text(STAND_IN)
    python.chmod(0o755)
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    monkeypatch.setenv("MIGRATE_TPU_WARM", "0")  # a stand-in has no warm server
    monkeypatch.setenv("MEETING", str(meeting))
    monkeypatch.delenv(side_by_side.JOBS_VARIABLE, raising=False)
    monkeypatch.setattr(side_by_side, "START_AVAILABLE", 0)  # room is what these tests set, not the machine
    monkeypatch.setitem(side_by_side._SHORT, "of_memory", False)  # and no earlier test's shortage
    return tmp_path, python


def _request(world, name, role):
    tmp_path, python = world
    root = tmp_path / name
    root.mkdir()
    (root / "program.py").write_text(PROGRAM)
    copy = Copy(root, name, root / "program.py", root, "program.py")
    return RunRequest(copy, [], "2.4", str(python), None, 0, None, None, None, 120.0, tmp_path / f"{name}.json",
                      environment={"ROLE": role})


def test_a_pair_runs_at_once_and_gives_what_each_run_alone_gives(world, monkeypatch):
    monkeypatch.setattr(side_by_side, "room_for_two", lambda jobs: True)
    first, second = _request(world, "first", "wait-for-partner"), _request(world, "second", "partner")
    one, other = side_by_side.run_pair(first, second, None)
    assert (one.status, other.status) == (0, 0), one.stderr + other.stderr
    assert one.record["met"] is True  # the first waited for the second: they overlapped
    assert one.record["found"] == other.record["found"] == ["program.py"]
    assert one.stdout == "ran wait-for-partner\n" and other.stdout == "ran partner\n"
    # the run beside yields the CPU to the other (where both want every core)
    assert other.record["nice"] >= one.record["nice"] + launch_apart.SIDE_NICE or other.record["nice"] == 19
    assert not list(Path(world[0]).glob("*.spare"))


def test_without_room_the_pair_runs_one_after_the_other(world, monkeypatch):
    monkeypatch.setattr(side_by_side, "room_for_two", lambda jobs: False)
    one, other = side_by_side.run_pair(_request(world, "first", ""), _request(world, "second", "partner"), 1)
    assert (one.status, other.status) == (0, 0)
    assert one.record["met"] is None and other.record["met"] is True


def test_a_run_killed_beside_another_runs_again_alone_from_an_untouched_copy(world, monkeypatch):
    monkeypatch.setattr(side_by_side, "room_for_two", lambda jobs: True)
    one, other = side_by_side.run_pair(_request(world, "first", ""), _request(world, "second", "die-once"), None)
    assert (one.status, other.status) == (0, 0), other.stderr
    assert (Path(world[0]) / "meeting" / "died").exists()  # it was killed once
    # the runs again found their folders as they were before either ran: no "dirt" from the first tries
    assert one.record["found"] == other.record["found"] == ["program.py"]


def test_a_side_run_is_stopped_where_memory_runs_low_and_runs_again_alone(world, monkeypatch):
    monkeypatch.setattr(side_by_side, "room_for_two", lambda jobs: True)
    first, second = _request(world, "first", ""), _request(world, "second", "grow")
    started = Path(world[0]) / "meeting" / "pid-grow"
    # none left once the program has started (it then sleeps, as if it grew)
    monkeypatch.setattr(side_by_side, "memory_available", lambda: 0 if started.exists() else 1 << 62)
    side = side_by_side.SideRun(second)
    assert side.finish() is None and side.stopped_for_memory
    assert _ends(int(started.read_text()))  # the program with it (it watches its launcher)
    monkeypatch.setattr(side_by_side, "room_for_two", lambda jobs: True)
    # in a pair, the side run stopped so is run again alone, from an untouched copy
    one, other = side_by_side.run_pair(first, _request(world, "third", "partner"), None)
    assert (one.status, other.status) == (0, 0)
    assert one.record["found"] == other.record["found"] == ["program.py"]


def test_a_stopped_side_run_leaves_no_process_in_its_copy(world, monkeypatch):
    """What the run started in a session of its own ends with it before the copy is put back:
    the rerun alone must find its folder as it was (this once failed under load, the stopped
    run's program still writing into the fresh copy)."""
    monkeypatch.setattr(side_by_side, "room_for_two", lambda jobs: True)
    request = _request(world, "lingering", "linger")
    child = Path(world[0]) / "meeting" / "pid-linger-child"
    monkeypatch.setattr(side_by_side, "memory_available", lambda: 0 if child.exists() else 1 << 62)
    side = side_by_side.SideRun(request)
    assert side.finish() is None and side.stopped_for_memory
    side.stop()
    assert not _alive(int(child.read_text()))
    assert side_by_side.processes_in(request.copy.root) == []
    written = sorted(request.copy.root.glob("late-*"))
    time.sleep(0.5)
    assert sorted(request.copy.root.glob("late-*")) == written  # nothing more is written


def test_jobs_one_or_the_variable_means_one_at_a_time(monkeypatch):
    monkeypatch.delenv(side_by_side.JOBS_VARIABLE, raising=False)
    monkeypatch.setitem(side_by_side._SHORT, "of_memory", False)
    assert side_by_side.jobs_wanted(None) == 2 and side_by_side.jobs_wanted(1) == 1 and side_by_side.jobs_wanted(8) == 2
    assert not side_by_side.room_for_two(1)
    monkeypatch.setenv(side_by_side.JOBS_VARIABLE, "1")
    assert side_by_side.jobs_wanted(None) == 1 and not side_by_side.room_for_two(None)


@pytest.mark.slow  # about a second: three interpreters start
def test_the_side_runs_launcher_ends_with_the_process_that_started_it(world, tmp_path):
    """The side run's process watches a pipe from verify: verify gone (SIGKILL included), it ends."""
    import subprocess
    import time

    request = _request(world, "first", "grow")
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import os, sys, time\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
        "from migrate_tpu.verify.runs import side_by_side\n"
        "side_by_side.START_AVAILABLE = 0\n"
        "from migrate_tpu.verify.runs.plan import Copy\n"
        "from migrate_tpu.verify.runs.running import RunRequest\n"
        "from pathlib import Path\n"
        f"root = Path({str(request.copy.root)!r})\n"
        f"request = RunRequest(Copy(root, 'first', root / 'program.py', root, 'program.py'), [], '2.4', {world[1].as_posix()!r}, None, 0,"
        f" None, None, None, 120.0, Path({str(request.record_path)!r}), environment={{'ROLE': 'grow'}})\n"
        "side = side_by_side.SideRun(request)\n"
        "print(side.process.pid, flush=True)\n"
        "time.sleep(120)\n")
    driver_process = subprocess.Popen([sys.executable, str(driver)], stdout=subprocess.PIPE, env=dict(os.environ, MIGRATE_TPU_WARM="0"))
    side_pid = int(driver_process.stdout.readline())
    deadline = time.time() + 60
    while not (request.copy.root / "dirt").exists() and time.time() < deadline:
        time.sleep(0.05)
    assert (request.copy.root / "dirt").exists()  # the program is running
    program_pid = int((tmp_path / "meeting" / "pid-grow").read_text())
    driver_process.kill()
    driver_process.wait()
    assert _ends(side_pid)
    assert _ends(program_pid)  # and its run with it


def _ends(pid, seconds=60.0):
    """Whether process ``pid`` is gone within ``seconds`` (a margin for a loaded machine)."""
    import time

    deadline = time.time() + seconds
    while _alive(pid) and time.time() < deadline:
        time.sleep(0.05)
    return not _alive(pid)



#: The original and its migration for verify, run by the stand-in: one line differs, both
#: record the same value and every line as run; told so, the first run of one kind dies.
VERIFIED = """import json, os, signal
MIGRATED = False
meeting = os.environ["MEETING"]
kind = "migrated" if MIGRATED else "original"
found = sorted(os.listdir(os.path.dirname(os.path.abspath(__file__))))
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "dirt"), "w") as handle:
    handle.write("a run was here")
assert found == ["program.py"], found  # each run starts from a copy no run wrote in
if os.environ.get("DIE_ONCE") == kind and not os.path.exists(os.path.join(meeting, "died-" + kind)):
    open(os.path.join(meeting, "died-" + kind), "w").close()
    os.kill(os.getpid(), signal.SIGKILL)
open(os.path.join(meeting, "ran-" + kind + "-" + str(os.getpid())), "w").close()
with open(os.environ["MIGRATE_TPU_RECORD"], "w") as handle:
    json.dump({"steps": 1, "exit_status": 0, "exception": None, "traces": {}, "traces_per_step": [1],
               "events": [{"step": 1, "kind": "function", "where": __file__ + ":2",
                           "value": {"dtype": "float32", "shape": [], "value": 0.5}}],
               "variables": [], "lines_ran": {os.path.abspath(__file__): list(range(1, 20))}}, handle)
"""


@pytest.mark.parametrize("dies", ["original", "migrated"])
def test_verify_runs_a_killed_run_of_its_first_pair_again_alone_and_says_same(world, monkeypatch, dies):
    from migrate_tpu.verify import verify

    tmp_path, python = world
    monkeypatch.setattr(side_by_side, "room_for_two", lambda jobs: True)
    monkeypatch.setenv("DIE_ONCE", dies)
    program = tmp_path / "project" / "program.py"
    program.parent.mkdir()
    program.write_text(VERIFIED)
    after = tmp_path / "after.py"
    after.write_text(VERIFIED.replace("MIGRATED = False", "MIGRATED = True"))
    verdict = verify(str(program), after=str(after), python=str(python), find_blame=False, before_api="2.1")
    assert verdict.verdict == "same", (verdict.error, verdict.notes)
    meeting = tmp_path / "meeting"
    assert (meeting / f"died-{dies}").exists()  # killed once, beside the other
    assert len(list(meeting.glob("ran-original-*"))) == len(list(meeting.glob("ran-migrated-*"))) == 1


def test_once_two_runs_did_not_fit_the_rest_runs_one_after_the_other(world, monkeypatch):
    started = Path(world[0]) / "meeting" / "pid-grow"
    monkeypatch.setattr(side_by_side, "memory_available", lambda: 0 if started.exists() else 1 << 62)
    assert side_by_side.room_for_two(None)
    assert side_by_side.SideRun(_request(world, "second", "grow")).finish() is None
    assert not side_by_side.room_for_two(None)  # for the rest of this command


def test_blame_copies_the_users_folder_not_the_copy_the_original_ran_in(world, monkeypatch):
    """Each blame run starts from the user's files: a program that finds anything but itself in
    its folder (here: fails) would otherwise fail in every test copy made after the original
    wrote there, and blame could name nothing."""
    from migrate_tpu.verify import verify

    tmp_path, python = world
    program = tmp_path / "project" / "program.py"
    program.parent.mkdir()
    program.write_text(VERIFIED)
    after = tmp_path / "after.py"
    after.write_text(VERIFIED.replace("MIGRATED = False", "MIGRATED = True").replace('"value": 0.5', '"value": 0.75'))
    verdict = verify(str(program), after=str(after), python=str(python), before_api="2.1")
    assert verdict.verdict == "diverged", (verdict.error, verdict.notes)
    assert verdict.blame["changes"] and "message" not in verdict.blame, verdict.blame
    value_line = next(n for n, line in enumerate(after.read_text().splitlines(), 1) if '"value": 0.75' in line)
    assert verdict.blame["changes"] == [f"{after}:{value_line}"], verdict.blame  # the value's change, not MIGRATED's


def test_a_warm_run_takes_its_launchers_nice_value_as_a_cold_child_would():
    """The side run's nice value reaches a run forked from a warm server: the request carries it
    and the run's process takes it (only ever raised)."""
    import subprocess

    from migrate_tpu.runtime.process import warm

    assert warm._request(["python"], {})["nice"] == os.getpriority(os.PRIO_PROCESS, 0)
    taken = subprocess.run([sys.executable, "-c", "import os; from migrate_tpu.runtime.process.warm_server import _take_nice; "
                            "_take_nice(os.getpriority(os.PRIO_PROCESS, 0) + 3); _take_nice(0); print(os.getpriority(os.PRIO_PROCESS, 0))"],
                           stdout=subprocess.PIPE, universal_newlines=True, check=True,
                           env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])))
    assert int(taken.stdout) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 3)
