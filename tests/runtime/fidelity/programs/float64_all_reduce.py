"""A float64 value summed across replicas (CrossReplicaSum takes no float64)."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


@tf.function
def step():
    def fn():
        ctx = tf.distribute.get_replica_context()
        return ctx.all_reduce(tf.distribute.ReduceOp.SUM, tf.constant(1.0, tf.float64))
    return run(fn)


print(strategy.experimental_local_results(step())[0])
