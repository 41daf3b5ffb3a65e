"""What one run costs after the import: the CPU seconds of ``runner.main`` in a process forked from
an interpreter that has imported what a warm server imports, as a warm run is made.

    python benchmarks/run_cpu.py [--python tf2.1 tf2.4 tf2.21] [--repeat 5] [--root DIR ...] [--to-exit]
        [--program PATH] [-- RUN OPTIONS]

For each interpreter, ``--repeat`` rounds; in each round every ``--root`` (a checkout of this
project, by default this one; a ``git worktree`` of an older commit to compare) runs the program
once, in turn, so that the load of a shared machine weighs on all alike.  Each run is a new
interpreter that imports (not timed), forks, and times the fork's ``runner.main`` (user + system
CPU of that process, and wall).  The program defaults to ``tests/verify/programs/train_loop.py``
(TF 2.1 form: a ``tf.function`` calling ``experimental_run_v2``) with ``--tf-api 2.1``.  Prints a
markdown table of the median and the range per interpreter and root.

``--to-exit`` times the whole forked run instead: ``runner.main`` and then the interpreter's end
(exit functions, teardown) as a ``migrate-tpu run`` has it, the CPU from ``wait4`` on the fork and
the wall from the fork until it is reaped.
"""

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: Runs in the TensorFlow interpreter, with the root on PYTHONPATH: import as a warm server does,
#: fork, time runner.main in the fork, print "cpu WALL CPU".
CHILD = """
import os, resource, sys, time
from migrate_tpu.runtime.process import warm_server
warm_server._import_for_runs(False)
argv = sys.argv[1:]
to_exit = os.environ.get("RUN_CPU_TO_EXIT") == "1"
forked = time.time()
pid = os.fork()
if pid == 0:
    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(1)
    os.dup2(devnull, 1)
    from migrate_tpu.runtime.process import runner
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.time()
    try:
        status = runner.main(argv)
    except SystemExit as stop:
        status = stop.code
    if to_exit:
        sys.exit(status)
    after = resource.getrusage(resource.RUSAGE_SELF)
    sys.stdout.flush()
    os.dup2(saved, 1)
    print("cpu %.3f %.3f %s" % (time.time() - start, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, status), flush=True)
    os._exit(0)
_, code, usage = os.wait4(pid, 0)
if to_exit:
    print("cpu %.3f %.3f %s" % (time.time() - forked, usage.ru_utime + usage.ru_stime, os.WEXITSTATUS(code)), flush=True)
"""


def one_run(python, root, argv, to_exit=False):
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONHASHSEED="0", TF_CPP_MIN_LOG_LEVEL="2",
               RUN_CPU_TO_EXIT="1" if to_exit else "0")
    done = subprocess.run([python, "-c", CHILD] + argv, env=env, cwd=str(root), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    for line in done.stdout.splitlines():
        if line.startswith("cpu "):
            _, wall, cpu, status = line.split()
            if status not in ("0", "None"):
                raise SystemExit("{} under {} exited {}:\n{}".format(argv, root, status, done.stderr[-2000:]))
            return float(wall), float(cpu)
    raise SystemExit("no measure from {} under {}:\n{}".format(python, root, done.stderr[-2000:]))


def main():
    from migrate_tpu.runtime.process import envs

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", nargs="+", default=["tf2.1", "tf2.4", "tf2.21"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--root", nargs="+", type=Path, default=[REPO])
    parser.add_argument("--program", type=Path, default=REPO / "tests" / "verify" / "programs" / "train_loop.py")
    parser.add_argument("--to-exit", action="store_true", help="time the run to its process's end (teardown included)")
    parser.add_argument("run_options", nargs="*", default=["--tf-api", "2.1"])
    options = parser.parse_args()
    argv = list(options.run_options) + [str(options.program.resolve())]
    print("| interpreter | root | CPU s, median (range) | wall s, median |")
    print("| --- | --- | --- | --- |")
    for name in options.python:
        python = envs.interpreter(name)
        if python is None:
            print("| {} | (missing: scripts/tf-envs) | | |".format(name))
            continue
        measures = {root: [] for root in options.root}
        for _ in range(options.repeat):
            for root in options.root:
                measures[root].append(one_run(str(python), root, argv, options.to_exit))
        for root, found in measures.items():
            cpus = [cpu for _, cpu in found]
            print("| {} | {} | {:.2f} ({:.2f}-{:.2f}) | {:.2f} |".format(
                name, root, statistics.median(cpus), min(cpus), max(cpus),
                statistics.median(wall for wall, _ in found)), flush=True)


if __name__ == "__main__":
    main()
