"""Planted mistake: the second fit's ExponentialDecay(0.01, ...) became (0.001, ...) in an otherwise right migration of noisy_keras_fit.py (verify must say diverged). Shaped like keras-io's X-ray TPU classifier: Keras fit twice (the second with an exponential
decay), class_weight, AUC metrics; its kernels are not deterministic (noise from os.urandom in
a layer, as nondeterministic kernels would give)."""
import os

import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)

rng = np.random.RandomState(0)
x = rng.rand(256, 8).astype(np.float32)
y = (x.sum(axis=1) > 4.2).astype(np.float32)
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32, drop_remainder=True)


def urandom_noise():
    return np.float32(int.from_bytes(os.urandom(2), "little") * 2.0 ** -31)


class Jitter(tf.keras.layers.Layer):
    def call(self, inputs):
        noise = tf.py_function(urandom_noise, [], tf.float32)
        noise.set_shape([])
        return inputs * (1.0 + noise)


def build(learning_rate):
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)), Jitter(),
                                     tf.keras.layers.Dense(1, activation="sigmoid")])
        model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate), loss="binary_crossentropy",
                      metrics=["binary_accuracy", tf.keras.metrics.AUC(name="auc"), tf.keras.metrics.TruePositives(name="tp")])
    return model


model = build(0.01)
model.fit(ds, epochs=2, class_weight={0: 1.0, 1: 3.0}, verbose=2)
weights = model.get_weights()
model = build(tf.keras.optimizers.schedules.ExponentialDecay(0.001, 20, 0.1))
model.set_weights(weights)
history = model.fit(ds, epochs=2, class_weight={0: 1.0, 1: 3.0}, verbose=2)
print("final loss", history.history["loss"][-1])
