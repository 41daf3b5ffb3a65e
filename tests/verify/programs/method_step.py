"""A step method in TF 2.1 form: a tf.function method that calls experimental_run_v2."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)


class Trainer(object):
    def __init__(self):
        with strategy.scope():
            self.w = tf.Variable(1.0, name="w")

    @tf.function
    def step(self, x):
        def step_fn(x):
            self.w.assign_add(x)
            return self.w * 2.0
        return strategy.experimental_run_v2(step_fn, args=(x,))


trainer = Trainer()
for i in range(5):
    out = trainer.step(tf.constant(float(i)))
    print(strategy.experimental_local_results(out)[0].numpy())
