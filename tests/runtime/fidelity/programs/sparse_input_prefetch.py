"""A dataset of sparse tensors (a ``VarLenFeature`` parsed from examples) given to
``experimental_distribute_dataset``: from TF 2.3 on, TPUStrategy refuses sparse or ragged inputs with
device prefetch (``TPUExtended._check_spec``, ``tpu_strategy.py`` at v2.3.4 and v2.4.1)."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)

example = tf.train.Example(features=tf.train.Features(feature={
    "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[1, 2, 3]))})).SerializeToString()
records = tf.data.Dataset.from_tensors(example).repeat(16).batch(8)
parsed = records.map(lambda batch: tf.io.parse_example(batch, {"ids": tf.io.VarLenFeature(tf.int64)}))
distributed = strategy.experimental_distribute_dataset(parsed)
print("done")
