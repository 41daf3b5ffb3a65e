"""A TF 2.1 TPU training program that seeds nothing itself and draws from every source of
randomness of its day: Python's ``random``, NumPy, an unseeded TF op, the global
``tf.random`` generator and one from a non-deterministic state, a random op in a parallel ``Dataset.map``, an unseeded
``Dataset.shuffle`` distributed over the replicas,
Keras initializers and dropout.  A custom loop (``strategy.experimental_run_v2`` in a
``tf.function``; its migrated twin says ``strategy.run``) trains a small Conv2D model with
Adam for two epochs on 8 replicas and prints each step's loss bit for bit (``float.hex``).
Under ``MIGRATE_TPU_SEED`` (verify's runs) two runs must print the same; so must the
program and its migrated twin."""
import random

import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

GLOBAL_BATCH = 32
print("python", random.random().hex())
images = np.random.rand(128, 8, 8, 1).astype("float32")
labels = np.random.randint(0, 4, size=(128,)).astype("int64")
print("numpy", float(images.sum(dtype=np.float64)).hex())
print("tf op", float(tf.random.uniform([])).hex())
noise = tf.random.experimental.get_global_generator().normal([128, 8, 8, 1])
print("generator", float(tf.reduce_sum(noise)).hex())
# the random-numbers guide's first generator: TF gives it a fresh state, and under op
# determinism (TF >= 2.9) refuses it; seeded runs make it from the run's seed
fresh = tf.random.experimental.Generator.from_non_deterministic_state()
print("fresh generator", float(tf.reduce_sum(fresh.normal([16]))).hex())
images = images + 0.1 * noise.numpy()
# augmentation in a parallel map: its unseeded random op draws in whatever order the map's threads come
dataset = tf.data.Dataset.from_tensor_slices((images, labels)).map(
    lambda x, y: (tf.image.random_flip_left_right(x), y), num_parallel_calls=tf.data.experimental.AUTOTUNE)
dataset = dataset.shuffle(1000).batch(GLOBAL_BATCH, drop_remainder=True)
batches = strategy.experimental_distribute_dataset(dataset)

with strategy.scope():
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(4, 3, activation="relu", input_shape=(8, 8, 1)),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dropout(0.5),
        tf.keras.layers.Dense(4),
    ])
    optimizer = tf.keras.optimizers.Adam(0.01)
print("initial weights", float(sum(float(np.sum(w.numpy(), dtype=np.float64)) for w in model.weights)).hex())


def replica_step(inputs):
    x, y = inputs
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        per_example = tf.keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


@tf.function
def train_step(batch):
    per_replica = strategy.experimental_run_v2(replica_step, args=(batch,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)


for epoch in range(2):
    for step, batch in enumerate(batches):
        print("epoch", epoch, "step", step, float(train_step(batch)).hex())
print("weights", float(sum(float(np.sum(w.numpy(), dtype=np.float64)) for w in model.weights)).hex())
print("optimizer", type(optimizer).__name__, optimizer.iterations.name, int(optimizer.iterations.numpy()))
