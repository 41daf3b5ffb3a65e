"""A subclassed ``train_step`` returning a metric's ``result()`` and a per-replica loss, with
the per-batch logs a callback sees (TF 2.4 form: ``tf.distribute.TPUStrategy``).

On a TPU Keras takes the first replica's value of each log; tf-keras (TF >= 2.5) decides
so by the strategy's class name, TF 2.4.1 always does."""
import json
import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)

class Counting(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(1, kernel_initializer="ones")
        self.seen = tf.keras.metrics.Sum(name="seen")
    def call(self, x):
        return self.dense(x)
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self(x) - y))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.seen.update_state(tf.cast(tf.shape(x)[0], tf.float32))
        return {"seen": self.seen.result(), "loss": loss}

with strategy.scope():
    model = Counting()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.01))
x = np.arange(64 * 2, dtype=np.float32).reshape(64, 2) / 100.0
y = np.ones((64, 1), np.float32)
logs = []
class Record(tf.keras.callbacks.Callback):
    def on_train_batch_end(self, batch, l=None):
        logs.append({k: round(float(v), 5) for k, v in l.items()})
hist = model.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0, callbacks=[Record()])
print("RESULT " + json.dumps({"batches": logs, "class": type(strategy).__name__}))
