"""A ``tf.range`` loop in the step that grows a tensor with ``tf.concat``, on inputs of unknown batch
size: AutoGraph accepts it (the shape stays ``(None, 3)``), XLA does not: "Input and output shapes
of loop body do not match" (``tf2xla/kernels/while_op.cc``)."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


@tf.function(input_signature=[tf.TensorSpec([None, 3])])
def step(x):
    def fn(x):
        y = x
        for _ in tf.range(3):
            y = tf.concat([y, x], 0)
        return tf.reduce_sum(y)
    return run(fn, args=(x,))


step(tf.ones([8, 3]))
print("done")
