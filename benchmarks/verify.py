"""What `migrate-tpu verify` costs, against two plain `migrate-tpu run`s, on a 200-step program.

Measured, each REPEAT times in turn (interleaved, so that load drifts alike); the fastest of
each is compared (on a shared machine, load only ever adds time), the medians shown too:
- plain:    `run --tf-api 2.1 ORIGINAL` then `run --tf-api 2.4 MIGRATED` (what a user does by hand);
- seeded:   the same two runs with verify's seeds and deterministic ops (MIGRATE_TPU_SEED alone),
            which change TensorFlow's kernels and threads and so its speed either way;
- recorded: the same two runs recording (MIGRATE_TPU_RECORD, seeded as verify does): recorded
            against seeded is the recording's own cost;
- verify:   `migrate-tpu verify ORIGINAL` (migration, copies, both runs recorded, comparison).

The program is tests/verify/programs/train_loop.py with its loop made 200 steps long.
Target: recorded <= 1.10 x seeded.  Exit status 1 when it is missed.

Usage: python benchmarks/verify.py [--python tf2.21] [--steps 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROGRAM = REPO / "tests" / "verify" / "programs" / "train_loop.py"


def timed(argv, env):
    started = time.monotonic()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1):
        sys.exit(f"failed ({done.returncode}): {' '.join(argv)}\n{done.stderr[-2000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="tf2.21")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    cli = [sys.executable, "-m", "migrate_tpu"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with tempfile.TemporaryDirectory(prefix="migrate-tpu-bench-verify-") as folder:
        original = Path(folder) / "train_loop.py"
        original.write_text(PROGRAM.read_text("utf-8").replace("for step in range(6):", f"for step in range({options.steps}):"), "utf-8")
        migrated = Path(folder) / "migrated" / "train_loop.py"
        migrated.parent.mkdir()
        migrated.write_bytes(original.read_bytes())
        subprocess.run(cli + ["fix", "--quiet", "--no-cache", str(migrated)], env=env, check=False)
        record = Path(folder) / "record.json"
        seeded = dict(env, MIGRATE_TPU_SEED="0")
        recording = dict(seeded, MIGRATE_TPU_RECORD=str(record))
        runs = {"plain": [], "seeded": [], "recorded": [], "verify": []}
        for _ in range(options.repeat):
            for name, run_env in (("plain", env), ("seeded", seeded), ("recorded", recording)):
                runs[name].append(timed(cli + ["run", "--python", options.python, "--tf-api", "2.1", str(original)], run_env)
                                  + timed(cli + ["run", "--python", options.python, "--tf-api", "2.4", str(migrated)], run_env))
            runs["verify"].append(timed(cli + ["verify", "--python", options.python, str(original)], env))
    fastest = {name: min(values) for name, values in runs.items()}
    print(f"{options.steps}-step program, {options.python}, {options.repeat} repeats (seconds, both runs together):")
    for name, values in runs.items():
        print(f"  {name:9} fastest {fastest[name]:7.2f}  median {statistics.median(values):7.2f}  ({', '.join(f'{v:.2f}' for v in values)})")
    recording_cost = fastest["recorded"] / fastest["seeded"]
    print(f"  recording: {recording_cost:.3f} x seeded (target <= 1.10); seeded: {fastest['seeded'] / fastest['plain']:.3f} x plain; "
          f"verify: {fastest['verify'] / fastest['plain']:.3f} x plain, {fastest['verify'] / fastest['seeded']:.3f} x seeded")
    return 0 if recording_cost <= 1.10 else 1


if __name__ == "__main__":
    sys.exit(main())
