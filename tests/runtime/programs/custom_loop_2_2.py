"""A custom training loop as TF 2.2's TPU guide (mid-2020) wrote it: ``strategy.run`` in a
``tf.function`` and ``experimental_distribute_datasets_from_function`` on
``tf.distribute.experimental.TPUStrategy``, with a Keras model, optimizer, loss and metric.
Under the 2.1 surface it fails (``run`` came with TF 2.2).  Prints one line per step, the
loss's bits first; ``train()`` returns the losses.  Python 3.7 syntax.

Every value it computes is exactly representable in float32 (features in {-1, 0, 1}, integer
targets, zero initial weights, an L1 loss whose gradients are multiples of 1/32, a learning
rate and momentum that are powers of two): so its bits do not depend on the order in which a
kernel sums, and the same program prints the same bits on TF 2.2.3 and on TF 2.21, whose
matmul kernels round a realistic model's sums differently in the last bit.
"""
import numpy as np
import tensorflow as tf

GLOBAL_BATCH = 32
STEPS = 6


def dataset_fn(input_context):
    rng = np.random.RandomState(0)
    features = rng.randint(-1, 2, size=(GLOBAL_BATCH * STEPS, 8)).astype(np.float32)
    labels = features.dot(np.arange(1, 9, dtype=np.float32) - 4.0)[:, None] + 1.0
    batch = input_context.get_per_replica_batch_size(GLOBAL_BATCH)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return dataset.batch(batch, drop_remainder=True).repeat()


def train(steps=STEPS):
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.experimental.TPUStrategy(resolver)

    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, kernel_initializer="zeros", input_shape=(8,))])
        optimizer = tf.keras.optimizers.SGD(learning_rate=0.125, momentum=0.5)
        loss_object = tf.keras.losses.MeanAbsoluteError(reduction=tf.keras.losses.Reduction.NONE)
        error = tf.keras.metrics.MeanAbsoluteError()

    def compute_loss(labels, predictions):
        per_example_loss = loss_object(labels, predictions)
        return tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH)

    iterator = iter(strategy.experimental_distribute_datasets_from_function(dataset_fn))

    @tf.function
    def train_step(iterator):
        def step_fn(inputs):
            features, labels = inputs
            with tf.GradientTape() as tape:
                predictions = model(features, training=True)
                loss = compute_loss(labels, predictions)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(list(zip(grads, model.trainable_variables)))
            error.update_state(labels, predictions)
            return loss

        per_replica_losses = strategy.run(step_fn, args=(next(iterator),))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)

    losses = []
    for step in range(steps):
        loss = float(train_step(iterator))
        losses.append(loss)
        print("step {} loss {} {:.6f} error {}".format(step, loss.hex(), loss, float(error.result()).hex()))
    kernel, bias = (np.asarray(v.numpy(), dtype=np.float64) for v in model.trainable_variables)
    print("weights {} {}".format(" ".join(float(v).hex() for v in kernel.ravel()), float(bias[0]).hex()))
    return losses


if __name__ == "__main__":
    train()
