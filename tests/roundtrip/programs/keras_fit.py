"""Keras compile/fit/evaluate/predict under strategy.scope() (TF 2.1 form)."""
import json

import numpy as np
import tensorflow as tf

np.random.seed(1)
tf.random.set_seed(1)

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

x = np.random.uniform(-1, 1, size=(256, 4)).astype(np.float32)
y = (np.sin(x[:, :1] * 2.0) + x[:, 1:2] * x[:, 2:3]).astype(np.float32)
weights = [np.random.normal(scale=0.5, size=(4, 8)).astype(np.float32), np.zeros(8, np.float32),
           np.random.normal(scale=0.5, size=(8, 1)).astype(np.float32), np.zeros(1, np.float32)]

with strategy.scope():
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(8, activation="tanh", input_shape=(4,)),
        tf.keras.layers.Dense(1),
    ])
    model.set_weights(weights)
    model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.2),
                  loss="mse", metrics=["mae"])

history = model.fit(x, y, batch_size=32, epochs=3, shuffle=False, verbose=0)
evaluation = model.evaluate(x, y, batch_size=32, verbose=0)
predictions = model.predict(x[:16], batch_size=16)

print("RESULT " + json.dumps({
    "loss": [float(v) for v in history.history["loss"]],
    "mae": [float(v) for v in history.history["mae"]],
    "evaluate": [float(v) for v in evaluation],
    "predictions": predictions.ravel().tolist(),
}))
