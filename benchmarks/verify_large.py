"""What `migrate-tpu verify --steps 4` costs on a 1.5M-parameter Keras model, against two plain runs.

The program (benchmarks/programs/keras_large.py) is a TPU Colab notebook's shape: a convnet
of 1,495,146 parameters, Adam, `fit` on synthetic images, 4 training steps (argv).
Measured, each REPEAT times in turn (interleaved, so that load drifts alike), fastest kept:
- plain:  `run --tf-api 2.1 ORIGINAL 4` then `run --tf-api 2.4 MIGRATED 4` (both, in seconds),
          and the peak resident memory of the larger of the two runs;
- verify: `verify --steps 4 ORIGINAL 4` (migration, copies, both runs recorded, comparison),
          and the peak resident memory of any one of its processes (its runs and itself).
Targets (issue 30): verify <= 1.5 x the two plain runs, its peak memory <= 1.2 x a plain run's.
Exit status 1 when one is missed.

Usage: python benchmarks/verify_large.py [--python tf2.21] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROGRAM = REPO / "benchmarks" / "programs" / "keras_large.py"
# Runs a command and prints the peak resident set (KiB) of its largest process.
PEAK = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE);"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.stderr.write(done.stderr.decode()[-3000:])")


def measured(argv, env):
    """(seconds, peak KiB) of ``argv``; exits on a failure."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", PEAK] + argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - started
    status, peak = (int(x) for x in done.stdout.split())
    if status not in (0,):
        sys.exit(f"failed ({status}): {' '.join(argv)}\n{done.stderr}")
    return seconds, peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="tf2.21")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4)
    options = parser.parse_args()
    cli = [sys.executable, "-m", "migrate_tpu"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    steps = str(options.steps)
    results = {"plain": [], "verify": []}
    with tempfile.TemporaryDirectory(prefix="migrate-tpu-bench-large-") as folder:
        original = Path(folder) / "original" / "keras_large.py"
        original.parent.mkdir()
        original.write_bytes(PROGRAM.read_bytes())
        migrated = Path(folder) / "migrated" / "keras_large.py"
        migrated.parent.mkdir()
        migrated.write_bytes(PROGRAM.read_bytes())
        subprocess.run(cli + ["fix", "--quiet", "--no-cache", str(migrated)], env=env, check=False)
        report = Path(folder) / "report.json"
        for _ in range(options.repeat):
            first = measured(cli + ["run", "--python", options.python, "--tf-api", "2.1", str(original), steps], env)
            second = measured(cli + ["run", "--python", options.python, "--tf-api", "2.4", str(migrated), steps], env)
            results["plain"].append((first[0] + second[0], max(first[1], second[1])))
            results["verify"].append(measured(cli + ["verify", "--python", options.python, "--steps", steps, "--format", "json",
                                                     "--output-file", str(report), str(original), steps], env))
            verdict = json.loads(report.read_text())
            if verdict["verdict"] != "same":
                sys.exit(f"verify said {verdict['verdict']}: {json.dumps(verdict, indent=1)[:3000]}")
    plain_s, plain_kib = min(s for s, _ in results["plain"]), min(k for _, k in results["plain"])
    verify_s, verify_kib = min(s for s, _ in results["verify"]), min(k for _, k in results["verify"])
    print(f"1.5M-parameter Keras model, {options.python}, {steps} steps, fastest of {options.repeat}:")
    for name, values in results.items():
        print(f"  {name:7} " + ", ".join(f"{s:.2f} s / {k / 1024:.0f} MiB" for s, k in values))
    time_ratio, memory_ratio = verify_s / plain_s, verify_kib / plain_kib
    print(f"  verify: {time_ratio:.2f} x two plain runs (target <= 1.5), peak memory {memory_ratio:.2f} x a plain run's (target <= 1.2)")
    return 0 if time_ratio <= 1.5 and memory_ratio <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(main())
