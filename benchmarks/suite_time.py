"""Where the test suite's time goes: wall and CPU seconds per folder, and the machine's load meanwhile.

    python benchmarks/suite_time.py [--root DIR] [--groups NAME ...] [-m EXPR] [--whole] [--out DIR]

Runs ``python -m pytest`` once per group of test files (a partition of ``tests/``: the
TensorFlow-heavy folders apart, the rest together), or once over everything (``--whole``,
what CI runs), each in a process of its own, and prints a markdown table: tests passed and
failed, wall seconds, CPU seconds (user + system of pytest and of every process started
under it, and the machine's state meanwhile (the 1-minute load average, min-max, and the CPU
seconds *other* processes used: the machine's busy time from ``/proc/stat`` less this run's).

The CPU seconds are counted by a cgroup of its own (cgroup v1 ``cpuacct`` or v2 ``cpu.stat``),
which every process started under pytest joins, waited for or not: a run forked from a warm
server is a grandchild of a server that ``wait4`` on pytest would count only if every level
reaped its children.  Where no cgroup can be made (no permission), ``wait4``'s figure is used
and the table says so (``*``).  A process still in the cgroup after pytest exited outlived the
session: the table counts them (``left``). On a machine shared with other work the wall
time says as much about the neighbours as about the suite; the CPU seconds are the steadier
measure, and the others' CPU seconds say how loaded it was.

``--root`` runs the tests of another checkout (a ``git archive`` of an older commit, say) with
``PYTHONPATH`` at it, so that the package imported is that checkout's.  ``--out DIR`` keeps each
group's pytest output (``--durations=0``) as ``DIR/<group>.txt``.
"""

import argparse
import os
import shutil
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: Folders measured on their own (the TensorFlow-heavy ones), in this order; ``rest`` is the
#: remainder of ``tests/``.
FOLDERS = [
    ("verify", "tests/verify"),
    ("roundtrip", "tests/roundtrip"),
    ("fidelity", "tests/runtime/fidelity"),
    ("runtime", "tests/runtime"),
    ("surfaces", "tests/surfaces"),
    ("reliability", "tests/reliability"),
    ("mutation", "tests/test_mutation_pass.py"),
]


def group_arguments(name):
    """pytest's path arguments for the group ``name``: its folder, less the folders measured apart."""
    paths = dict(FOLDERS)
    if name == "whole":
        return ["tests"]
    if name == "rest":
        return ["tests"] + ["--ignore=" + path for _, path in FOLDERS]
    if name not in paths:  # a path of its own: a file, a folder, a test id
        return [name]
    inside = [path for other, path in FOLDERS if other != name and path.startswith(paths[name] + "/")]
    return [paths[name]] + ["--ignore=" + path for path in inside]


def busy_ticks():
    """The machine's busy CPU time so far, in clock ticks (every CPU's user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as handle:
        fields = [int(value) for value in handle.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return user + nice + system + irq + softirq + steal


class LoadWatch(threading.Thread):
    """The 1-minute load average every few seconds while a group runs."""

    def __init__(self, every=5.0):
        super().__init__(daemon=True)
        self.every, self.samples, self.done = every, [os.getloadavg()[0]], threading.Event()

    def run(self):
        while not self.done.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def stop(self):
        self.done.set()
        self.join()
        self.samples.append(os.getloadavg()[0])
        return min(self.samples), max(self.samples)


class CPUCounter:
    """CPU seconds of a process and all its descendants, through a cgroup made for it (``None``
    where none can be made here)."""

    ROOTS = (("/sys/fs/cgroup/cpuacct", "v1"), ("/sys/fs/cgroup/unified", "v2"), ("/sys/fs/cgroup", "v2"))

    def __init__(self, name):
        self.folder = self.kind = None
        for root, kind in self.ROOTS:
            marker = "cpuacct.usage" if kind == "v1" else "cgroup.procs"
            if not os.path.isfile(os.path.join(root, marker)):
                continue
            folder = os.path.join(root, "{}-{}".format(name, os.getpid()))
            try:
                os.mkdir(folder)
            except OSError:
                continue
            if os.path.isfile(os.path.join(folder, "cpuacct.stat" if kind == "v1" else "cpu.stat")):
                self.folder, self.kind = folder, kind
                return
            os.rmdir(folder)

    def join(self):
        """Move the calling process into the cgroup (``preexec_fn``: the child, before it execs)."""
        if self.folder:
            with open(os.path.join(self.folder, "cgroup.procs"), "w") as handle:
                handle.write(str(os.getpid()))

    def seconds(self):
        """(user + system seconds of every process that was in the cgroup, processes still in it)."""
        left = len(open(os.path.join(self.folder, "cgroup.procs")).read().split())
        if self.kind == "v1":
            ticks = dict(line.split() for line in open(os.path.join(self.folder, "cpuacct.stat")))
            return (int(ticks["user"]) + int(ticks["system"])) / os.sysconf("SC_CLK_TCK"), left
        stat = dict(line.split() for line in open(os.path.join(self.folder, "cpu.stat")))
        return int(stat["usage_usec"]) / 1e6, left

    def remove(self):
        """The cgroup, once empty (processes left in it go to the root cgroup first)."""
        if not self.folder:
            return
        root = os.path.dirname(self.folder)
        for pid in open(os.path.join(self.folder, "cgroup.procs")).read().split():
            try:
                with open(os.path.join(root, "cgroup.procs"), "w") as handle:
                    handle.write(pid)
            except OSError:
                pass
        try:
            os.rmdir(self.folder)
        except OSError:
            shutil.rmtree(self.folder, ignore_errors=True)


def counts(output):
    """``{"passed": N, "failed": N, ...}`` from pytest's last summary line."""
    lines = [line for line in output.splitlines() if re.search(r"\b(passed|failed|error|errors|no tests ran)\b.* in [\d.]+s", line)]
    found = {}
    for number, word in re.findall(r"(\d+) (passed|failed|skipped|xfailed|xpassed|error|errors|deselected)", lines[-1] if lines else ""):
        found[word] = int(number)
    return found


