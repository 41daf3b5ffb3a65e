"""Input pipeline: synthetic, seeded, sharded per input pipeline."""
import numpy as np
import tensorflow as tf

GLOBAL_BATCH_SIZE = 64
FEATURES = 16
CLASSES = 4


def make_arrays(count=1024, seed=1234):
    rng = np.random.RandomState(seed)
    features = rng.normal(size=(count, FEATURES)).astype(np.float32)
    weights = rng.normal(size=(FEATURES, CLASSES)).astype(np.float32)
    labels = np.argmax(features.dot(weights), axis=1).astype(np.int32)
    return features, labels


def dataset_fn(input_context):
    """One input pipeline's share of the data, batched per replica."""
    features, labels = make_arrays()
    batch_size = input_context.get_per_replica_batch_size(GLOBAL_BATCH_SIZE)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return dataset.batch(batch_size, drop_remainder=True)
