"""An eager run of a tf.function, three times with one input signature: a TPU compiles the call as a
whole, one tf.function per replica function, so the step is traced once (_tpu_function_creator's
cache at v2.1.0 and v2.4.1), not once per replica and call."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2

traces = []


@tf.function
def step(v):
    traces.append(1)
    return v * 2.0


for value in (1.0, 2.0, 3.0):
    run(step, args=(tf.constant(value),))
print("FIDELITY traces={}".format(len(traces)))
