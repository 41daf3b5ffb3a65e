"""Observes the emulated TPU's behaviour; run it with ``python -m migrate_tpu.runtime``.

Prints ``RESULT {json}``: for each probe either its value or
``{"error": ExceptionType, "message": str}``.  Python 3.7 syntax only.
"""
import json
import sys

import numpy as np
import tensorflow as tf

from migrate_tpu.runtime.surfaces import emulation

obs = {}


def probe(name, fn):
    try:
        value = fn()
    except Exception as error:  # noqa: BLE001 - the error is the observation
        value = {"error": type(error).__name__, "message": str(error)}
    obs[name] = value
    return value


def run_method(strategy):
    return strategy.run if hasattr(strategy, "run") else strategy.experimental_run_v2


def values(per_replica, strategy):
    return [np.asarray(v).tolist() for v in strategy.experimental_local_results(per_replica)]


api = emulation.STATE.tf_api
obs["tf_version"] = tf.__version__
obs["api"] = api
obs["emulated"] = emulation.STATE.installed

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
topology = tf.tpu.experimental.initialize_tpu_system(resolver)
obs["mesh_shape"] = np.asarray(topology.mesh_shape).tolist()
obs["master"] = {
    "empty": tf.distribute.cluster_resolver.TPUClusterResolver(tpu="").master(),
    "local": tf.distribute.cluster_resolver.TPUClusterResolver(tpu="local").master(),
    "none": tf.distribute.cluster_resolver.TPUClusterResolver().master(),
    "grpc": tf.distribute.cluster_resolver.TPUClusterResolver(tpu="grpc://10.0.0.2:8470").master(),
}
probe("tpu_logical_devices", lambda: len(tf.config.list_logical_devices("TPU"))
      if hasattr(tf.config, "list_logical_devices")
      else len(tf.config.experimental.list_logical_devices("TPU")))

strategy = tf.distribute.experimental.TPUStrategy(resolver)
obs["class_name"] = type(strategy).__name__
obs["replicas"] = strategy.num_replicas_in_sync
obs["worker_devices"] = len(strategy.extended.worker_devices)
obs["cluster_resolver_is_resolver"] = getattr(strategy, "cluster_resolver", None) is resolver
obs["experimental_has"] = {name: hasattr(strategy, name) for name in (
    "run", "experimental_run_v2", "experimental_make_numpy_dataset",
    "experimental_assign_to_logical_device", "experimental_split_to_logical_devices",
    "experimental_replicate_to_logical_devices")}


def plain():
    return tf.distribute.get_replica_context().replica_id_in_sync_group + 1


class CallableWithFunction(object):
    @tf.function
    def __call__(self):
        return plain()


class PlainCallable(object):
    def __call__(self):
        return plain()


function = tf.function(plain)
concrete = tf.function(plain).get_concrete_function()
run = run_method(strategy)
probe("eager_plain", lambda: values(run(plain), strategy))
probe("eager_lambda", lambda: values(run(lambda: tf.constant(1.0)), strategy))
probe("eager_plain_callable", lambda: values(run(PlainCallable()), strategy))
probe("eager_tf_function", lambda: values(run(function), strategy))
probe("eager_concrete_function", lambda: values(run(concrete), strategy))
probe("eager_callable_with_tf_function", lambda: values(run(CallableWithFunction()), strategy))
probe("graph_plain", lambda: values(tf.function(lambda: run(plain))(), strategy))
if hasattr(strategy, "experimental_run_v2") and hasattr(strategy, "run"):
    probe("eager_plain_experimental_run_v2", lambda: values(strategy.experimental_run_v2(plain), strategy))

mirrored = tf.distribute.MirroredStrategy(emulation.local_devices()[:2])
probe("mirrored_eager_plain", lambda: values(run_method(mirrored)(plain), mirrored))
probe("mirrored_has_experimental_run_v2", lambda: hasattr(mirrored, "experimental_run_v2"))


@tf.function
def per_replica_rows():
    def fn():
        rid = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)
        return tf.stack([rid, rid * 10.0])
    return run(fn)


rows = per_replica_rows()
probe("reduce_sum_none", lambda: strategy.reduce("SUM", rows, axis=None).numpy().tolist())
probe("reduce_mean_none", lambda: strategy.reduce(tf.distribute.ReduceOp.MEAN, rows, axis=None).numpy().tolist())
probe("reduce_sum_axis0_eager", lambda: strategy.reduce("SUM", rows, axis=0).numpy().tolist())
probe("reduce_sum_axis0_graph",
      lambda: tf.function(lambda: strategy.reduce("SUM", rows, axis=0))().numpy().tolist())
probe("reduce_mean_axis0_eager", lambda: strategy.reduce("MEAN", rows, axis=0).numpy().tolist())
probe("reduce_mean_axis0_graph",
      lambda: tf.function(lambda: strategy.reduce("MEAN", rows, axis=0))().numpy().tolist())
probe("reduce_without_axis", lambda: strategy.reduce("SUM", rows))
if hasattr(strategy, "gather"):
    probe("gather_axis0", lambda: strategy.gather(rows, axis=0).numpy().tolist())
if hasattr(strategy, "experimental_distribute_values_from_function"):
    probe("values_from_function", lambda: values(
        strategy.experimental_distribute_values_from_function(
            lambda ctx: tf.constant(ctx.replica_id_in_sync_group * 2)), strategy))
