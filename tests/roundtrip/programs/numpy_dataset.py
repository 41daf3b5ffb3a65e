"""experimental_make_numpy_dataset (TF 2.1 form) feeding a distributed dataset."""
import json

import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

np.random.seed(3)
x = np.random.uniform(size=(96, 3)).astype(np.float32)
y = np.arange(96, dtype=np.int64) % 5

dataset = strategy.experimental_make_numpy_dataset((x, y)).batch(24, drop_remainder=True)
dist = strategy.experimental_distribute_dataset(dataset)


@tf.function
def step(inputs):
    def replica_fn(inputs):
        features, labels = inputs
        return tf.reduce_sum(features, axis=0), tf.reduce_sum(labels)

    sums, label_sums = strategy.experimental_run_v2(replica_fn, args=(inputs,))
    return (strategy.reduce("SUM", sums, axis=None),
            strategy.reduce("SUM", label_sums, axis=None))


feature_sums = []
label_sums = []
for batch in dist:
    s, l = step(batch)
    feature_sums.append(s.numpy().tolist())
    label_sums.append(int(l))

print("RESULT " + json.dumps({
    "batches": len(feature_sums),
    "feature_sums": feature_sums,
    "label_sums": label_sums,
    "expected_total": float(x.sum()),
}))
