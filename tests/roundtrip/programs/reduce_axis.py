"""strategy.reduce with and without axis, with ReduceOp and string ops, on
per-replica values (TF 2.1 form).  On a TPU with TF 2.1, reduce with an axis
runs replicated code, so it is called inside a tf.function."""
import json

import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

values = np.arange(4 * 6, dtype=np.float32).reshape(4 * 2, 3) ** 1.5
dataset = tf.data.Dataset.from_tensor_slices(values).batch(8)
batch = next(iter(strategy.experimental_distribute_dataset(dataset)))


@tf.function
def reduce_all(batch):
    def replica_fn(x):
        rid = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)
        return x * (rid + 1.0)

    per_replica = strategy.experimental_run_v2(replica_fn, args=(batch,))
    return {
        "sum_axis0": strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=0),
        "sum_axis1": strategy.reduce("sum", per_replica, axis=1),
        "sum_none": strategy.reduce("SUM", per_replica, axis=None),
        "mean_none": strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None),
        "local": strategy.experimental_local_results(per_replica),
    }


out = reduce_all(batch)
print("RESULT " + json.dumps({
    "sum_axis0": out["sum_axis0"].numpy().tolist(),
    "sum_axis1": out["sum_axis1"].numpy().tolist(),
    "sum_none": out["sum_none"].numpy().tolist(),
    "mean_none": out["mean_none"].numpy().tolist(),
    "local": [t.numpy().tolist() for t in out["local"]],
}))
