"""Model parallelism: two logical devices per replica (TensorFlow 2.1)."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
topology = tf.tpu.experimental.initialize_tpu_system(resolver)
device_assignment = tf.tpu.experimental.DeviceAssignment.build(
    topology,
    computation_shape=[1, 1, 2],  # two cores per replica
    num_replicas=4,
)
strategy = tf.distribute.experimental.TPUStrategy(resolver, device_assignment=device_assignment)
strategy.extended.experimental_enable_dynamic_batch_size = False
print("replicas:", strategy.num_replicas_in_sync)
