"""tf.py_function in the replica function with soft placement turned on: moved to the TPU host, which on a TPU Node (the TPU worker) has no Python of the program; a TPU VM's host is the client and runs it."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2
tf.config.set_soft_device_placement(True)  # automatic outside compilation: off unless set (tensorflow#43705)


@tf.function
def step(x):
    return run(lambda v: tf.py_function(lambda a: a * 2.0, [v], tf.float32), args=(x,))


print(strategy.experimental_local_results(step(tf.constant(1.0)))[0])
