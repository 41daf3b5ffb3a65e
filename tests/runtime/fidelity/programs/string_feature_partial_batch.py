"""A dataset of (string, float) pairs batched without drop_remainder: the string part reaches the TPU with a dynamic batch dimension."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


dataset = tf.data.Dataset.from_tensors(("string", 1.0)).repeat().batch(16, drop_remainder=False)
iterator = iter(strategy.experimental_distribute_dataset(dataset))


@tf.function
def step(iterator):
    def fn(inputs):
        _, value = inputs
        return tf.reduce_sum(value)
    return strategy.experimental_local_results(run(fn, args=(next(iterator),)))


print(step(iterator)[0])
