"""A Keras model built with the ``mixed_float16`` policy under TPUStrategy: Keras refuses the policy with
a strategy that cannot scale losses, TPUStrategy from TF 2.3 on ("Mixed precision is not supported
with the tf.distribute.Strategy: TPUStrategyV2", ``keras/engine/base_layer.py`` at v2.4.1, reading
``loss_scale_optimizer.strategy_supports_loss_scaling``; a LossScaleOptimizer made by hand gets "Loss
scaling is not supported with TPUStrategy"): TPUs use bfloat16, which needs no loss scaling."""
import numpy as np
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)
tf.keras.mixed_precision.set_global_policy("mixed_float16")

features = np.random.RandomState(0).rand(32, 4).astype("float32")
labels = np.random.RandomState(1).randint(0, 2, 32)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(4,)),
                                 tf.keras.layers.Dense(2, dtype="float32")])
    model.compile(tf.keras.optimizers.SGD(0.1), tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(features, labels, batch_size=16, epochs=1, verbose=0)
print("done")
