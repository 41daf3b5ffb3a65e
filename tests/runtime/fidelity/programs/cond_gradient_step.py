"""A tf.cond whose gradient the step takes, in a custom training loop: a TPU builds the step inside
its replicate context (an XLA control-flow context), where cond_v2 outputs the branches' gradient
intermediates directly, so the step compiles and trains (``ops/cond_v2.py`` at v2.1.0 and v2.4.1:
Optionals only outside an XLA context; ``tpu.py``: ``TPUReplicateContext`` entered before the
computation is called)."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2

with strategy.scope():
    weight = tf.Variable(2.0)
    optimizer = tf.keras.optimizers.SGD(0.1)


@tf.function
def step(x):
    def fn(value):
        with tf.GradientTape() as tape:
            if tf.reduce_sum(value) > 0:  # AutoGraph: a tf.cond on a tensor
                y = weight * value
            else:
                y = weight * value * value
            loss = tf.reduce_sum(y)
        gradients = tape.gradient(loss, [weight])
        optimizer.apply_gradients(zip(gradients, [weight]))
        return loss
    return run(fn, args=(x,))


step(tf.constant(1.0))
print("FIDELITY weight={:.2f}".format(float(weight.numpy())))
