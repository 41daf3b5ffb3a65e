"""Steps made anew in loops and functions, handed to experimental_run_v2 from eager code.

TPU301 makes each of them once (issue 19): the lambda and the factory call before the
loop, the def of the loop before it, the def nested in a function at the module. Every
step counts its traces in a Python counter (it runs while tracing only), so the
migrated program shows each step traced once per replica (the emulated TPU runs the
step on each of its 8 devices) however many batches run; its numbers
must equal the NumPy reference it prints alongside."""
import json

import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

data = np.linspace(0.0, 1.0, 192, dtype=np.float32).reshape(48, 4)
batches = [data[i:i + 16] for i in range(0, 48, 16)]
dist = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(data).batch(16))

TRACES = {"lambda": 0, "factory": 0, "loop def": 0, "nested def": 0}


def count(name):
    TRACES[name] += 1
    return 0.0


scale = 3.0


def make_step(k):
    def step(x):
        return tf.reduce_sum(x) * k + count("factory")
    return step


def halved(batch):
    def replica_half(x):
        return tf.reduce_sum(x) * 0.5 + count("nested def")

    return strategy.experimental_run_v2(replica_half, args=(batch,))


sums, doubled, squares, halves = [], [], [], []
for batch in dist:
    per_replica = strategy.experimental_run_v2(lambda v: tf.reduce_sum(v) * scale + count("lambda"), args=(batch,))
    sums.append(float(strategy.reduce("SUM", per_replica, axis=None)))
    per_replica = strategy.experimental_run_v2(make_step(2.0), args=(batch,))
    doubled.append(float(strategy.reduce("SUM", per_replica, axis=None)))

    def square_sum(x):
        return tf.reduce_sum(tf.square(x)) + count("loop def")

    per_replica = strategy.experimental_run_v2(square_sum, args=(batch,))
    squares.append(float(strategy.reduce("SUM", per_replica, axis=None)))
    halves.append(float(strategy.reduce("SUM", halved(batch), axis=None)))

print("RESULT " + json.dumps({
    "totals": [sums, doubled, squares, halves],
    "reference": [
        [float(b.sum()) * 3.0 for b in batches],
        [float(b.sum()) * 2.0 for b in batches],
        [float(np.square(b).sum()) for b in batches],
        [float(b.sum()) * 0.5 for b in batches],
    ],
    "traces": TRACES,
    "batches": len(sums),
}))
