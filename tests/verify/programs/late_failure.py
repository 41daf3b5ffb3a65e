"""Trains three steps, prints the version it runs on, then fails as a notebook's last cell
does where a plotting package is missing."""
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


print("TensorFlow", tf.__version__)
for step in range(3):
    print("step", step + 1, "value", float(train_step()))
import a_plotting_package_nobody_has  # noqa: E402,F401
