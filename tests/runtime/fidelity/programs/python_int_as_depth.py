"""A Python int passed to ``run`` and used as ``tf.one_hot``'s depth: ``tpu.replicate`` converts every
argument of the step to a tensor (``split_compile_and_replicate`` at v2.1.0 and v2.4.1), so the depth
is an input of the computation and XLA refuses it: "Input 1 to node `one_hot` with op OneHot must be
a compile-time constant"."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2

NUM_CLASSES = 4


@tf.function
def step(x, y):
    def fn(x, y, depth):
        labels = tf.one_hot(y, depth)
        return tf.reduce_sum(labels * x)
    return run(fn, args=(x, y, NUM_CLASSES))


step(tf.ones([8, 4]), tf.zeros([8], tf.int32))
print("done")
