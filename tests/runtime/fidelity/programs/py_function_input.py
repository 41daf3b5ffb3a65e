"""tf.py_function in Dataset.map of the distributed input pipeline (TPU Node: no user Python on the TPU host)."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


dataset = tf.data.Dataset.range(16).map(lambda i: tf.py_function(lambda v: v * 2, [i], tf.int64))
dataset = dataset.map(lambda i: tf.reshape(tf.cast(i, tf.float32), [])).batch(16, drop_remainder=True)
iterator = iter(strategy.experimental_distribute_dataset(dataset))


@tf.function
def step(iterator):
    return run(tf.reduce_sum, args=(next(iterator),))


print(strategy.experimental_local_results(step(iterator))[0])
