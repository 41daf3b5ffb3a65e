"""tf.summary in the replica function with a local logdir (TPU Node: the summary op is moved to the TPU host)."""
import tempfile

import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2

writer = tf.summary.create_file_writer(tempfile.mkdtemp())


@tf.function
def step(x):
    def fn(v):
        tf.summary.scalar("v", v, step=0)
        return v
    with writer.as_default():
        return run(fn, args=(x,))


step(tf.constant(1.0))
writer.flush()
print("written")
