"""A Keras convolutional model trained with the ``mixed_bfloat16`` policy, the one the mixed-precision
guide names for TPUs: a TPU computes bfloat16 convolutions (its matrix unit multiplies bfloat16 and
sums in float32); TF 2.4.1's CPU has no bfloat16 Conv2D kernel, so the emulation computes them in
float32 and rounds back (``runtime/tpu/bfloat16_kernels.py``)."""
import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)
tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")

features = np.random.RandomState(0).rand(32, 8, 8, 3).astype("float32")
labels = np.random.RandomState(1).randint(0, 2, 32)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3, input_shape=(8, 8, 3)),
                                 tf.keras.layers.BatchNormalization(),
                                 tf.keras.layers.AveragePooling2D(),
                                 tf.keras.layers.Flatten(),
                                 tf.keras.layers.Dense(2, dtype="float32")])
    model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(features, labels, batch_size=16, epochs=1, verbose=0)
print("FIDELITY predicted={} {}".format(model.predict(features[:16]).shape, model.layers[0].compute_dtype))
