"""A Keras model trained by a custom loop (Adam, BatchNormalization, a metric, a SUM all-reduce of
the loss) and by ``fit`` on the emulated TPU: every number it prints must be the same whether the
replica function is traced once and run on every core (the TPU's way) or traced per replica."""
import numpy as np, tensorflow as tf
resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
tf.random.set_seed(1)
x = np.random.RandomState(0).rand(64, 4).astype("float32"); y = (x.sum(1) > 2).astype("int32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16, drop_remainder=True)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)), tf.keras.layers.BatchNormalization(), tf.keras.layers.Dense(2)])
    opt = tf.keras.optimizers.Adam(0.01)
    acc = tf.keras.metrics.SparseCategoricalAccuracy()
    loss_obj = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=tf.keras.losses.Reduction.NONE)
dist = strategy.experimental_distribute_dataset(ds)
@tf.function
def train_step(it):
    def step(inputs):
        xb, yb = inputs
        with tf.GradientTape() as tape:
            logits = model(xb, training=True)
            loss = tf.nn.compute_average_loss(loss_obj(yb, logits), global_batch_size=16)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        acc.update_state(yb, logits)
        return loss
    per = getattr(strategy, "run", None) or strategy.experimental_run_v2; per = per(step, args=(next(it),))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per, axis=None)
for epoch in range(2):
    it = iter(dist)
    for _ in range(4):
        l = train_step(it)
    print("epoch", epoch, "loss %r" % float(l), "acc %r" % float(acc.result()), "iters", int(opt.iterations.numpy()))
print("w0", repr(model.layers[0].kernel.numpy().tolist()))
print("per-replica equal:", all(np.allclose(v.numpy(), model.layers[0].kernel.values[0].numpy()) for v in model.layers[0].kernel.values))
with strategy.scope():
    m2 = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(4,))])
    m2.compile(tf.keras.optimizers.SGD(0.1), tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
h = m2.fit(ds, epochs=2, verbose=0)
print("fit", repr(h.history["loss"]))
