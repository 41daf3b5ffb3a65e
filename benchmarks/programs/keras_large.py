"""A TPU Colab notebook's shape as a script (TF 2.1 form): a 1.5M-parameter Keras convnet
compiled under TPUStrategy with Adam and trained with fit on synthetic images (in place of
a download).  benchmarks/verify_large.py runs it for 4 steps (argv[1]) and verifies it with --steps 4."""
import sys

import numpy as np
import tensorflow as tf

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 16  # training batches, as Keras executions

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

images = np.random.RandomState(0).rand(512, 28, 28, 1).astype(np.float32)  # synthetic: no download
labels = np.random.RandomState(1).randint(0, 10, size=(512,)).astype(np.int64)
dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(64, drop_remainder=True)

with strategy.scope():
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
        tf.keras.layers.Conv2D(64, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(160, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])

print("parameters", model.count_params())
model.fit(dataset, steps_per_epoch=steps, epochs=1, verbose=2)
