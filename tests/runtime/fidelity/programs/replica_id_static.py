"""replica_id_in_sync_group in the replica function: a Tensor without a static value on a TPU (an input of tpu.replicate)."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


static = []


@tf.function
def step():
    def fn():
        replica_id = tf.distribute.get_replica_context().replica_id_in_sync_group
        static.append(tf.get_static_value(replica_id))
        return tf.cast(replica_id, tf.float32)
    return run(fn)


step()
print("FIDELITY static_ids={}".format(sorted(set("none" if s is None else str(int(s)) for s in static))))
