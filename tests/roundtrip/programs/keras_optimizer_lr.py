"""Keras under strategy.scope() with a TF 2.1-style optimizer (`lr=`), trained
by a custom loop: Keras >= 2.11 optimizers silently ignore `lr=`, so the
learning rate must survive migration for the numbers to agree."""
import json

import numpy as np
import tensorflow as tf

np.random.seed(7)

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

x = np.random.normal(size=(64, 3)).astype(np.float32)
y = (x[:, :1] * 3.0 - x[:, 1:2]).astype(np.float32)

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,))])
    model.set_weights([np.ones((3, 1), np.float32), np.zeros(1, np.float32)])
    optimizer = tf.keras.optimizers.Adam(lr=0.05)

dist = strategy.experimental_distribute_dataset(
    tf.data.Dataset.from_tensor_slices((x, y)).batch(16, drop_remainder=True))


@tf.function
def train_step(batch):
    def step_fn(inputs):
        features, labels = inputs
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(model(features) - labels)) / 16.0
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return strategy.reduce("SUM", strategy.experimental_run_v2(step_fn, args=(batch,)), axis=None)


losses = []
for _ in range(2):
    for batch in dist:
        losses.append(float(train_step(batch)))

print("RESULT " + json.dumps({
    "losses": losses,
    "kernel": model.get_weights()[0].ravel().tolist(),
}))
