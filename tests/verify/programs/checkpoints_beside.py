"""Reads data beside itself (``__file__``) and checkpoints to ``./ckpts``, resuming from the
latest checkpoint there: run twice in one folder, the second run starts where the first
stopped.  Each of verify's runs must start in a folder of its own."""
import os

import numpy as np
import tensorflow as tf

here = os.path.dirname(os.path.abspath(__file__))
data = np.load(os.path.join(here, "data.npy"))

strategy = tf.distribute.MirroredStrategy()
with strategy.scope():
    total = tf.Variable(1.0, name="total", aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
checkpoint = tf.train.Checkpoint(total=total)
manager = tf.train.CheckpointManager(checkpoint, "./ckpts", max_to_keep=3)
if manager.latest_checkpoint:
    checkpoint.restore(manager.latest_checkpoint)


@tf.function
def train_step(x):
    def step_fn(x):
        total.assign_add(x)
        return total.read_value()

    per_replica = strategy.experimental_run_v2(step_fn, args=(x,))
    return strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None)


for k in range(3):
    print("step", k + 1, "total", float(train_step(tf.constant(float(data[k])))))
    manager.save()
