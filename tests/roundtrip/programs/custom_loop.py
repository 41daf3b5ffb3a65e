"""Custom training loop on TPU (TF 2.1 form): GradientTape, experimental_run_v2
inside a tf.function, a distributed dataset, SUM and MEAN reductions."""
import json

import numpy as np
import tensorflow as tf

np.random.seed(0)
tf.random.set_seed(0)

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

GLOBAL_BATCH = 32
features = np.random.uniform(-1, 1, size=(128, 5)).astype(np.float32)
true_w = np.array([[0.5], [-1.0], [2.0], [0.0], [1.5]], dtype=np.float32)
labels = (features.dot(true_w) + 0.25).astype(np.float32)
w0 = np.random.normal(size=(5, 1)).astype(np.float32)

with strategy.scope():
    w = tf.Variable(w0, name="w")
    b = tf.Variable(np.zeros([1], np.float32), name="b")
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)

dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(GLOBAL_BATCH, drop_remainder=True)
dist_dataset = strategy.experimental_distribute_dataset(dataset)


@tf.function
def train_step(batch):
    def step_fn(inputs):
        x, y = inputs
        with tf.GradientTape() as tape:
            pred = tf.matmul(x, w) + b
            per_example = tf.reduce_sum(tf.square(pred - y), axis=1)
            loss = tf.reduce_sum(per_example) / GLOBAL_BATCH
        grads = tape.gradient(loss, [w, b])
        optimizer.apply_gradients(zip(grads, [w, b]))
        return loss, tf.cast(tf.shape(x)[0], tf.float32)

    loss, count = strategy.experimental_run_v2(step_fn, args=(batch,))
    return (strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None),
            strategy.reduce("MEAN", count, axis=None))


losses = []
per_replica_examples = []
for epoch in range(3):
    for batch in dist_dataset:
        loss, count = train_step(batch)
        losses.append(float(loss))
        per_replica_examples.append(float(count))

print("RESULT " + json.dumps({
    "replicas": strategy.num_replicas_in_sync,
    "losses": losses,
    "per_replica_examples": per_replica_examples,
    "w": w.numpy().ravel().tolist(),
    "b": b.numpy().ravel().tolist(),
}))
