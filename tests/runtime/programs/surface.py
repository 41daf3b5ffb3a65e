"""Public names of the TF 2.1 surface as user code sees them; prints ``RESULT {json}``.
Runs under ``python -m migrate_tpu.runtime --tf-api 2.1`` or, bare, in a TF 2.1.0 interpreter."""
import json
import sys

import tensorflow as tf


def public(obj):
    return sorted(n for n in dir(obj) if not n.startswith("_"))


emulated = "migrate_tpu.runtime.emulation" in sys.modules
if emulated:
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.experimental.TPUStrategy(resolver)
    strategy_names = sorted(n for n in public(type(strategy)) if hasattr(strategy, n))
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0"])
    mirrored_names = sorted(n for n in public(type(mirrored)) if hasattr(mirrored, n))
    strategy_v1 = tf.compat.v1.distribute.experimental.TPUStrategy(resolver, steps_per_run=2)
    strategy_v1_names = sorted(n for n in public(type(strategy_v1)) if hasattr(strategy_v1, n))
    try:
        strategy.run
        run_error = None
    except AttributeError as error:
        run_error = str(error)

    @tf.function
    def step():  # AutoGraph converts this: its code runs from a generated file
        return strategy.run(lambda: tf.constant(1.0))

    try:
        step()
        graph_run_error = None
    except AttributeError as error:
        graph_run_error = str(error).strip().splitlines()[-1].strip()
    replica_names = []

    @tf.autograph.experimental.do_not_convert  # hasattr, not AutoGraph's call of it
    def look(context):
        del replica_names[:]
        replica_names.extend(n for n in public(type(context)) if hasattr(context, n))

    @tf.function
    def in_a_replica():
        look(tf.distribute.get_replica_context())
        return tf.constant(0.0)

    strategy.experimental_run_v2(in_a_replica)
    replica_names = sorted(set(replica_names))
    # TensorFlow's own code may call what it has (reduce with axis calls run)
    axis_sum = float(strategy.reduce("SUM", strategy.experimental_run_v2(
        tf.function(lambda: tf.ones([2]))), axis=0))
else:  # real TF 2.1.0 without a TPU: the class's names
    strategy_names = public(tf.distribute.experimental.TPUStrategy)
    mirrored_names = public(tf.distribute.MirroredStrategy)
    strategy_v1_names = public(tf.compat.v1.distribute.experimental.TPUStrategy)
    replica_names = public(tf.distribute.ReplicaContext)
    run_error = graph_run_error = axis_sum = None
print("RESULT " + json.dumps({
    "tf.distribute": public(tf.distribute),
    "tf.distribute.experimental": public(tf.distribute.experimental),
    "TPUStrategy": strategy_names,
    "MirroredStrategy": mirrored_names,
    "compat.v1 TPUStrategy": strategy_v1_names,
    "ReplicaContext": replica_names,
    "_run_error": run_error,
    "_graph_run_error": graph_run_error,
    "_axis_sum": axis_sum,
}))
