"""A last partial batch (drop_remainder=False) with the default run options: the dynamic padder pads it."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


dataset = tf.data.Dataset.range(20).map(lambda i: tf.cast(i, tf.float32)).batch(16)
dist_dataset = strategy.experimental_distribute_dataset(dataset)


@tf.function
def step(batch):
    return strategy.experimental_local_results(run(tf.reduce_sum, args=(batch,)))


for batch in dist_dataset:
    step(batch)
print("done")
