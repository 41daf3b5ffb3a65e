"""TPU entry points imported by module path, as some 2020 code wrote them: on a TPU the imports
were TensorFlow's own functions, as ``tf.config.experimental_connect_to_cluster`` is; here they
must be the emulated machine's, or TensorFlow's own connect would dial the TPU address the
machine announces and wait for ever."""
import tensorflow as tf
import tensorflow.config
from tensorflow.config import experimental_connect_to_cluster
from tensorflow.distribute.experimental import TPUStrategy  # TF 2.21 also loads this path itself
from tensorflow.distribute.cluster_resolver import TPUClusterResolver
from tensorflow.tpu.experimental import initialize_tpu_system

resolver = TPUClusterResolver(tpu="")
experimental_connect_to_cluster(resolver)
initialize_tpu_system(resolver)
strategy = TPUStrategy(resolver)
print("FIDELITY replicas={} same_module={} same_class={}".format(
    strategy.num_replicas_in_sync, tensorflow.config is tf.config, TPUStrategy is tf.distribute.experimental.TPUStrategy))
