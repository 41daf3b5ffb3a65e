"""The multi-worker tutorial's order (TF 2.1 form): a model is trained on one worker first,
then MultiWorkerMirroredStrategy is built.  A cluster refuses that on every release
("Collective ops must be configured at program startup"); as one worker with two devices it
runs, and the replicas' losses are SUMmed."""
import numpy as np
import tensorflow as tf

features = np.linspace(-1.0, 1.0, 64 * 4, dtype=np.float32).reshape(64, 4)
labels = (features.sum(axis=1, keepdims=True) > 0).astype(np.float32)
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(16)

warm_up = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
warm_up.compile("sgd", "mse")
warm_up.fit(dataset, epochs=1, steps_per_epoch=1, verbose=0)

strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
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

    per_replica = strategy.experimental_run_v2(step_fn, args=(next(iterator),))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)


iterator = iter(strategy.experimental_distribute_dataset(dataset))
for step in range(3):
    print("step", step + 1, "loss", float(train_step(iterator)))
