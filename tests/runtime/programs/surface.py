"""Public names and release-dependent behaviour of a TF API surface as user code sees them;
prints ``RESULT {json}``.  Runs under ``python -m migrate_tpu.runtime --tf-api 2.1|2.2|2.3`` or,
bare, in a real TF 2.1.0, 2.2.3 or 2.3.4 interpreter (the truth: without a TPU, the classes'
names, ``hasattr`` on the classes themselves (``classes``), and what the release does where no
TPU is needed).  Under the 2.2 and 2.3 surfaces it also trains ``custom_loop_2_2.py``
(``losses``).  Python 3.7 syntax."""
import itertools
import json
import logging
import os
import sys

import numpy as np
import tensorflow as tf


def public(obj):
    return sorted(n for n in dir(obj) if not n.startswith("_"))


def outcome(fn):
    """``fn()``'s value, or ``{"error": type, "message": ...}``."""
    try:
        return fn()
    except Exception as error:  # noqa: BLE001 - the error is the observation
        return {"error": type(error).__name__, "message": str(error).strip().splitlines()[-1].strip()}


emulated = "migrate_tpu.runtime.surfaces.emulation" in sys.modules
if emulated:
    from migrate_tpu.runtime.surfaces import emulation
    api = emulation.STATE.tf_api
else:
    api = "{}.{}".format(*tf.__version__.split(".")[:2])
release = tuple(int(part) for part in api.split("."))
facts = {}


