"""Keras ``fit`` of a BatchNormalization (fused, after a convolution) on batches of unknown size (a
dataset batched without drop_remainder): Keras adds a cond on the batch size whose gradient the step
takes unless an XLA context encloses the layer (``keras/layers/normalization.py`` at v2.4.1); the
TPU's replicate context is one, so the step compiles and trains (keras-io's "X-ray classification
with TPUs" fits such a model on TPUs)."""
import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

features = np.random.RandomState(0).rand(40, 4, 4, 1).astype("float32")
labels = np.random.RandomState(1).randint(0, 2, 40)
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Conv2D(2, 3, padding="same", input_shape=(4, 4, 1)),
                                 tf.keras.layers.BatchNormalization(),
                                 tf.keras.layers.Flatten(),
                                 tf.keras.layers.Dense(2)])
    model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
model.fit(dataset, epochs=1, verbose=0)
print("FIDELITY predicted={}".format(model.predict(dataset).shape))
