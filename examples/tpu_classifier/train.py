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

dist_dataset = strategy.experimental_distribute_datasets_from_function(dataset_fn)


@tf.function
def train_step(iterator):
    """One step on every replica; returns the loss and the count of right answers."""

    def step_fn(inputs):
        features, labels = inputs
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            per_example_loss = loss_object(labels, logits)
            loss = tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH_SIZE)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, axis=1, output_type=tf.int32), labels), tf.float32))
        return loss, correct

    per_replica_loss, per_replica_correct = strategy.experimental_run_v2(step_fn, args=(next(iterator),))
    loss = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss, axis=None)
    correct = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_correct, axis=None)
    return loss, correct


iterator = iter(dist_dataset)
losses = []
right = 0.0
for step in range(STEPS):
    loss, correct = train_step(iterator)
    losses.append(float(loss))
    right += float(correct)

accuracy = right / (STEPS * GLOBAL_BATCH_SIZE)
print(json.dumps({"losses": [round(loss, 4) for loss in losses], "accuracy": round(accuracy, 4)}))
