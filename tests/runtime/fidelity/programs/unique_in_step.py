"""tf.unique (a data-dependent shape) in the replica function: TF 2.1.0's XLA has no kernel for
Unique, and the TPU compilation fails (from 2.2 on the TPU's own kernel is taken as there)."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


@tf.function
def step(x):
    def fn(v):
        values, _ = tf.unique(v)
        return tf.reduce_sum(values)
    return run(fn, args=(x,))


print(strategy.experimental_local_results(step(tf.constant([1.0, 1.0, 2.0])))[0])
