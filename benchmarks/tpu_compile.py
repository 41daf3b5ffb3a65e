"""What the TPU compile step costs (issue 38, item 5): a run of a small TPU program with the
replica function traced once and checked with the release's op rules (the emulation's way), and
the same run traced once per replica (MirroredStrategy's, MIGRATE_TPU_PER_REPLICA_TRACES=1), on
each interpreter; and, in the first, the seconds spent tracing, checking the ops and lowering the
trace with XLA (the compiler's verdict, from TF 2.4).

    .venv/bin/python benchmarks/tpu_compile.py [--repeat N] [--python tf2.4,tf2.21,tf2.1]

Each configuration runs N times (default 3), cold (MIGRATE_TPU_WARM=0), alternating the two
ways; the table gives the median wall time.  Results go to benchmarks/README.md by hand.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROGRAM = REPO / "tests" / "runtime" / "programs" / "replicated_training.py"
REPORT = """
import atexit
def _report():
    from migrate_tpu.runtime.tpu import tpu_replicate
    print("COMPILE traces={traces} trace_s={trace_s:.3f} check_s={check_s:.3f} compile_s={compile_s:.3f}".format(
        **tpu_replicate.COST))
atexit.register(_report)
"""


def _run(python, api, per_replica, program):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0", TF_USE_LEGACY_KERAS="1",
               MIGRATE_TPU_WARM="0", MIGRATE_TPU_PER_REPLICA_TRACES="1" if per_replica else "0",
               PYTHONPATH=str(REPO))
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "migrate_tpu", "run", "--python", python, "--tf-api", api, str(program)],
                          env=env, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    cost = [line for line in done.stdout.splitlines() if line.startswith("COMPILE ")]
    return wall, cost[-1] if cost else ""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--python", default="tf2.4,tf2.21,tf2.1")
    options = parser.parse_args()
    program = Path(os.environ.get("TMPDIR", "/tmp")) / "migrate_tpu_compile_bench.py"
    program.write_text(PROGRAM.read_text() + REPORT)
    print("| interpreter | one trace, checked (s) | a trace per replica (s) | traces, trace s, check s, compile s |")
    print("| --- | ---: | ---: | --- |")
    for python in options.python.split(","):
        api = "2.1" if python == "tf2.1" else "2.4"
        once, per_replica, cost = [], [], ""
        for _ in range(options.repeat):
            wall, cost = _run(python, api, False, program)
            once.append(wall)
            per_replica.append(_run(python, api, True, program)[0])
        print("| {} | {:.1f} | {:.1f} | {} |".format(python, statistics.median(once), statistics.median(per_replica),
                                                   cost.replace("COMPILE ", "")))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
