"""The record of moved APIs' own cost, in one process (no start-up to drown it).

Run with a TensorFlow interpreter:
    PYTHONPATH=. ~/.cache/migrate-tpu/envs/tf2.4/bin/python benchmarks/moved_calls_overhead.py [STEPS] [ROUNDS]

Under the 2.1 surface on the emulated TPU (8 replicas): the time ``moved_calls.install`` takes
(every watch put in place), then a loop that calls a watched old name on every step, eagerly,
with a ``tf.function`` (``strategy.experimental_run_v2``: the hot path of a 2020 custom loop),
STEPS times with the record and STEPS times without it (watches put in place and taken away),
ROUNDS times in turn; the fastest of each is compared (load only adds time).  Also the cost of a Keras model built under the record
(every layer makes a dtype policy: on TF 2.1 the experimental ``Policy`` is the class Keras
builds, and its constructor is watched).  Prints the numbers; exit status 1 when a watched
step costs more than 5% over an unwatched one.
"""

import os
import statistics
import sys
import tempfile
import time

from migrate_tpu.runtime.surfaces import moved_calls
from migrate_tpu.runtime.process import runner


def real_version(tf):
    """TensorFlow's own version (the surface shows this script, user code, the release's)."""
    return sys.modules["tensorflow"].version.__dict__.get("VERSION") or tf.__version__


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    runner.setup(runner.SetupOptions(replicas=8, tf_api="2.1", quiet=True))
    import tensorflow as tf

    folder = tempfile.mkdtemp(prefix="migrate-tpu-moved-calls-")
    started = time.perf_counter()
    moved_calls.install("2.1", "2.4", folder)
    install_seconds = time.perf_counter() - started
    moved_calls.uninstall()
    strategy = tf.distribute.experimental.TPUStrategy(tf.distribute.cluster_resolver.TPUClusterResolver(tpu=""))
    step = tf.function(lambda x: x * 2.0)
    value = tf.constant(1.0)
    for _ in range(5):
        strategy.experimental_run_v2(step, args=(value,))

    def loop():
        began = time.perf_counter()
        for _ in range(steps):
            strategy.experimental_run_v2(step, args=(value,))
        return time.perf_counter() - began

    def lookups():  # what a watched call adds, alone: the lookup of the old name from the program's line
        began = time.perf_counter()
        for _ in range(20000):
            method = strategy.experimental_run_v2  # noqa: F841 - the lookup is what is timed
        return time.perf_counter() - began

    def keras():
        began = time.perf_counter()
        with strategy.scope():
            tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(4,)) for _ in range(20)])
        return time.perf_counter() - began

    watched, watched_keras, bare, bare_keras, watched_lookups, bare_lookups = [], [], [], [], [], []
    calls = 0
    for _ in range(rounds):  # in turn: the machine's load drifts from one minute to the next
        moved_calls.install("2.1", "2.4", folder)
        watched.append(loop())
        watched_keras.append(keras())
        watched_lookups.append(lookups())
        calls += sum(site.count for site in moved_calls.RECORD.sites.values())
        moved_calls.uninstall()
        bare.append(loop())
        bare_keras.append(keras())
        bare_lookups.append(lookups())
    print("TF {}: install {:.1f} ms; {} steps: watched {:.3f} s, none {:.3f} s (fastest of {}): {:.3f}x, per step {:+.1f} us; "
          "medians {:.3f} s and {:.3f} s; a lookup of the old name {:.2f} us watched, {:.2f} us not; "
          "a 20-layer model: watched {:.3f} s, none {:.3f} s; calls noted {}".format(
              real_version(tf), install_seconds * 1000, steps, min(watched), min(bare), rounds, min(watched) / min(bare),
              (min(watched) - min(bare)) / steps * 1e6, statistics.median(watched), statistics.median(bare),
              min(watched_lookups) / 20000 * 1e6, min(bare_lookups) / 20000 * 1e6, min(watched_keras), min(bare_keras), calls))
    os.rmdir(folder)
    return 1 if min(watched) > 1.05 * min(bare) else 0


if __name__ == "__main__":
    sys.exit(main())
