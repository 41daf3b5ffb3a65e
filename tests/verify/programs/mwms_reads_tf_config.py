"""A multi-worker script (TF 2.1 form) that reads its cluster from TF_CONFIG itself, as the
tutorial's main.py and kubeflow's workers do: it cannot run as one worker without a cluster."""
import json
import os

import numpy as np
import tensorflow as tf

# read as kubeflow's workers of 2020 read it: no TF_CONFIG is an empty config, which fails at
# ['task'] with a KeyError whose text never names TF_CONFIG
tf_config = json.loads(os.environ.get('TF_CONFIG') or '{}')
task_index = tf_config['task']['index']
workers = len(tf_config["cluster"]["worker"])
strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()

features = np.linspace(-1.0, 1.0, 64 * 4, dtype=np.float32).reshape(64, 4)
labels = (features.sum(axis=1, keepdims=True) > 0).astype(np.float32)
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(8 * workers)

with strategy.scope():
    kernel = tf.Variable(tf.ones([4, 1]) * 0.1, name="kernel")
    optimizer = tf.keras.optimizers.SGD(0.1)


@tf.function
def train_step(iterator):
    def step_fn(batch):
        x, y = batch
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(y, tf.matmul(x, kernel)))
        optimizer.apply_gradients([(tape.gradient(loss, kernel), kernel)])
        return loss

    per_replica = strategy.experimental_run_v2(step_fn, args=(next(iterator),))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)


iterator = iter(strategy.experimental_distribute_dataset(dataset))
for step in range(2):
    print("step", step + 1, "loss", float(train_step(iterator)))
