"""Dataset.from_generator in the distributed input pipeline (TPU Node: the pipeline runs on the TPU host, which has no user Python)."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


def gen():
    for i in range(16):
        yield [float(i), 1.0]


dataset = tf.data.Dataset.from_generator(gen, output_types=tf.float32, output_shapes=[2]).batch(16, drop_remainder=True)
iterator = iter(strategy.experimental_distribute_dataset(dataset))


@tf.function
def step(iterator):
    return run(tf.reduce_sum, args=(next(iterator),))


print(strategy.experimental_local_results(step(iterator))[0])
