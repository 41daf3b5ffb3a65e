"""The TF 2.1 TPU guide's custom training loop: the iterator passed into a
tf.function, Keras metrics updated in the replica function and read eagerly
after each epoch (TPU metrics sum every replica's updates)."""
import json
import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
print("All devices: ", len(tf.config.list_logical_devices('TPU')))

rng = np.random.RandomState(0)
images = rng.rand(512, 8, 8, 1).astype(np.float32)
labels = (images.mean(axis=(1, 2, 3)) * 10).astype(np.int64) % 10

def create_model():
    m = tf.keras.Sequential([
        tf.keras.layers.Conv2D(4, 3, activation='relu', input_shape=(8, 8, 1), kernel_initializer=tf.keras.initializers.Constant(0.05)),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(10, kernel_initializer=tf.keras.initializers.Constant(0.01))])
    return m

per_replica_batch_size = 8
global_batch = per_replica_batch_size * strategy.num_replicas_in_sync

def get_dataset(ctx):
    bs = ctx.get_per_replica_batch_size(global_batch)
    ds = tf.data.Dataset.from_tensor_slices((images, labels)).shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
    return ds.batch(bs, drop_remainder=True).repeat()

train_dataset = strategy.experimental_distribute_datasets_from_function(get_dataset)

with strategy.scope():
    model = create_model()
    optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
    training_loss = tf.keras.metrics.Mean('training_loss', dtype=tf.float32)
    training_accuracy = tf.keras.metrics.SparseCategoricalAccuracy('training_accuracy', dtype=tf.float32)

steps_per_epoch = 512 // global_batch

@tf.function
def train_step(iterator):
    def step_fn(inputs):
        images, labels = inputs
        with tf.GradientTape() as tape:
            logits = model(images, training=True)
            loss = tf.keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
            loss = tf.nn.compute_average_loss(loss, global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(list(zip(grads, model.trainable_variables)))
        training_loss.update_state(loss * strategy.num_replicas_in_sync)
        training_accuracy.update_state(labels, logits)
    strategy.experimental_run_v2(step_fn, args=(next(iterator),))

out = []
train_iterator = iter(train_dataset)
for epoch in range(2):
    for step in range(steps_per_epoch):
        train_step(train_iterator)
    out.append([float(training_loss.result()), float(training_accuracy.result())])
    training_loss.reset_states(); training_accuracy.reset_states()
print("RESULT " + json.dumps({"epochs": out}))
