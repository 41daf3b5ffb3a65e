"""A wrong migration of method_step.py, the one of issue 18: @tf.function moved onto the step\ndefined inside the method, so each call makes (and traces) a new function; same numbers."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)


class Trainer(object):
    def __init__(self):
        with strategy.scope():
            self.w = tf.Variable(1.0, name="w")

    def step(self, x):
        @tf.function
        def step_fn(x):
            self.w.assign_add(x)
            return self.w * 2.0
        return strategy.run(step_fn, args=(x,))


trainer = Trainer()
for i in range(5):
    out = trainer.step(tf.constant(float(i)))
    print(strategy.experimental_local_results(out)[0].numpy())
