"""Which functions AutoGraph converts in a run: the user's (a ``tf.function`` and the replica
function its ``run`` call converts, as TensorFlow's ``run`` converts it), and none of the
runtime's (its ``run``, ``experimental_run_v2`` and the recorder's wrappers stand in for
TensorFlow's, which AutoGraph leaves alone).  AutoGraph writes each converted function's code
to a file in the temporary folder (``def tf__NAME``); this program gives it a folder of its own
and prints the names it finds there."""
import os
import re
import shutil
import sys
import tempfile

import tensorflow as tf

tempfile.tempdir = tempfile.mkdtemp(prefix="autograph-")

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = strategy.experimental_run_v2 if sys.argv[1:] == ["2.1"] else strategy.run


def replica_step(v):
    if tf.reduce_sum(v) > 0:  # a tensor's truth: only AutoGraph's conversion makes this a tf.cond
        v = v * 2.0
    else:
        v = v - 1.0
    return tf.reduce_sum(v)


@tf.function
def train_step(x):
    return strategy.reduce(tf.distribute.ReduceOp.SUM, run(replica_step, args=(x,)), axis=None)


print("results", float(train_step(tf.constant([1.0, 2.0]))), float(train_step(tf.constant([-1.0, -2.0]))))
converted = set()
for name in os.listdir(tempfile.tempdir):
    if name.endswith(".py"):
        with open(os.path.join(tempfile.tempdir, name)) as handle:
            converted.update(re.findall(r"^\s*def tf__(\w+)\(", handle.read(), re.M))
print("converted", " ".join(sorted(converted)))
shutil.rmtree(tempfile.tempdir, ignore_errors=True)  # AutoGraph's files, read: nothing is left behind
