"""TF 2.4-shaped code that still hands a plain Python function to an eager
strategy.run.  A real TPU refuses it (NotImplementedError) on TF 2.4; the
migration wraps the function in tf.function and the program runs.  Its results
must equal the NumPy reference it prints alongside."""
import json

import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="local")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)

weights = np.array([1.0, -2.0, 0.5], dtype=np.float32)
data = np.linspace(-1.0, 1.0, 48, dtype=np.float32).reshape(16, 3)
dist = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(data).batch(8))


def score(x):
    return tf.reduce_sum(tf.nn.relu(x * weights), axis=1)


per_batch = []
for batch in dist:
    per_replica = strategy.run(score, args=(batch,))
    per_batch.append(strategy.reduce("SUM", per_replica, axis=0).numpy().tolist())

reference = [np.maximum(data[i:i + 8] * weights, 0).sum(axis=1).sum().tolist() for i in (0, 8)]
print("RESULT " + json.dumps({"totals": per_batch, "reference": reference}))
