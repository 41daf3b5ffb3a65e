"""An op without an XLA kernel (tf.random.gamma) in the replica function with soft placement turned
on: automatic outside compilation runs it on the TPU host, and the step runs."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2
tf.config.set_soft_device_placement(True)  # automatic outside compilation: off unless set (tensorflow#43705)


@tf.function
def step():
    return run(lambda: tf.reduce_sum(tf.random.gamma([10], [0.5, 1.5])))


print(strategy.experimental_local_results(step())[0])
