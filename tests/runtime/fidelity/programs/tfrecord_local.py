"""A TFRecord file on local disk read by the distributed input pipeline (TPU Node: the pipeline runs on the TPU host)."""
import os
import tempfile

import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2

path = os.path.join(tempfile.mkdtemp(), "data.tfrecord")
with tf.io.TFRecordWriter(path) as writer:
    for i in range(16):
        writer.write(tf.train.Example(features=tf.train.Features(feature={
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=[float(i)]))})).SerializeToString())


def parse(record):
    return tf.io.parse_single_example(record, {"x": tf.io.FixedLenFeature([1], tf.float32)})["x"]


dataset = tf.data.TFRecordDataset(path).map(parse).batch(16, drop_remainder=True)
iterator = iter(strategy.experimental_distribute_dataset(dataset))


@tf.function
def step(iterator):
    return run(tf.reduce_sum, args=(next(iterator),))


print(strategy.experimental_local_results(step(iterator))[0])
