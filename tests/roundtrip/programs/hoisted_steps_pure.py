"""The steps of ``hoisted_steps.py`` with pure bodies: plain ``fix`` (safe fixes only)
makes each of them once, at the module's level; the program lists the ``tf.function``
objects among its globals (the ones the fixes made). Traces are counted in
``hoisted_steps.py`` (the emulated TPU runs a step's Python function in its own
``tf.function``, so TensorFlow's ``experimental_get_tracing_count()`` of the user's
one says 0 there)."""
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

scale = 3.0


def make_step(k):
    def step(x):
        return tf.reduce_sum(x) * k
    return step


def halved(batch):
    def replica_half(x):
        return tf.reduce_sum(x) * 0.5

    return strategy.experimental_run_v2(replica_half, args=(batch,))


sums, doubled, squares, halves = [], [], [], []
for batch in dist:
    per_replica = strategy.experimental_run_v2(lambda v: tf.reduce_sum(v) * scale, args=(batch,))
    sums.append(float(strategy.reduce("SUM", per_replica, axis=None)))
    per_replica = strategy.experimental_run_v2(make_step(2.0), args=(batch,))
    doubled.append(float(strategy.reduce("SUM", per_replica, axis=None)))

    def square_sum(x):
        return tf.reduce_sum(tf.square(x))

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
    "compiled": sorted(name for name, value in globals().items() if hasattr(value, "experimental_get_tracing_count")),
    "batches": len(sums),
}))
