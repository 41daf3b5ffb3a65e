"""``tf.compat.v1.tpu.outside_compilation`` in the step, TF 2.4's documented way to run a host op with
soft placement off: the ops of the function it is given run on the TPU's host, the rest is compiled
(``tpu.py`` at v2.4.1: ``OutsideCompilationV2Context`` marks them); on a TPU Node the host is the TPU
worker, whose log gets what ``tf.print`` prints there."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


@tf.function
def step(x):
    def fn(value):
        doubled = value * 2.0
        tf.compat.v1.tpu.outside_compilation(tf.print, "FIDELITY-HOST-PRINT", doubled)
        return doubled
    return run(fn, args=(x,))


result = step(tf.constant(1.0))
print("FIDELITY total={}".format(float(tf.add_n(strategy.experimental_local_results(result)))))