def measure(name, root, marks, out):
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0"]
    if marks:
        argv += ["-m", marks]
    argv += group_arguments(name)
    env = dict(os.environ, PYTHONPATH=str(root))
    ticks_per_second = os.sysconf("SC_CLK_TCK")
    watch = LoadWatch()
    watch.start()
    counter = CPUCounter("migrate-tpu-suite-" + re.sub(r"[^\w.-]+", "_", name)[:60])
    try:
        busy_before, started = busy_ticks(), time.monotonic()
        with open(out / (re.sub(r"[^\w.-]+", "_", name) + ".txt") if out else os.devnull, "w") as log:
            process = subprocess.Popen(argv, cwd=str(root), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       preexec_fn=counter.join)
            output = process.stdout.read().decode("utf-8", "replace")
            _, status, usage = os.wait4(process.pid, 0)
            log.write(output)
        wall = time.monotonic() - started
        machine = (busy_ticks() - busy_before) / ticks_per_second
        if counter.folder:
            time.sleep(1.0)  # what pytest's cleanup ended is still leaving
            cpu, left = counter.seconds()
        else:
            cpu, left = usage.ru_utime + usage.ru_stime, None
    finally:
        counter.remove()
    low, high = watch.stop()
    return {"group": name, "status": os.waitstatus_to_exitcode(status), "counts": counts(output), "wall": wall,
            "cpu": cpu, "measured_by": counter.kind or "wait4", "left": left, "others": max(0.0, machine - cpu), "load": (low, high)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=REPO, help="the checkout whose tests run (default: this one)")
    parser.add_argument("--groups", nargs="+", default=[name for name, _ in FOLDERS] + ["rest"],
                        help="groups to run, in order: " + ", ".join([name for name, _ in FOLDERS] + ["rest", "whole"]) + ", or any path pytest takes")
    parser.add_argument("--whole", action="store_true", help="one session over all of tests/ (as CI runs it)")
    parser.add_argument("-m", dest="marks", default="", help="pytest's -m (e.g. 'not slow')")
    parser.add_argument("--out", type=Path, help="keep each group's pytest output here")
    options = parser.parse_args()
    if options.out:
        options.out.mkdir(parents=True, exist_ok=True)
    groups = ["whole"] if options.whole else options.groups
    print("| group | passed | failed | wall s | CPU s (user+sys) | others' CPU s | load (min-max) | left |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    total = {"wall": 0.0, "cpu": 0.0, "others": 0.0}
    for name in groups:
        row = measure(name, options.root.resolve(), options.marks, options.out)
        for key in total:
            total[key] += row[key]
        print("| {group} | {passed} | {failed} | {wall:.0f} | {cpu:.0f}{star} | {others:.0f} | {low:.1f}-{high:.1f} | {still} |".format(
            star="" if row["measured_by"] != "wait4" else "*", still="?" if row["left"] is None else row["left"],
            passed=row["counts"].get("passed", 0), failed=row["counts"].get("failed", 0) + row["counts"].get("error", 0)
            + row["counts"].get("errors", 0), low=row["load"][0], high=row["load"][1], **row), flush=True)
    if len(groups) > 1:
        print("| total | | | {wall:.0f} | {cpu:.0f} | {others:.0f} | | |".format(**total))


if __name__ == "__main__":
    main()
