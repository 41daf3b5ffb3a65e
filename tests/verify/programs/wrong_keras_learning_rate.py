"""A wrong migration of keras_unused_step.py: its run is renamed, and the learning rate
doubled (a planted mistake)."""
import numpy as np
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.2), loss="mse")


def distributed_predict(batch):  # never called below
    return strategy.run(model, args=(batch,))


features = np.linspace(-1.0, 1.0, 128, dtype=np.float32).reshape(32, 4)
model.fit(features, features.sum(axis=1, keepdims=True), batch_size=8, epochs=1, verbose=0)
print("loss", model.evaluate(features, features.sum(axis=1, keepdims=True), verbose=0))
