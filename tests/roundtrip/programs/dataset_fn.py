"""Per-replica input from a dataset_fn with an InputContext (TF 2.1 form:
experimental_distribute_datasets_from_function), experimental_local_results."""
import json

import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

GLOBAL_BATCH = 16
contexts = []


def dataset_fn(input_context):
    batch = input_context.get_per_replica_batch_size(GLOBAL_BATCH)
    contexts.append([input_context.num_input_pipelines, input_context.input_pipeline_id,
                     input_context.num_replicas_in_sync, batch])
    ds = tf.data.Dataset.range(256).map(lambda i: tf.cast(i, tf.float32))
    ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.batch(batch, drop_remainder=True).repeat()


dist = strategy.experimental_distribute_datasets_from_function(dataset_fn)
iterator = iter(dist)


@tf.function
def step(batch):
    def replica_fn(x):
        ctx = tf.distribute.get_replica_context()
        rid = tf.cast(ctx.replica_id_in_sync_group, tf.float32)
        return tf.reduce_sum(x) * (rid + 1.0), tf.reduce_max(x)

    weighted, maxima = strategy.experimental_run_v2(replica_fn, args=(batch,))
    return weighted, maxima, strategy.reduce("SUM", weighted, axis=None)


local_sums = []
local_max = []
totals = []
first_local = None
for _ in range(3):
    batch = next(iterator)
    if first_local is None:
        first_local = [t.numpy().tolist() for t in strategy.experimental_local_results(batch)]
    weighted, maxima, total = step(batch)
    local_sums.append([float(v) for v in strategy.experimental_local_results(weighted)])
    local_max.append([float(v) for v in strategy.experimental_local_results(maxima)])
    totals.append(float(total))

print("RESULT " + json.dumps({
    "contexts": contexts,
    "first_local_batches": first_local,
    "local_sums": local_sums,
    "local_max": local_max,
    "totals": totals,
}))
