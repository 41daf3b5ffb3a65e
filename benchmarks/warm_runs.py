"""Cold and warm starts of ``migrate-tpu run``: the wall time of each run, through the real CLI.

    python benchmarks/warm_runs.py [--python tf2.4 tf2.21] [--repeat 3]

For each interpreter and program, ``--repeat`` runs of ``python -m migrate_tpu run --python
ENV PROGRAM`` cold (``MIGRATE_TPU_WARM=0``: a new interpreter imports TensorFlow each time)
and as many warm, alternated (cold, warm, cold, ...) so that the load of a shared machine
weighs on both alike: this process owns a pool of warm servers (runtime/process/warm_pool.py) and hands
it to the CLI (``MIGRATE_TPU_WARM_POOL``), as the test session does, so the runs after the
first fork from one server.  The first warm run, which starts the server, is shown apart
(``first``).  Every run has ``PYTHONHASHSEED=0`` (verify's runs have one; without it every
run starts cold).  Each run's exit status and output must be the same cold and warm; the
medians go to stdout as a markdown table, with the 1-minute load average before each pair.

Programs: the shipped example's Keras ``compile``/``fit`` (``examples/tpu_classifier/
evaluate.py``, TF 2.1 code, run with ``--tf-api 2.1``) and a tiny one (a TPUStrategy, one
all-reduce).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from migrate_tpu.runtime.process import warm_pool  # noqa: E402

TINY = """import tensorflow as tf
strategy = tf.distribute.experimental.TPUStrategy(tf.distribute.cluster_resolver.TPUClusterResolver(tpu=""))
print(float(strategy.reduce("SUM", strategy.run(lambda: tf.constant(1.0)), axis=None)))
"""


def run(python, program, options, env):
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "migrate_tpu", "run", "--python", python] + options + [str(program)],
                          cwd=str(program.parent), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return time.monotonic() - started, done


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", nargs="+", default=["tf2.4", "tf2.21"])
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="warm-bench-"))
    (folder / "tiny.py").write_text(TINY)
    programs = [("examples/tpu_classifier/evaluate.py", REPO / "examples" / "tpu_classifier" / "evaluate.py", ["--tf-api", "2.1"]),
                ("tiny", folder / "tiny.py", [])]
    base = dict(os.environ, PYTHONPATH=str(REPO), PYTHONHASHSEED="0")
    base.pop(warm_pool.POOL_VARIABLE, None)
    print("| interpreter | program | cold (median s) | warm: first (s) | warm (median s) | speed-up | load (min-max) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    failed = False
    for python in options.python:
        for name, program, extra in programs:
            cold_env = dict(base, MIGRATE_TPU_WARM="0")
            pool = warm_pool.Pool.create()
            try:
                warm_env = dict(base, MIGRATE_TPU_WARM="1")
                pool.export(warm_env)
                first = run(python, program, extra, warm_env)
                cold, hot, loads = [], [], []
                for _ in range(options.repeat):  # alternated: the machine's load weighs on both alike
                    loads.append(os.getloadavg()[0])
                    cold.append(run(python, program, extra, cold_env))
                    hot.append(run(python, program, extra, warm_env))
            finally:
                pool.close()
            for _, done in cold[1:] + [first] + hot:
                if (done.returncode, done.stdout, done.stderr) != (cold[0][1].returncode, cold[0][1].stdout, cold[0][1].stderr):
                    failed = True
                    sys.stderr.write("{} {}: a run differs from the first cold run:\n{}\n{}\n".format(
                        python, name, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")))
            cold_median = statistics.median(s for s, _ in cold)
            warm_median = statistics.median(s for s, _ in hot)
            print("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.1f}x | {:.1f}-{:.1f} |".format(
                python, name, cold_median, first[0], warm_median, cold_median / warm_median, min(loads), max(loads)),
                flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
