"""Model parallelism set-up (TF 2.1 form): a 3-D computation_shape, the
experimental TPUStrategy's device_assignment keyword, and the logical-device
helpers where the strategy has them (TF >= 2.4's stable TPUStrategy only)."""
import json

import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
topology = tf.tpu.experimental.initialize_tpu_system(resolver)
device_assignment = tf.tpu.experimental.DeviceAssignment.build(
    topology, computation_shape=[1, 1, 2], num_replicas=4)
strategy = tf.distribute.experimental.TPUStrategy(resolver, device_assignment=device_assignment)

has_helpers = hasattr(strategy, "experimental_split_to_logical_devices")
images = np.arange(4 * 2 * 4 * 4 * 1, dtype=np.float32).reshape(8, 4, 4, 1) / 100.0
dataset = tf.data.Dataset.from_tensor_slices(images).batch(8)
dist = strategy.experimental_distribute_dataset(dataset)


@tf.function
def step(batch):
    def replica_fn(x):
        if has_helpers:
            x = strategy.experimental_split_to_logical_devices(x, [1, 2, 1, 1])
        y = tf.nn.avg_pool2d(x, ksize=2, strides=2, padding="VALID")
        if has_helpers:
            y = strategy.experimental_assign_to_logical_device(y, 0)
            y = strategy.experimental_replicate_to_logical_devices(y)
        return tf.reduce_sum(y, axis=[1, 2, 3])

    per_replica = strategy.experimental_run_v2(replica_fn, args=(batch,))
    return per_replica, strategy.reduce("SUM", per_replica, axis=0)


outputs = []
for batch in dist:
    per_replica, total = step(batch)
    outputs.append({"local": [v.numpy().tolist() for v in strategy.experimental_local_results(per_replica)],
                    "total": float(total)})

print("RESULT " + json.dumps({
    "num_replicas_in_sync": strategy.num_replicas_in_sync,
    "num_replicas": device_assignment.num_replicas,
    "num_cores_per_replica": device_assignment.num_cores_per_replica,
    "_mesh_rank": len(topology.mesh_shape),
    "outputs": outputs,
    "_has_logical_device_helpers": has_helpers,
}))
