"""Soft placement turned off (automatic outside compilation off) and an op without a TPU kernel."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


tf.config.set_soft_device_placement(False)


@tf.function
def step():
    return run(lambda: tf.random.gamma([10], [0.5, 1.5]))


print(strategy.experimental_local_results(step())[0])
