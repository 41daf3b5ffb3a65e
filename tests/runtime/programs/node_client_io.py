"""On a TPU Node, what the client's Python writes to its disk works, and so do ops placed on the
client (tf.device('/job:localhost'), experimental_io_device from TF 2.3): each prints `CLIENT name value`."""
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
folder = tempfile.mkdtemp()


def entry(name, fn):
    try:
        print("CLIENT {} {}".format(name, fn()))
    except Exception as error:  # noqa: BLE001 - each reports its own outcome
        print("CLIENT {} error {} {}".format(name, type(error).__name__, str(error).splitlines()[0][:160]))


with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
    v = tf.Variable(2.0)
entry("save_weights h5", lambda: (model.save_weights(os.path.join(folder, "w.h5")), os.path.exists(os.path.join(folder, "w.h5")))[1])
entry("load_weights h5", lambda: model.load_weights(os.path.join(folder, "w.h5")) is None)
entry("gfile", lambda: (tf.io.gfile.GFile(os.path.join(folder, "a.txt"), "w").write("x"), tf.io.gfile.exists(os.path.join(folder, "a.txt")))[1])
entry("numpy", lambda: (np.save(os.path.join(folder, "a.npy"), np.ones(2)), os.path.exists(os.path.join(folder, "a.npy")))[1])


def on_the_client():
    with tf.device("/job:localhost"):
        tf.io.write_file(os.path.join(folder, "b.txt"), "y")
        return tf.io.read_file(os.path.join(folder, "b.txt")).numpy().decode()


entry("tf.device /job:localhost", on_the_client)
entry("tf.device /cpu:0", lambda: tf.io.read_file(os.path.join(folder, "a.txt")).numpy())  # still the worker
checkpoint = tf.train.Checkpoint(v=v)
options = getattr(tf.train, "CheckpointOptions", None)
if options is not None:
    entry("CheckpointOptions io_device", lambda: checkpoint.save(os.path.join(folder, "c"), options=options(
        experimental_io_device="/job:localhost")).endswith("c-1"))
entry("Checkpoint.save", lambda: checkpoint.save(os.path.join(folder, "d")))
shutil.rmtree(folder, ignore_errors=True)  # the client's disk is this machine's: leave nothing in its /tmp
