"""Trains three steps and plots them as a tutorial does: ``plt.show()`` must not wait for
somebody to close a window (verify draws off screen), and the interpreters that
`migrate-tpu envs` builds have matplotlib."""
import matplotlib.pyplot as plt
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
with strategy.scope():
    w = tf.Variable(2.0, name="w", aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)


@tf.function
def train_step():
    def step_fn():
        w.assign_sub(0.5)
        return w.read_value()

    return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.experimental_run_v2(step_fn), axis=None)


values = [float(train_step()) for _ in range(3)]
plt.plot(values)
plt.title("training")
plt.show()
print("plotted with", plt.get_backend())
