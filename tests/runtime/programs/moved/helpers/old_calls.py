"""A helper module nobody migrated: each function calls one API that moved before TF 2.4
(tests/runtime/test_moved_calls_runs.py names the lines)."""
import tensorflow as tf


def make_strategy():
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.experimental.TPUStrategy(resolver)


def policy():
    return tf.keras.mixed_precision.experimental.Policy('float32')


def dataset(strategy):
    def fn(context):
        return tf.data.Dataset.from_tensors(tf.ones([4])).repeat(64).batch(context.get_per_replica_batch_size(16))
    return strategy.experimental_distribute_datasets_from_function(fn)


def make_step(strategy):
    @tf.function
    def step(x):
        return strategy.experimental_run_v2(lambda t: t * 2.0, args=(x,))
    return step
