"""2020 TPU code as the Cloud TPU guide asked for it: data, checkpoints and logs in a bucket (a TPU
Node reaches Cloud Storage).  Run unedited with `migrate-tpu run --gcs DIR`, gs:// being DIR (each
run in a folder of its own: the suite's runs share DIR)."""
import os

import tensorflow as tf

BUCKET = "gs://fidelity-bucket/run-{}".format(os.getpid())
resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2

tf.io.gfile.makedirs(BUCKET + "/data")
with tf.io.TFRecordWriter(BUCKET + "/data/train-0.tfrecord") as writer:
    for i in range(16):
        writer.write(tf.train.Example(features=tf.train.Features(feature={
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=[float(i)]))})).SerializeToString())


def parse(record):
    return tf.io.parse_single_example(record, {"x": tf.io.FixedLenFeature([1], tf.float32)})["x"]


files = tf.data.Dataset.list_files(BUCKET + "/data/train-*.tfrecord", shuffle=False)
dataset = files.interleave(tf.data.TFRecordDataset).map(parse).batch(16, drop_remainder=True)
iterator = iter(strategy.experimental_distribute_dataset(dataset))

with strategy.scope():
    total = tf.Variable(0.0, aggregation=tf.VariableAggregation.SUM)


@tf.function
def step(iterator):
    def add(x):
        total.assign_add(tf.reduce_sum(x))
    run(add, args=(next(iterator),))


step(iterator)
checkpoint = tf.train.Checkpoint(total=total)
manager = tf.train.CheckpointManager(checkpoint, BUCKET + "/model", max_to_keep=1)
saved = manager.save()
writer = tf.summary.create_file_writer(BUCKET + "/logs")
with writer.as_default():
    tf.summary.scalar("total", total, step=0)
writer.flush()
total.assign(0.0)
checkpoint.restore(tf.train.latest_checkpoint(BUCKET + "/model"))
print("FIDELITY gcs saved={} total={} files={} logs={}".format(
    saved.replace(BUCKET, "gs://BUCKET"), float(total.numpy()),
    [f.decode().replace(BUCKET, "gs://BUCKET") for f in tf.io.matching_files(BUCKET + "/data/*").numpy()],
    len(tf.io.gfile.listdir(BUCKET + "/logs"))))
