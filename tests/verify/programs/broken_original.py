"""An original that cannot run under the TF 2.1 surface: TPUStrategy.run is TF 2.2+."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
strategy = tf.distribute.experimental.TPUStrategy(resolver)
print(strategy.run(tf.function(lambda: tf.constant(1.0))))
