"""A plain Python function handed to experimental_run_v2 from eager code.

TF 2.0 wrapped it in a tf.function silently; on a TPU, TF 2.1 and 2.4 both
refuse it (NotImplementedError).  Migrated with --unsafe-fixes the function is
wrapped in tf.function and the program runs; its results must equal the NumPy
reference it prints alongside."""
import json

import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

data = np.linspace(0.0, 1.0, 64, dtype=np.float32).reshape(16, 4)
dist = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(data).batch(16))


def replica_step(x):
    return tf.reduce_sum(tf.square(x))


totals = []
for batch in dist:
    per_replica = strategy.experimental_run_v2(replica_step, args=(batch,))
    totals.append(float(strategy.reduce("SUM", per_replica, axis=None)))

print("RESULT " + json.dumps({"totals": totals, "reference": [float(np.square(data).sum())]}))
