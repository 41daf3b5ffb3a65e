"""tf.print in the replica function with soft placement turned on (automatic outside compilation): it runs on the TPU host; on a TPU Node its lines land in the TPU worker's log, not the client's output."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2
tf.config.set_soft_device_placement(True)  # automatic outside compilation: off unless set (tensorflow#43705)


@tf.function
def step(x):
    def fn(v):
        tf.print("FIDELITY-PRINT", v)
        return v
    return run(fn, args=(x,))


step(tf.constant(1.0))
print("done")
