"""Train the classifier on a TPU with a custom training loop (TensorFlow 2.1)."""
import json

import tensorflow as tf

from data import GLOBAL_BATCH_SIZE, dataset_fn
from distribution import make_strategy
from model import build_model

STEPS = 12

strategy = make_strategy()
print("replicas in sync:", strategy.num_replicas_in_sync)

with strategy.scope():
    model = build_model()
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.5)
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=tf.keras.losses.Reduction.NONE
    )
    accuracy = tf.keras.metrics.SparseCategoricalAccuracy()

dist_dataset = strategy.experimental_distribute_datasets_from_function(dataset_fn)


@tf.function
def train_step(iterator):
    """One step on every replica; returns the summed per-replica loss."""

    def step_fn(inputs):
        features, labels = inputs
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            per_example_loss = loss_object(labels, logits)
            loss = tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH_SIZE)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        accuracy.update_state(labels, logits)
        return loss

    per_replica_loss = strategy.experimental_run_v2(step_fn, args=(next(iterator),))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss, axis=None)


iterator = iter(dist_dataset)
losses = []
for step in range(STEPS):
    losses.append(float(train_step(iterator)))

print(json.dumps({"losses": [round(loss, 4) for loss in losses], "accuracy": round(float(accuracy.result()), 4)}))
