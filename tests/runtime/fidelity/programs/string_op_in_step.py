"""A string op in the replica function, soft placement as TensorFlow leaves it (False inside the traced step): XLA has no kernel for it, and the TPU compilation fails."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


@tf.function
def step(x):
    def fn(v):
        digits = tf.strings.length(tf.strings.as_string(v))
        return tf.cast(digits, tf.float32) + v
    return run(fn, args=(x,))


print(strategy.experimental_local_results(step(tf.constant(1.0)))[0])
