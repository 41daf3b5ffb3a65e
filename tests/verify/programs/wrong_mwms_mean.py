"""A MultiWorkerMirroredStrategy program of TF 2.1 form (the experimental strategy,
run): planted mistake: SUM became MEAN.  On a worker with its CPU alone it has one
replica, where SUM and MEAN agree; verify runs it on one worker with two devices."""
import numpy as np
import tensorflow as tf

strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()

features = np.linspace(-1.0, 1.0, 64 * 4, dtype=np.float32).reshape(64, 4)
labels = (features.sum(axis=1, keepdims=True) > 0).astype(np.float32)
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(16)

with strategy.scope():
    kernel = tf.Variable(tf.ones([4, 1]) * 0.1, name="kernel")
    optimizer = tf.keras.optimizers.SGD(0.1)


@tf.function
def train_step(iterator):
    def step_fn(batch):
        x, y = batch
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(y, tf.matmul(x, kernel)))
        optimizer.apply_gradients([(tape.gradient(loss, kernel), kernel)])
        return loss

    per_replica = strategy.run(step_fn, args=(next(iterator),))
    return strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None)


iterator = iter(strategy.experimental_distribute_dataset(dataset))
for step in range(4):
    print("step", step + 1, "loss", float(train_step(iterator)))
