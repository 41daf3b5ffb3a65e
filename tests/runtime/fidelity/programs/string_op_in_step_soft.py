"""A string op in the replica function with soft placement turned on: automatic outside compilation runs it on the TPU host, and the step uses its number."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2
tf.config.set_soft_device_placement(True)  # automatic outside compilation: off unless set (tensorflow#43705)


@tf.function
def step(x):
    def fn(v):
        digits = tf.strings.length(tf.strings.as_string(v))
        return tf.cast(digits, tf.float32) + v
    return run(fn, args=(x,))


print(strategy.experimental_local_results(step(tf.constant(1.0)))[0])
