"""A TensorArray grown (dynamic_size=True) in a loop bounded by a value from the data."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


@tf.function
def step(x):
    def fn(v):
        n = tf.cast(tf.reduce_sum(v), tf.int32)
        arr = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        for i in tf.range(n):
            arr = arr.write(i, v[0])
        return tf.reduce_sum(arr.stack())
    return run(fn, args=(x,))


print(strategy.experimental_local_results(step(tf.constant([1.0, 2.0])))[0])