if hasattr(strategy, "experimental_make_numpy_dataset"):
    probe("numpy_dataset", lambda: [np.asarray(x).tolist() for x in
                                    strategy.experimental_make_numpy_dataset(np.arange(3.0))])

contexts = []


def dataset_fn(ctx):
    contexts.append([ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync,
                     ctx.get_per_replica_batch_size(64)])
    return tf.data.Dataset.range(64).batch(ctx.get_per_replica_batch_size(64))


distribute_fn = getattr(strategy, "distribute_datasets_from_function", None) or \
    strategy.experimental_distribute_datasets_from_function
first = next(iter(distribute_fn(dataset_fn)))
obs["input_contexts"] = contexts
obs["dataset_fn_first"] = values(first, strategy)
obs["split_batch"] = values(next(iter(strategy.experimental_distribute_dataset(
    tf.data.Dataset.range(16).batch(16)))), strategy)

# --- device assignment --------------------------------------------------------
rank = len(topology.mesh_shape)
two_cores = [1, 1, 2] if rank == 3 else [1, 1, 1, 2]
wrong_rank = [1, 1, 1, 2] if rank == 3 else [1, 1, 2]
DA = tf.tpu.experimental.DeviceAssignment
probe("build_wrong_rank", lambda: DA.build(topology, computation_shape=wrong_rank))
probe("build_too_many", lambda: DA.build(topology, computation_shape=two_cores, num_replicas=5))
probe("build_default", lambda: [DA.build(topology).num_replicas, DA.build(topology).num_cores_per_replica])
assignment = DA.build(topology, computation_shape=two_cores, num_replicas=4)
obs["assignment"] = [assignment.num_replicas, assignment.num_cores_per_replica,
                     [assignment.tpu_ordinal(r, c) for r in range(4) for c in range(2)]]
probe("experimental_kw_experimental_device_assignment",
      lambda: type(tf.distribute.experimental.TPUStrategy(
          resolver, experimental_device_assignment=assignment)).__name__)
with_assignment = tf.distribute.experimental.TPUStrategy(resolver, device_assignment=assignment)
obs["experimental_with_assignment"] = [with_assignment.num_replicas_in_sync,
                                       list(with_assignment.extended.worker_devices)]

stable_cls = getattr(tf.distribute, "TPUStrategy", None)
obs["has_stable_class"] = stable_cls is not None
if stable_cls is not None:
    probe("stable_kw_device_assignment",
          lambda: type(stable_cls(resolver, device_assignment=assignment)).__name__)
    stable = stable_cls(resolver, experimental_device_assignment=assignment)
    obs["stable_class_name"] = type(stable).__name__
    obs["isinstance"] = {
        "stable_is_experimental": isinstance(stable, tf.distribute.experimental.TPUStrategy),
        "experimental_is_stable": isinstance(strategy, stable_cls),
        "stable_is_stable": isinstance(stable, stable_cls),
    }
    obs["stable_has"] = {name: hasattr(stable, name) for name in (
        "run", "experimental_run_v2", "experimental_assign_to_logical_device",
        "experimental_split_to_logical_devices", "experimental_replicate_to_logical_devices")}
    if obs["stable_has"]["experimental_assign_to_logical_device"]:
        x4 = tf.reshape(tf.range(16.0), [2, 4, 2])
        probe("assign_ok", lambda: stable.experimental_assign_to_logical_device(x4, 1).numpy().sum().item())
        probe("assign_negative", lambda: stable.experimental_assign_to_logical_device(x4, -1))
        probe("assign_too_big", lambda: stable.experimental_assign_to_logical_device(x4, 2))
        probe("split_ok", lambda: stable.experimental_split_to_logical_devices(x4, [1, 2, 1]).numpy().sum().item())
        probe("split_wrong_rank", lambda: stable.experimental_split_to_logical_devices(x4, [2, 1]))
        probe("split_not_divisible", lambda: stable.experimental_split_to_logical_devices(
            tf.zeros([2, 3, 2]), [1, 2, 1]))
        probe("split_wrong_product", lambda: stable.experimental_split_to_logical_devices(x4, [2, 2, 1]))
        probe("replicate_ok", lambda: stable.experimental_replicate_to_logical_devices(x4).numpy().sum().item())

        @tf.function
        def annotated(batch):
            def fn(x):
                x = stable.experimental_split_to_logical_devices(x, [1, 2])
                return stable.experimental_assign_to_logical_device(tf.reduce_sum(x), 0)
            return stable.run(fn, args=(batch,))

        probe("helpers_in_replica_fn", lambda: values(annotated(next(iter(
            stable.experimental_distribute_dataset(
                tf.data.Dataset.from_tensor_slices(np.ones([8, 4], np.float32)).batch(8))))), stable))
    probe("stable_eager_plain", lambda: values(stable.run(plain), stable))

probe("sgd_lr", lambda: round(float(tf.keras.optimizers.SGD(lr=0.25).get_config()["learning_rate"]), 6))
probe("shutdown", lambda: tf.tpu.experimental.shutdown_tpu_system(resolver))
print("RESULT " + json.dumps(obs, sort_keys=True))
sys.stdout.flush()
