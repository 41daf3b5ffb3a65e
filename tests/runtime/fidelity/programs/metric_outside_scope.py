"""A Keras metric created outside strategy.scope() updated in the replica function."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


metric = tf.keras.metrics.Mean("m", dtype=tf.float32)


@tf.function
def step(x):
    def fn(v):
        metric.update_state(v)
        return v
    return run(fn, args=(x,))


with strategy.scope():
    step(tf.constant(1.0))
print(metric.result())
