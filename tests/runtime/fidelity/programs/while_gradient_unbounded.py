"""A ``tf.while_loop`` without ``maximum_iterations`` whose gradient the step takes: in the TPU's XLA
context the loop's accumulators are TensorLists of no fixed size, which XLA refuses: "XLA compilation
requires a fixed tensor list size" (``tf2xla/kernels/tensor_list_utils.cc``)."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2

with strategy.scope():
    weight = tf.Variable(2.0)


@tf.function
def step(x):
    def fn(value):
        with tf.GradientTape() as tape:
            _, y = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * weight), (0, value))
        return tape.gradient(y, weight)
    return run(fn, args=(x,))


step(tf.constant(1.0))
print("done")
