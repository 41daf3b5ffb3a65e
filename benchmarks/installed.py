"""How long `migrate-tpu check --installed` takes on real interpreters' installed packages.

    python benchmarks/installed.py [--python PATH|ENV ...] [--jobs N] [--repeat R]

For each interpreter (default: the envs of `migrate-tpu envs` that are built), runs
`check --installed --python X --no-cache --format json` R times (default 3) and prints,
for the fastest run: the distributions and files checked, the files parsed (passed the
prefilter), findings, wall seconds, CPU seconds of the command and all its workers
(user + system, from the kernel's accounting of waited-for children), and files per CPU
second. Wall time on a shared machine says as much about the neighbours as about the
tool; the CPU seconds divided by the cores the run may use give the wall time it needs on
an idle machine of that many cores. Writes nothing but a temporary report file.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure(python: str, jobs: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "report.json")
        command = [sys.executable, "-m", "migrate_tpu", "check", "--installed", "--python", python, "--no-cache", "--no-progress",
                   "--exit-zero", "--format", "json", "-o", report, "-j", str(jobs)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, cwd=folder)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{python}: exit {done.returncode}\n{done.stderr.decode(errors='replace')}")
        data = json.loads(Path(report).read_text())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = data["summary"]
    installed = data["installed"]
    megabytes = sum(os.path.getsize(f) for f in _files(installed, data)) / 1e6
    return {
        "python": python,
        "distributions": len(installed["distributions"]),
        "not_checked": len(installed["not_checked"]),
        "files": summary["files"],
        "megabytes": round(megabytes, 1),
        "parsed": summary["parsed"],
        "findings": summary["findings"],
        "errors": summary["errors"],
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "files_per_cpu_s": round(summary["files"] / cpu) if cpu else None,
    }


def _files(installed: dict, data: dict):
    """The checked files, from the metadata the report names (RECORD lists them)."""
    sys.path.insert(0, str(ROOT))
    from migrate_tpu.engine.installed import distributions

    folders = installed["folders"]
    wanted = {d["name"] for d in installed["distributions"]}
    for distribution in distributions(folders):
        if distribution.name in wanted:
            yield from distribution.files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", help="an interpreter or env name (repeatable)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    pythons = options.python
    if not pythons:
        sys.path.insert(0, str(ROOT))
        from migrate_tpu.runtime.process import envs

        pythons = [name for name in sorted(envs.ENVS) if envs.interpreter(name)]
    for python in pythons:
        runs = [measure(python, options.jobs) for _ in range(options.repeat)]
        best = min(runs, key=lambda run: run["cpu_s"])
        best["wall_s_all"] = [run["wall_s"] for run in runs]
        best["cpu_s_all"] = [run["cpu_s"] for run in runs]
        print(json.dumps(best))
    return 0


if __name__ == "__main__":
    sys.exit(main())
