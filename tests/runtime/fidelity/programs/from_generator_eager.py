"""``Dataset.from_generator`` iterated eagerly after ``experimental_connect_to_cluster`` (to look at a
first batch, say): the connection made the TPU worker the default device (``eager/remote.py``,
v2.1.0 and v2.4.1), so the iterator runs there, and the worker has no Python of the program (TF 2.1:
no PyFunc kernel) or cannot call back into the client (TF >= 2.2: "failed to connect to all
addresses", tensorflow#43186); on a TPU VM it runs."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)


def rows():
    for index in range(3):
        yield float(index)


dataset = tf.data.Dataset.from_generator(rows, tf.float32)
print("FIDELITY first={}".format(float(next(iter(dataset)))))
