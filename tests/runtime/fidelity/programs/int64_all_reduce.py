"""An int64 value (a count from the data) summed across replicas (CrossReplicaSum takes no int64)."""
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
        return ctx.all_reduce(tf.distribute.ReduceOp.SUM, tf.constant(3, tf.int64))
    return run(fn)


print(strategy.experimental_local_results(step())[0])
