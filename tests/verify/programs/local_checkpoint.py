"""train_loop.py with a checkpoint to local disk after each step, as 2020 code often wrote one:
on a TPU Node (Colab's, Cloud TPU's) the TPU worker writes it and fails (files on gs:// only);
on a TPU VM it runs."""
import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

features = np.linspace(-1.0, 1.0, 64 * 4, dtype=np.float32).reshape(64, 4)
labels = (features.sum(axis=1, keepdims=True) > 0).astype(np.float32)
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(16)

with strategy.scope():
    kernel = tf.Variable(tf.ones([4, 1]) * 0.1, name="kernel")
    bias = tf.Variable(tf.zeros([1]), name="bias")
    optimizer = tf.keras.optimizers.SGD(0.1)


@tf.function
def train_step(iterator):
    def step_fn(batch):
        x, y = batch
        with tf.GradientTape() as tape:
            logits = tf.matmul(x, kernel) + bias
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(y, logits)) / strategy.num_replicas_in_sync
        grads = tape.gradient(loss, [kernel, bias])
        optimizer.apply_gradients(zip(grads, [kernel, bias]))
        return loss

    per_replica = strategy.experimental_run_v2(step_fn, args=(next(iterator),))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)


checkpoint = tf.train.Checkpoint(kernel=kernel, bias=bias)
manager = tf.train.CheckpointManager(checkpoint, "./ckpts", max_to_keep=2)
iterator = iter(strategy.experimental_distribute_dataset(dataset))
for step in range(6):
    loss = train_step(iterator)
    print("step", step + 1, "loss", float(loss))
    manager.save()
print("kernel", kernel.numpy().ravel().tolist())
