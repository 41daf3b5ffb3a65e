"""tf.print in the replica function, soft placement as TensorFlow leaves it: inside the traced step it reads False, so automatic outside compilation is off and XLA refuses the print ops (tensorflow#43705)."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


@tf.function
def step(x):
    def fn(v):
        tf.print("FIDELITY-PRINT", v)
        return v
    return run(fn, args=(x,))


step(tf.constant(1.0))
print("done")
