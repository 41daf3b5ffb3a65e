"""A Keras model saved to local disk before the program connects to the TPU (a model trained
elsewhere), then loaded under the strategy: on a TPU Node the TPU worker restores its variables."""
import tempfile

import tensorflow as tf

folder = tempfile.mkdtemp() + "/initial_model"
tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))]).save(folder)

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

with strategy.scope():
    model = tf.keras.models.load_model(folder)
print("loaded")
