"""Every entry point of TensorFlow that reaches a file, given gs:// paths: run with --gcs DIR, each
prints one `ENTRY name value` line (or `ENTRY name error Class`), and the files land in DIR/BUCKET.
Written for TF 2.1 to 2.21 (names that a release lacks are skipped)."""
import os
import sys

import numpy as np
import tensorflow as tf

B = "gs://entry-bucket"
resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=sys.argv[1] if len(sys.argv) > 1 else "")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)


def entry(name, fn):
    try:
        value = fn()
    except Exception as error:  # noqa: BLE001 - each entry point reports its own outcome
        print("ENTRY {} error {} {}".format(name, type(error).__name__, str(error).splitlines()[0][:200]))
        return None
    print("ENTRY {} {}".format(name, value))
    return value


def text(value):
    return value.decode() if isinstance(value, bytes) else value


# tf.io.gfile: the client's Python
entry("gfile.makedirs", lambda: tf.io.gfile.makedirs(B + "/g/sub"))
entry("gfile.isdir", lambda: tf.io.gfile.isdir(B + "/g/sub"))


def write_gfile():
    with tf.io.gfile.GFile(B + "/g/a.txt", "w") as handle:
        handle.write("line one\nline two\n")
    return tf.io.gfile.exists(B + "/g/a.txt")


entry("gfile.GFile.write", write_gfile)
entry("gfile.GFile.read", lambda: tf.io.gfile.GFile(B + "/g/a.txt").read().splitlines()[0])
entry("gfile.copy", lambda: tf.io.gfile.copy(B + "/g/a.txt", B + "/g/b.txt", overwrite=True))
entry("gfile.rename", lambda: tf.io.gfile.rename(B + "/g/b.txt", B + "/g/sub/c.txt", overwrite=True))
entry("gfile.glob", lambda: sorted(tf.io.gfile.glob(B + "/g/*.txt")))
entry("gfile.listdir", lambda: sorted(tf.io.gfile.listdir(B + "/g")))
entry("gfile.walk", lambda: [(top, sorted(files)) for top, _, files in tf.io.gfile.walk(B + "/g")])
entry("gfile.stat", lambda: tf.io.gfile.stat(B + "/g/a.txt").length)
entry("gfile.remove", lambda: tf.io.gfile.remove(B + "/g/sub/c.txt"))
entry("gfile.exists", lambda: tf.io.gfile.exists(B + "/g/sub/c.txt"))

# TFRecord files: written by the client, read by ops
records = B + "/data/r.tfrecord"


def write_records():
    tf.io.gfile.makedirs(B + "/data")
    with tf.io.TFRecordWriter(records) as writer:
        for i in range(4):
            writer.write(tf.train.Example(features=tf.train.Features(feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=[float(i)]))})).SerializeToString())
    return True


entry("TFRecordWriter", write_records)
entry("tf_record_iterator", lambda: len(list(tf.compat.v1.io.tf_record_iterator(records))))
entry("TFRecordDataset", lambda: sum(1 for _ in tf.data.TFRecordDataset(records)))
entry("list_files", lambda: [text(f.numpy()) for f in tf.data.Dataset.list_files(B + "/data/*.tfrecord")])
entry("interleave", lambda: sum(1 for _ in tf.data.Dataset.list_files(B + "/data/*.tfrecord").interleave(tf.data.TFRecordDataset)))
entry("write_file", lambda: tf.io.write_file(B + "/data/t.txt", "a\nb\n") is None or True)
entry("read_file", lambda: text(tf.io.read_file(B + "/data/t.txt").numpy()).split())
entry("matching_files", lambda: [text(f) for f in tf.io.matching_files(B + "/data/*.txt").numpy()])
entry("TextLineDataset", lambda: [text(x.numpy()) for x in tf.data.TextLineDataset(B + "/data/t.txt")])


@tf.function
def read_in_function(path):
    return tf.strings.length(tf.io.read_file(path))


entry("read_file in tf.function", lambda: int(read_in_function(tf.constant(B + "/data/t.txt"))))
def distributed_records():
    dataset = tf.data.TFRecordDataset(records).map(
        lambda r: tf.io.parse_single_example(r, {"x": tf.io.FixedLenFeature([1], tf.float32)})["x"]).batch(8)
    batch = next(iter(strategy.experimental_distribute_dataset(dataset)))
    return float(sum(tf.reduce_sum(x) for x in strategy.experimental_local_results(batch)))


entry("distributed TFRecordDataset", distributed_records)

# checkpoints
with strategy.scope():
    v = tf.Variable(3.0)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
    model.compile("sgd", "mse")
checkpoint = tf.train.Checkpoint(v=v)
entry("Checkpoint.save", lambda: checkpoint.save(B + "/ckpt/c"))
entry("Checkpoint.write", lambda: checkpoint.write(B + "/ckpt/w"))
entry("latest_checkpoint", lambda: tf.train.latest_checkpoint(B + "/ckpt"))


def restore():
    v.assign(0.0)
    checkpoint.restore(tf.train.latest_checkpoint(B + "/ckpt")).assert_consumed()
    return float(v.numpy())


entry("Checkpoint.restore", restore)
entry("Checkpoint.read", lambda: checkpoint.read(B + "/ckpt/w") is not None) if hasattr(checkpoint, "read") else None
manager = tf.train.CheckpointManager(checkpoint, B + "/managed", max_to_keep=1)
entry("CheckpointManager.save", lambda: (manager.save(), manager.save(), sorted(tf.io.gfile.listdir(B + "/managed")))[2])
entry("load_checkpoint", lambda: sorted(k for k in tf.train.load_checkpoint(B + "/ckpt/w").get_variable_to_shape_map() if k.startswith("v/")))
entry("list_variables", lambda: len(tf.train.list_variables(B + "/ckpt/w")) > 0)

# SavedModel and Keras
entry("saved_model.save", lambda: tf.saved_model.save(checkpoint, B + "/sm") is None)
entry("saved_model.load", lambda: float(tf.saved_model.load(B + "/sm").v.numpy()))
entry("Model.save tf", lambda: model.save(B + "/keras_model", save_format="tf") is None)
entry("load_model tf", lambda: len(tf.keras.models.load_model(B + "/keras_model").layers))
entry("save_weights tf", lambda: model.save_weights(B + "/weights/w") is None)
entry("load_weights tf", lambda: model.load_weights(B + "/weights/w") is not None)
x = np.ones((8, 2), np.float32)
y = np.ones((8, 1), np.float32)
entry("ModelCheckpoint", lambda: (model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[
    tf.keras.callbacks.ModelCheckpoint(B + "/mc/w", save_weights_only=True)]), tf.io.gfile.exists(B + "/mc/w.index"))[1])
entry("TensorBoard", lambda: (model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[
    tf.keras.callbacks.TensorBoard(B + "/tb")]), len(tf.io.gfile.glob(B + "/tb/train/*")) > 0)[1])

# summaries


def summaries():
    writer = tf.summary.create_file_writer(B + "/logs")
    with writer.as_default():
        tf.summary.scalar("s", 1.0, step=0)
    writer.flush()
    return len(tf.io.gfile.listdir(B + "/logs"))


entry("create_file_writer", summaries)
print("ENTRY local files", sorted(os.listdir(os.path.join(os.environ["MIGRATE_TPU_GCS"], "entry-bucket"))))
