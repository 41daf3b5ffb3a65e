"""Builds an emulated TPUStrategy and prints what owns its TPU semantics: the extended object's
class, that it is still the release's MirroredExtended, that no method of it is set on the
instance (the owner is its class, not patches of one object), and the TPU's answers through it: a
step's all-reduce, a float64 all-reduce refused in the step, an eager plain function refused by
``run``.  Run by tests/runtime/test_tpu_extended.py with the emulated API as its argument."""

import sys

import tensorflow as tf
from tensorflow.python.distribute import mirrored_strategy

from migrate_tpu.runtime.surfaces import emulation
from migrate_tpu.runtime.tpu import tpu_extended

api = sys.argv[1]
emulation.configure_devices(8)
emulation.install(tf_api=api)
resolver = tf.distribute.cluster_resolver.TPUClusterResolver("")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
extended = strategy.extended
print("CLASS", type(extended).__name__)
print("MIRRORED", isinstance(extended, mirrored_strategy.MirroredExtended))
print("ON_INSTANCE", sorted(name for name in tpu_extended.OWNED if name in vars(extended)))
print("OWNED", sorted(name for name in tpu_extended.OWNED if name in vars(type(extended))))
run = getattr(strategy, "run", None) or strategy.experimental_run_v2


@tf.function
def step(dtype):
    def replica():
        context = tf.distribute.get_replica_context()
        return context.all_reduce("sum", tf.cast(context.replica_id_in_sync_group + 1, dtype))
    return strategy.reduce(tf.distribute.ReduceOp.MEAN, run(replica), axis=None)  # each core has the sum


print("SUM", int(step(tf.float32).numpy()))
try:
    step(tf.float64)
    print("FLOAT64 ran")
except TypeError as error:
    words = "Value passed to parameter 'input' has DataType float64 not in list of allowed values"
    print("FLOAT64", "refused" if words in str(error) else str(error))
try:
    run(lambda: tf.constant(1.0))
    print("EAGER ran")
except NotImplementedError as error:
    print("EAGER", type(error).__name__)
emulation.uninstall()
