"""Connect to the TPU and build the distribution strategy."""
import os

import tensorflow as tf


def make_strategy():
    """A TPUStrategy for the TPU named by TPU_NAME (Cloud TPU or Colab)."""
    address = os.environ.get("TPU_NAME", "grpc://10.240.1.2:8470")
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=address)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.experimental.TPUStrategy(resolver)
