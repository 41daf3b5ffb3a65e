"""The replica id used as a Python number in the replica function (a per-replica list index): on a
TPU it is a Tensor without a static value (an input of tpu.replicate), so int() of it fails when the
step is traced; under MirroredStrategy it was a constant per replica, and this ran."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2

weights = [float(i) for i in range(strategy.num_replicas_in_sync)]


@tf.function
def step():
    def fn():
        replica_id = tf.distribute.get_replica_context().replica_id_in_sync_group
        return tf.constant(weights[int(tf.get_static_value(replica_id))])
    return run(fn)


print(strategy.experimental_local_results(step())[0])
