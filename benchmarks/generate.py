"""Deterministic trees for the benchmarks: TF 2.1 TPU programs that all need work.

Each generated file is a plausible training module: a strategy built one of
several ways, a dataset function, a model, a training step run through
``experimental_run_v2``, Keras ``compile`` with TF 2.1 positional arguments,
mixed precision and device assignment, plus a good share of ordinary code
(helpers, classes, docstrings) so that parsing costs what real files cost.
"""

from __future__ import annotations

import random
from pathlib import Path

_HEADERS = (
    "import tensorflow as tf\n",
    "import tensorflow as tf\nimport numpy as np\n",
    "import tensorflow.compat.v2 as tf\n",
    "from tensorflow import distribute as tfd\nimport tensorflow as tf\n",
)

_STRATEGIES = (
    "strategy = tf.distribute.experimental.TPUStrategy(resolver)\n",
    "strategy = tf.distribute.experimental.TPUStrategy(resolver, device_assignment=assignment)\n",
    "strategy = tfd.experimental.TPUStrategy(resolver)\n",
)

_HELPER = '''

def helper_{n}(values, scale={scale}):
    """Ordinary Python: the bulk of a real module."""
    total = 0.0
    for index, value in enumerate(values):
        if index % 3 == 0:
            total += value * scale
        elif index % 3 == 1:
            total -= value / (scale + 1)
        else:
            total = max(total, value)
    return {{"total": total, "count": len(values), "name": "helper_{n}"}}


class Config{n}(object):
    """Settings object {n}."""

    def __init__(self, learning_rate={lr}, batch_size={batch}):
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.history = []

    def describe(self):
        return "lr=%s batch=%s" % (self.learning_rate, self.batch_size)
'''

_BODY = '''
resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="grpc://10.0.0.{n}:8470")
tf.config.experimental_connect_to_cluster(resolver)
topology = tf.tpu.experimental.initialize_tpu_system(resolver)
assignment = tf.tpu.experimental.DeviceAssignment.build(topology, computation_shape=[1, 1, 2], num_replicas=4)
{strategy}
tf.keras.mixed_precision.experimental.set_policy("mixed_bfloat16")


def dataset_fn(input_context):
    batch = input_context.get_per_replica_batch_size({batch})
    data = tf.data.Dataset.range(1024).map(lambda x: tf.cast(x, tf.float32))
    return data.shard(input_context.num_input_pipelines, input_context.input_pipeline_id).batch(batch)


dist_dataset = strategy.experimental_distribute_datasets_from_function(dataset_fn)

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense({units}), tf.keras.layers.Dense(1)])
    optimizer = tf.keras.optimizers.SGD({lr})
    model.compile(optimizer, "mse", ["mae"], experimental_run_tf_function=False)


def step_fn(inputs):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(inputs[:, None]) - 1.0))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for batch in dist_dataset:
    per_replica = strategy.experimental_run_v2(step_fn, args=(batch,))
    loss = strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None)
'''


def tf21_tree(root: Path, files: int = 300, helpers: int = 6, seed: int = 2020) -> Path:
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for number in range(files):
        header = rng.choice(_HEADERS[:1] + _HEADERS[2:])
        strategy = rng.choice(_STRATEGIES if "tfd" in header else _STRATEGIES[:2])
        parts = [f'"""Generated TF 2.1 TPU module {number}."""\n', header]
        for helper in range(helpers):
            parts.append(_HELPER.format(n=helper, scale=rng.randint(1, 9), lr=rng.choice([0.1, 0.01]), batch=rng.choice([32, 64])))
        parts.append(_BODY.format(n=number % 250, strategy=strategy, batch=rng.choice([64, 128]), units=rng.choice([8, 16]), lr=rng.choice([0.1, 0.05])))
        folder = root / f"pkg{number // 50}"
        folder.mkdir(exist_ok=True)
        (folder / f"train_{number}.py").write_text("".join(parts))
    return root
