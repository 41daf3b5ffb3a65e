"""Emulated pods: start-up time, step time and memory per host for H = 1, 2, 4, 8 hosts.

    python benchmarks/pods.py [--python tf2.21] [--hosts 1 2 4 8] [--replicas 8] [--steps 20]

Each size runs the same small program through the real CLI (``python -m migrate_tpu run
--hosts H --replicas N``): a TPUStrategy over N cores in all, a 2-layer model, a custom
training step (``strategy.run`` + ``reduce``) on a global batch of 64.  A pod is one program
(its client), in one process; it reports

* ``ready_s``: from the launch to the strategy being built and the first step done
  (interpreter, TensorFlow import, the emulation, the first trace);
* ``step_ms``: median wall time of one step after the first, over ``--steps`` steps;
* ``rss_mb``: the process's peak resident memory;
* ``load``: the 1-minute load average when the run started.

The launcher's wall time for the whole run is ``total_s``.  Results go to stdout as a
markdown table; benchmarks/pods.md records them with the machine they were taken on.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PROGRAM = r'''
import json, os, resource, sys, time
import numpy as np
import tensorflow as tf

STEPS = int(os.environ["POD_BENCH_STEPS"])
GLOBAL = 64
resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)
x = np.random.RandomState(0).normal(size=(GLOBAL * (STEPS + 1), 32)).astype(np.float32)
data = strategy.experimental_distribute_dataset(
    tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(GLOBAL, drop_remainder=True))
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(64, activation="relu", input_shape=(32,)),
                                 tf.keras.layers.Dense(1)])
    optimizer = tf.keras.optimizers.SGD(0.01)

@tf.function
def step(batch):
    def replica(inputs):
        features, labels = inputs
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum((model(features) - labels) ** 2) / GLOBAL
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                      model.trainable_variables))
        return loss
    return strategy.reduce("SUM", strategy.run(replica, args=(batch,)), axis=None)

batches = iter(data)
step(next(batches)).numpy()
ready = time.time() - float(os.environ["POD_BENCH_T0"])
times = []
for _ in range(STEPS):
    batch = next(batches)
    start = time.perf_counter()
    step(batch).numpy()
    times.append(time.perf_counter() - start)
times.sort()
print("BENCH " + json.dumps({"ready_s": ready, "step_ms": 1000 * times[len(times) // 2],
                             "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                             "replicas": strategy.num_replicas_in_sync}))
'''


def measure(python, hosts, replicas, steps):
    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "pod_bench.py"
        program.write_text(PROGRAM)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env["POD_BENCH_STEPS"] = str(steps)
        env["TF_CPP_MIN_LOG_LEVEL"] = "2"
        load = os.getloadavg()[0]
        start = time.time()
        env["POD_BENCH_T0"] = repr(start)
        done = subprocess.run([sys.executable, "-m", "migrate_tpu", "run", "--python", python,
                               "--hosts", str(hosts), "--replicas", str(replicas), "--timeout", "900",
                               str(program)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True)
        total = time.time() - start
    reports = [json.loads(m.group(1)) for m in re.finditer(r"^BENCH (.*)$", done.stdout, re.M)]
    if done.returncode != 0 or len(reports) != 1:  # one program: one report
        raise SystemExit("H={} failed (exit {}):\n{}".format(hosts, done.returncode, done.stderr[-3000:]))
    return dict(reports[0], hosts=hosts, total_s=total, load=load)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default="tf2.21")
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    options = parser.parse_args()
    print("| hosts | cores/host | total wall s | start-up s | step ms (median) | peak RSS MB | load (1 min) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for hosts in options.hosts:
        row = measure(options.python, hosts, options.replicas, options.steps)
        print("| {hosts} | {per} | {total_s:.1f} | {ready_s:.1f} | {step_ms:.1f} | {rss_mb:.0f} | {load:.1f} |"
              .format(per=options.replicas // hosts, **row), flush=True)


if __name__ == "__main__":
    main()
