"""What it costs `migrate-tpu verify` to judge an original that does not repeat itself, and to
state the power of a `same`.

Three verifications of small programs of tests/verify/programs, each REPEAT times in turn:
- exact:    train_loop.py, which repeats its bits: two runs, an exact comparison, its power
            stated from what was compared (no run more);
- exact --power: the same with the power measured (one run more: learning rates x1.1);
- noisy:    noisy_loop.py, whose gradients carry os.urandom noise: the original again (A/A),
            three runs with kernels on one thread (the original twice, the migration once),
            the per-value comparison, and the power run: seven runs in all;
- keras (with --keras): benchmarks/programs/noisy_keras_fit.py, shaped like keras-io's X-ray
            classifier (two fits, class_weight, AUC metrics, os.urandom noise in a layer), and
            its planted learning-rate mistake, which must diverge.
For each: the fastest and median wall time, the runs verify made (the records it wrote), and
the verdict and power it reported.

Usage: python benchmarks/verify_power.py [--python tf2.21] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROGRAMS = REPO / "tests" / "verify" / "programs"
BENCHMARK_PROGRAMS = Path(__file__).resolve().parent / "programs"
CASES = {
    "exact": ["train_loop.py"],
    "exact --power": ["--power", "train_loop.py"],
    "noisy": ["noisy_loop.py"],
}
KERAS_CASES = {
    "keras": [str(BENCHMARK_PROGRAMS / "noisy_keras_fit.py")],
    "keras planted": ["--after", str(BENCHMARK_PROGRAMS / "noisy_keras_fit_planted_rate.py"), str(BENCHMARK_PROGRAMS / "noisy_keras_fit.py")],
}


def verify_once(python: str, arguments: list) -> dict:
    *options, program = arguments
    with tempfile.TemporaryDirectory(prefix="verify-power-") as folder:
        report = Path(folder) / "report.json"
        env = dict(os.environ, TMPDIR=folder, PYTHONPATH=str(REPO))
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "migrate_tpu", "verify", "--python", python, "--no-blame", "--format", "json",
                        "--output-file", str(report), *options, str(PROGRAMS / program)], env=env, cwd=folder,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seconds = time.monotonic() - started
        result = json.loads(report.read_text()) if report.is_file() else {}
    runs = 2 + (1 if result.get("nondeterminism") else 0) + (3 if (result.get("nondeterminism") or {}).get("source") else 0) \
        + (1 if (result.get("power") or {}).get("measured") else 0)
    return {"seconds": seconds, "verdict": result.get("verdict"), "power": result.get("power"), "runs": runs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="tf2.21")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--keras", action="store_true", help="also the Keras fit shaped like the X-ray classifier (minutes each)")
    options = parser.parse_args()
    cases = dict(CASES, **(KERAS_CASES if options.keras else {}))
    timings: dict = {name: [] for name in cases}
    last = {}
    for _ in range(options.repeat):
        for name, arguments in cases.items():
            result = verify_once(options.python, arguments)
            timings[name].append(result["seconds"])
            last[name] = result
    print(f"verify on {options.python}, {options.repeat} times each (fastest / median wall seconds):")
    for name in cases:
        power = last[name]["power"] or {}
        what = ("exact" if power.get("exact") else "caught at step {}".format(power.get("step")) if power.get("caught")
                else "not caught" if power.get("measured") else power.get("why", "-"))
        print(f"  {name:14} {min(timings[name]):6.1f} / {statistics.median(timings[name]):6.1f}  runs {last[name]['runs']}  "
              f"verdict {last[name]['verdict']}, power: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
