"""A tf.train.Checkpoint of TPU variables saved to local disk (TPU Node: the TPU host writes it)."""
import tempfile

import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2

with strategy.scope():
    v = tf.Variable(1.0)
checkpoint = tf.train.Checkpoint(v=v)
print(checkpoint.save(tempfile.mkdtemp() + "/ckpt"))
