"""A pod-slice training program (TF 2.1 form): per-host input pipelines sharded by
``input_pipeline_id``, a custom loop with ``reduce``, then Keras ``fit``.  Its numbers
depend only on the global batch, not on how many hosts share it."""
import json

import numpy as np
import tensorflow as tf

GLOBAL_BATCH = 16
STEPS = 3

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

rng = np.random.RandomState(3)
x = rng.uniform(-1, 1, size=(GLOBAL_BATCH * STEPS, 4)).astype(np.float32)
y = (x[:, :1] * 0.5 - x[:, 1:2] * x[:, 2:3] + 0.1).astype(np.float32)
pipelines = []


def dataset_fn(context):
    # each host reads every num_input_pipelines-th example, starting at its own id
    pipelines.append((context.num_input_pipelines, context.input_pipeline_id))
    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)
    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
    return dataset.batch(per_replica, drop_remainder=True)


with strategy.scope():
    kernel = tf.Variable(np.full((4, 1), 0.1, np.float32))
    bias = tf.Variable(np.zeros((1,), np.float32))
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.5)


@tf.function
def train_step(iterator):
    def replica_step(inputs):
        features, labels = inputs
        with tf.GradientTape() as tape:
            error = tf.matmul(features, kernel) + bias - labels
            loss = tf.reduce_sum(error * error) / GLOBAL_BATCH
        grads = tape.gradient(loss, [kernel, bias])
        optimizer.apply_gradients(zip(grads, [kernel, bias]))
        return loss, tf.reduce_sum(features), features

    loss, seen, features = strategy.experimental_run_v2(replica_step, args=(next(iterator),))
    # MEAN along an axis: TF 2.1 counts the examples with a helper run on every replica
    return (strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None),
            strategy.reduce(tf.distribute.ReduceOp.SUM, seen, axis=None),
            strategy.reduce(tf.distribute.ReduceOp.MEAN, features, axis=0))


iterator = iter(strategy.experimental_distribute_datasets_from_function(dataset_fn))
losses, seen, means = [], [], []
for _ in range(STEPS):
    loss, total, mean = train_step(iterator)
    losses.append(float(loss))
    seen.append(float(total))
    means.append([float(v) for v in mean.numpy()])

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="tanh", input_shape=(4,)),
                                 tf.keras.layers.Dense(1)])
    model.set_weights([np.full((4, 4), 0.2, np.float32), np.zeros(4, np.float32),
                       np.full((4, 1), 0.3, np.float32), np.zeros(1, np.float32)])
    model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.1), loss="mse")
fit_data = tf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)
history = model.fit(fit_data, epochs=2, verbose=0)

print("RESULT " + json.dumps({
    "replicas": strategy.num_replicas_in_sync,
    "losses": losses,
    "seen": seen,
    "means": means,
    "kernel": kernel.numpy().ravel().tolist(),
    "fit_loss": [float(v) for v in history.history["loss"]],
    "_pipelines": sorted(set(pipelines)),
    "_task": resolver.task_id,
}))
