"""float64 and int64 per-replica results reduced by strategy.reduce, in the step's tf.function and
eagerly: a TPU sums them with add_n on its host, outside the replicated computation (no
CrossReplicaSum), so it runs."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


@tf.function
def step():
    losses = run(lambda: tf.constant(0.5, tf.float64))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)


@tf.function
def count():
    return run(lambda: tf.constant(3, tf.int64))


total = strategy.reduce(tf.distribute.ReduceOp.SUM, count(), axis=None)
print("FIDELITY reduced={} {}".format(float(step()), int(total)))
