"""Issue 41's targets for what a user waits for: blame of a one-line mistake, and verify of the
shipped example against two plain cold runs.

    python benchmarks/feedback.py [--python tf2.21] [--repeat 3] [--only blame,example] [--jobs 1,2]

Each command is a fresh process, as a user starts it (no warm pool handed down: a ``verify``
starts its own warm interpreters and ends them), timed in wall seconds and in CPU seconds of
the command and every process under it (a cgroup, as ``suite_time.py`` counts; ``nan`` where
none can be made), with the 1-minute load average before it.  The measures alternate, so that
the load of a shared machine weighs on all alike; the fastest and the median of each are shown.

- **blame**: ``verify --steps 3 --after wrong_reduce_mean.py train_loop.py`` (a hand migration
  of three changes, one of them the planted ``SUM`` -> ``MEAN``): the whole command, and the
  blame's own seconds and runs from its report.  Target: the whole command <= 10 s.
- **example**: ``verify --entry train.py examples/tpu_classifier`` against two plain cold
  runs (``MIGRATE_TPU_WARM=0``): ``run --tf-api 2.1`` of the original ``train.py`` and
  ``run --tf-api 2.4`` of a copy migrated by ``fix``.  Target: verify <= 1.0 x the two.

``--jobs 1,2`` measures verify with each ``--jobs`` in turn (runs one after the other, and two at
once where there is room); without it, verify's default.  Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from suite_time import CPUCounter  # noqa: E402

PROGRAMS = REPO / "tests" / "verify" / "programs"
EXAMPLE = REPO / "examples" / "tpu_classifier"
CLI = [sys.executable, "-m", "migrate_tpu"]


def measured(argv, env, cwd):
    """(wall seconds, CPU seconds, load before, the finished process) of one command."""
    counter = CPUCounter("migrate-tpu-feedback")
    load = os.getloadavg()[0]
    started = time.monotonic()
    try:
        process = subprocess.Popen(argv, env=env, cwd=str(cwd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   preexec_fn=counter.join)
        out, err = process.communicate()
        wall = time.monotonic() - started
        time.sleep(0.5)  # what the command's end stopped is still leaving
        cpu = counter.seconds()[0] if counter.folder else float("nan")
    finally:
        counter.remove()
    return wall, cpu, load, subprocess.CompletedProcess(argv, process.returncode, out, err)


def jobs_options(jobs):
    return [] if jobs is None else ["--jobs", str(jobs)]


def blame(python, env, folder, jobs=None):
    report = folder / "blame.json"
    wall, cpu, load, done = measured(CLI + ["verify", "--python", python, "--steps", "3", "--format", "json", "--output-file", str(report)]
                                     + jobs_options(jobs) + [
                                            "--after", str(PROGRAMS / "wrong_reduce_mean.py"), str(PROGRAMS / "train_loop.py")], env, folder)
    found = json.loads(report.read_text("utf-8"))
    if found["verdict"] != "diverged" or not found.get("blame") or not found["blame"].get("changes"):
        sys.exit("blame: not blamed:\n" + json.dumps(found, indent=1)[-3000:] + done.stderr.decode(errors="replace")[-2000:])
    return {"wall": wall, "cpu": cpu, "load": load, "blame_seconds": found["blame"]["seconds"], "blame_runs": found["blame"]["runs"]}


def example(python, env, folder, migrated, jobs=None):
    cold = dict(env, MIGRATE_TPU_WARM="0")
    plain = []
    for api, program in (("2.1", EXAMPLE / "train.py"), ("2.4", migrated / "train.py")):
        wall, cpu, load, done = measured(CLI + ["run", "--python", python, "--tf-api", api, str(program)], cold, program.parent)
        if done.returncode != 0:
            sys.exit("example: plain run failed:\n" + done.stderr.decode(errors="replace")[-3000:])
        plain.append((wall, cpu, load))
    report = folder / "example.json"
    wall, cpu, load, done = measured(CLI + ["verify", "--python", python, "--format", "json", "--output-file", str(report)]
                                     + jobs_options(jobs) + ["--entry", "train.py", str(EXAMPLE)], env, folder)
    found = json.loads(report.read_text("utf-8"))
    if found["verdict"] != "same":
        sys.exit("example: verify did not say same:\n" + json.dumps(found, indent=1)[-3000:])
    return {"plain_wall": sum(p[0] for p in plain), "plain_cpu": sum(p[1] for p in plain), "wall": wall, "cpu": cpu,
            "load": min(load, *(p[2] for p in plain))}


def show(name, rows, keys):
    print(f"\n{name} ({len(rows)} rounds; load average {min(r['load'] for r in rows):.1f}-{max(r['load'] for r in rows):.1f})")
    for key in keys:
        values = [r[key] for r in rows]
        print(f"  {key:14s} fastest {min(values):7.2f}  median {statistics.median(values):7.2f}  all {', '.join(f'{v:.2f}' for v in values)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="tf2.21")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="blame,example")
    parser.add_argument("--jobs", default=None, help="verify's --jobs, a comma-separated list measured in turn")
    options = parser.parse_args()
    chosen = options.only.split(",")
    every_jobs = [int(value) for value in options.jobs.split(",")] if options.jobs else [None]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("MIGRATE_TPU_WARM_POOL", None)
    folder = Path(tempfile.mkdtemp(prefix="migrate-tpu-feedback-"))
    try:
        migrated = folder / "migrated"
        shutil.copytree(EXAMPLE, migrated)
        subprocess.run(CLI + ["fix", "--quiet", "--no-cache", str(migrated)], env=env, check=False)
        rounds = {jobs: ([], []) for jobs in every_jobs}
        for _ in range(options.repeat):
            for jobs in every_jobs:
                if "blame" in chosen:
                    rounds[jobs][0].append(blame(options.python, env, folder, jobs))
                if "example" in chosen:
                    rounds[jobs][1].append(example(options.python, env, folder, migrated, jobs))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    missed = []
    for jobs, (blames, examples) in rounds.items():
        if jobs is not None:
            print(f"\n== verify --jobs {jobs}")
        missed += report(options, blames, examples)
    return 1 if missed else 0


def report(options, blames, examples):
    missed = []
    if blames:
        show(f"blame of the planted SUM -> MEAN, verify --python {options.python} --steps 3 (seconds)", blames,
             ["wall", "cpu", "blame_seconds", "blame_runs"])
        fastest = min(r["wall"] for r in blames)
        print(f"  target: the whole command <= 10 s: {'met' if fastest <= 10 else 'MISSED'} ({fastest:.1f} s, fastest)")
        missed += [] if fastest <= 10 else ["blame"]
    if examples:
        show(f"the shipped example, --python {options.python} (seconds)", examples, ["plain_wall", "wall", "plain_cpu", "cpu"])
        ratios = [r["wall"] / r["plain_wall"] for r in examples]
        cpu_ratios = [r["cpu"] / r["plain_cpu"] for r in examples]
        print(f"  verify / two plain cold runs: wall {', '.join(f'{x:.2f}' for x in ratios)} (median {statistics.median(ratios):.2f}); "
              f"CPU {', '.join(f'{x:.2f}' for x in cpu_ratios)} (median {statistics.median(cpu_ratios):.2f})")
        met = statistics.median(ratios) <= 1.0
        print(f"  target: <= 1.0 x: {'met' if met else 'MISSED'}")
        missed += [] if met else ["example"]
    return missed


if __name__ == "__main__":
    sys.exit(main())
