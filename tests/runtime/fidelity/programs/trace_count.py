"""Python side effects in the replica function: a TPU traces it once per call signature (tpu.replicate), MirroredStrategy once per replica."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


traces = []


@tf.function
def step(x):
    def fn(v):
        traces.append(1)
        return v * 2.0
    return run(fn, args=(x,))


step(tf.constant(1.0))
step(tf.constant(2.0))
print("FIDELITY traces={}".format(len(traces)))
