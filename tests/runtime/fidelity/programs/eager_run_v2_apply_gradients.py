"""TF 2.1: experimental_run_v2 called eagerly with a tf.function whose body calls apply_gradients (TF 2.1 TPUStrategy compiles the call as a whole)."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2


with strategy.scope():
    v = tf.Variable(1.0)
    optimizer = tf.keras.optimizers.SGD(0.1)


@tf.function
def train_step():
    with tf.GradientTape() as tape:
        loss = v * v
    grads = tape.gradient(loss, [v])
    optimizer.apply_gradients(zip(grads, [v]))
    return loss


print(strategy.experimental_local_results(strategy.experimental_run_v2(train_step))[0])