class Warnings(logging.Handler):
    """The warnings TensorFlow logs."""

    def __init__(self):
        logging.Handler.__init__(self, logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


warnings = Warnings()
tf.get_logger().addHandler(warnings)
logging.getLogger("absl").addHandler(warnings)  # TensorFlow's tpu_strategy logs through absl

if emulated:
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
    tf.config.experimental_connect_to_cluster(resolver)
    topology = tf.tpu.experimental.initialize_tpu_system(resolver)
    del warnings.messages[:]
    strategy = tf.distribute.experimental.TPUStrategy(resolver)
    deprecation_logged = any("is deprecated" in m for m in warnings.messages)
    strategy_names = sorted(n for n in public(type(strategy)) if hasattr(strategy, n))
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0"])
    mirrored_names = sorted(n for n in public(type(mirrored)) if hasattr(mirrored, n))
    strategy_v1 = tf.compat.v1.distribute.experimental.TPUStrategy(resolver, steps_per_run=2)
    strategy_v1_names = sorted(n for n in public(type(strategy_v1)) if hasattr(strategy_v1, n))
    stable_names = None
    if hasattr(tf.distribute, "TPUStrategy"):
        stable = tf.distribute.TPUStrategy(resolver)
        stable_names = sorted(n for n in public(type(stable)) if hasattr(stable, n))
    # a name the release did not have yet: absent for this code, also in a tf.function
    hidden = "run" if api == "2.1" else "gather"
    hidden_error = outcome(lambda: getattr(strategy, hidden) and None)

    @tf.function
    def step():  # AutoGraph converts this: its code runs from a generated file
        if hidden == "run":
            return strategy.run(lambda: tf.constant(1.0))
        return strategy.gather(tf.constant([1.0]), axis=0)

    graph_hidden_error = outcome(step)
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
    # TensorFlow's own code may call what it has (reduce with axis calls run; TF 2.1's and
    # 2.2's with a plain function, which a TPU refuses eagerly)
    axis_sum = outcome(lambda: float(strategy.reduce("SUM", strategy.experimental_run_v2(
        tf.function(lambda: tf.ones([2]))), axis=0)))
    # behaviours that differ between releases
    rank = len(topology.mesh_shape)
    if hasattr(strategy, "run"):
        facts["eager run refusal"] = outcome(lambda: strategy.run(lambda: tf.constant(1.0)))
    else:
        facts["eager run refusal"] = None
else:  # a real TF release without a TPU: the classes' names
    strategy_names = public(tf.distribute.experimental.TPUStrategy)
    mirrored_names = public(tf.distribute.MirroredStrategy)
    strategy_v1_names = public(tf.compat.v1.distribute.experimental.TPUStrategy)
    stable_names = public(tf.distribute.TPUStrategy) if hasattr(tf.distribute, "TPUStrategy") else None
    replica_names = public(tf.distribute.ReplicaContext)
    hidden = hidden_error = graph_hidden_error = axis_sum = None
    from tensorflow.python.distribute import tpu_strategy
    from tensorflow.python.tpu import topology as topology_lib
    topology = None
    for mesh in ([2, 2, 2], [2, 2, 1, 2]):  # the Topology class of the release takes one rank
        points = [list(p) for p in itertools.product(*[range(n) for n in mesh])]
        try:
            topology = topology_lib.Topology(mesh_shape=mesh, device_coordinates=np.array([points], np.int32))
        except ValueError:
            continue
    rank = len(topology.mesh_shape)
    validate = getattr(tpu_strategy, "validate_run_function", None)  # TF >= 2.2: TPUStrategy.run's check
    facts["eager run refusal"] = outcome(lambda: validate(lambda: tf.constant(1.0))) if validate else None
    deprecation_logged = None
    if release >= (2, 2):  # TPUStrategy() without a TPU: what it logs before its resolver fails
        for name in ("TPU_NAME", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS"):
            os.environ.pop(name, None)
        del warnings.messages[:]
        outcome(tf.distribute.experimental.TPUStrategy)
        deprecation_logged = any("is deprecated" in m for m in warnings.messages)
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0"])

# what the classes have (hasattr on the class: a 2020 shim asks the class), the same way on the
# release and under a surface; PROBES are the names any release from 2.1 to 2.4 had
PROBES = (
    "all_gather", "all_reduce", "cluster_resolver", "colocate_vars_with", "configure", "devices",
    "distribute_datasets_from_function", "experimental_assign_to_logical_device", "experimental_distribute_dataset",
    "experimental_distribute_datasets_from_function", "experimental_distribute_values_from_function",
    "experimental_local_results", "experimental_make_numpy_dataset", "experimental_replicate_to_logical_devices",
    "experimental_run", "experimental_run_v2", "experimental_split_to_logical_devices", "extended", "gather", "group",
    "make_dataset_iterator", "make_input_fn_iterator", "merge_call", "num_replicas_in_sync", "reduce",
    "replica_id_in_sync_group", "run", "scope", "steps_per_run", "strategy", "unwrap", "update_config_proto")
CLASSES = (
    ("tf.distribute.Strategy", lambda: tf.distribute.Strategy),
    ("tf.distribute.MirroredStrategy", lambda: tf.distribute.MirroredStrategy),
    ("tf.distribute.OneDeviceStrategy", lambda: tf.distribute.OneDeviceStrategy),
    ("tf.distribute.experimental.TPUStrategy", lambda: tf.distribute.experimental.TPUStrategy),
    ("tf.distribute.TPUStrategy", lambda: getattr(tf.distribute, "TPUStrategy", None)),
    ("tf.compat.v1.distribute.Strategy", lambda: tf.compat.v1.distribute.Strategy),
    ("tf.compat.v1.distribute.MirroredStrategy", lambda: tf.compat.v1.distribute.MirroredStrategy),
    ("tf.compat.v1.distribute.experimental.TPUStrategy", lambda: tf.compat.v1.distribute.experimental.TPUStrategy),
    ("tf.distribute.ReplicaContext", lambda: tf.distribute.ReplicaContext))


def class_names(klass):
    if klass is None:
        return None
    return sorted(n for n in set(PROBES) | set(public(klass)) if hasattr(klass, n))


classes = {key: class_names(get()) for key, get in CLASSES}
facts["versions"] = [tf.__version__, tf.version.VERSION, tf.version.GIT_VERSION, tf.keras.__version__]
facts["topology rank"] = rank
facts["DeviceAssignment.build(num_replicas=8)"] = list(
    tf.tpu.experimental.DeviceAssignment.build(topology, num_replicas=8).core_assignment.shape)
facts["computation_shape of the other rank"] = outcome(
    lambda: tf.tpu.experimental.DeviceAssignment.build(topology, computation_shape=[1] * (7 - rank)))
facts["experimental TPUStrategy logs its deprecation"] = deprecation_logged if release >= (2, 2) else None


class Recorder(object):
    def run(self, fn, args=(), kwargs=None, options=None):
        return "run"


if release >= (2, 2):  # TF 2.2 and 2.3: experimental_run_v2 is run's deprecated alias
    facts["experimental_run_v2 calls run"] = outcome(
        lambda: tf.distribute.MirroredStrategy.experimental_run_v2(Recorder(), tf.function(lambda: 1)))
facts["MirroredStrategy.experimental_assign_to_logical_device"] = outcome(
    lambda: mirrored.experimental_assign_to_logical_device(tf.constant(1.0), 0) and None)
facts["experimental_make_numpy_dataset"] = outcome(
    lambda: [float(x) for x in mirrored.experimental_make_numpy_dataset(np.arange(3.0)).as_numpy_iterator()])

# TPUClusterResolver(tpu=''): the TPU attached to this host in TF 2.1, looked up from TF 2.2 on
saved = {n: os.environ.pop(n, None) for n in ("TPU_NAME", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", "COLAB_TPU_ADDR")}
resolver_class = tf.distribute.cluster_resolver.TPUClusterResolver
facts["TPUClusterResolver(tpu='').master(), no TPU_NAME"] = outcome(lambda: resolver_class(tpu="").master())
os.environ["TPU_NAME"] = "grpc://localhost:8470"
facts["TPUClusterResolver(tpu='').master(), TPU_NAME set"] = outcome(lambda: resolver_class(tpu="").master())
facts["TPUClusterResolver().master(), TPU_NAME set"] = outcome(lambda: resolver_class().master())
del os.environ["TPU_NAME"]
os.environ.update({n: v for n, v in saved.items() if v is not None})

# the experimental mixed-precision API of the release
mixed = tf.keras.mixed_precision.experimental
facts["mixed_precision.experimental"] = public(mixed)
facts["experimental LossScaleOptimizer"] = mixed.LossScaleOptimizer.__name__
facts["LossScaleOptimizer(opt, 'bogus')"] = outcome(
    lambda: mixed.LossScaleOptimizer(tf.keras.optimizers.SGD(), "bogus") and None)

losses = None
if emulated and release >= (2, 2):
    import custom_loop_2_2
    losses = [loss.hex() for loss in custom_loop_2_2.train()]

print("RESULT " + json.dumps({
    "tf.distribute": public(tf.distribute),
    "tf.distribute.experimental": public(tf.distribute.experimental),
    "TPUStrategy": strategy_names,
    "MirroredStrategy": mirrored_names,
    "compat.v1 TPUStrategy": strategy_v1_names,
    "TPUStrategyV2": stable_names,
    "ReplicaContext": replica_names,
    "classes": classes,
    "facts": facts,
    "losses": losses,
    "_hidden": hidden,
    "_hidden_error": hidden_error,
    "_graph_hidden_error": graph_hidden_error,
    "_axis_sum": axis_sum,
}))
