"""train_loop.py migrated with a planted mistake the TPU refuses: a tf.print of the loss in the step
(no XLA kernel; soft placement is off inside the traced step), so the step no longer compiles."""
import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)

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
        tf.print("loss", loss)
        return loss

    per_replica = strategy.run(step_fn, args=(next(iterator),))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)


iterator = iter(strategy.experimental_distribute_dataset(dataset))
for step in range(6):
    loss = train_step(iterator)
    print("step", step + 1, "loss", float(loss))
print("kernel", kernel.numpy().ravel().tolist())
