"""Fit with Keras and evaluate with an eager step, TF 2.0 style.

The eager `experimental_run_v2(eval_fn)` below relied on TF 2.0 wrapping plain
functions for TPUs: it fails on TF 2.1 and later until `eval_fn` is a
`tf.function`.
"""
import json

import tensorflow as tf

from data import make_arrays
from distribution import make_strategy
from model import build_model

strategy = make_strategy()
features, labels = make_arrays(count=512)

with strategy.scope():
    model = build_model()
    model.compile(
        tf.keras.optimizers.SGD(learning_rate=0.1),
        tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        ["accuracy"],  # metrics
        experimental_run_tf_function=False,
    )

train_data = strategy.experimental_make_numpy_dataset((features, labels)).batch(64, drop_remainder=True)
history = model.fit(train_data, epochs=2, verbose=0)


def eval_fn(inputs):
    logits = model(inputs, training=False)
    return tf.reduce_sum(tf.cast(tf.argmax(logits, axis=1), tf.float32))


per_replica_sum = strategy.experimental_run_v2(eval_fn, args=(tf.constant(features[:8]),))
total = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_sum, axis=None)

if isinstance(strategy, tf.distribute.experimental.TPUStrategy):
    print("evaluated on", strategy.num_replicas_in_sync, "TPU cores")
print(json.dumps({"loss": [round(v, 4) for v in history.history["loss"]], "argmax_sum": float(total)}))
