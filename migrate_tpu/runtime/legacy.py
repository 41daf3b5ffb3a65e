"""The TF 2.1, 2.2 and 2.3 API surfaces on a newer TensorFlow (``--tf-api 2.1|2.2|2.3``).

Code written for TF 2.1 uses names that later releases renamed or removed.
:func:`install` puts them back on TF >= 2.2, so a program can be executed
*before* migration on the same interpreter that runs it after (``install(release="2.1")``):

* ``Strategy.experimental_run_v2(fn, args=(), kwargs=None)`` -- forwards to
  ``run``; on a TPU strategy (real or emulated) an eager plain function is
  refused with TF 2.1's message;
* ``Strategy.experimental_make_numpy_dataset(numpy_input)`` -- the dataset
  that TF 2.1 built from a NumPy array (through the strategy's extended
  object, which still has it, else ``Dataset.from_tensor_slices``);
* ``Strategy.experimental_distribute_datasets_from_function`` where a
  release no longer has it;
* ``TPUClusterResolver(tpu='')`` -- in TF 2.1 this meant the TPU attached to
  this host; from 2.2 on it means "look in the environment", so ``''`` is
  turned into ``'local'`` on a real TPU (the emulated resolver applies the
  2.1 meaning itself);
* ``DeviceAssignment.build`` with 3-element ``computation_shape`` /
  ``computation_stride`` on a real 4-D topology gets ``z = 1`` inserted
  (under emulation the topology itself is 3-D);
* what :mod:`migrate_tpu.runtime.releases` shows of the release, as it does for
  the 2.4 surface: TF 2.1.0's version (to the user's code), its Keras optimizers
  (``optimizers.legacy`` where Keras >= 2.11 replaced them: the new ones silently
  ignore ``lr=`` and refuse ``decay=``) and ``tf.keras.mixed_precision.experimental``
  with TF 2.1's ``LossScaleOptimizer(optimizer, loss_scale)`` where the release
  dropped it (TF >= 2.9).

For the 2.2 and 2.3 surfaces (``install(release="2.2")``), what those releases still had
and TF 2.4 removed: ``experimental_run_v2`` as ``run``'s deprecated alias (a TPU refuses
an eager plain function with ``run``'s words), ``experimental_make_numpy_dataset``, and
``experimental_assign_to_logical_device``, ``experimental_split_to_logical_devices``,
``experimental_replicate_to_logical_devices`` on every strategy (a TPU strategy's check
their arguments, the others raise ``NotImplementedError``); under 2.2 also the 3-element
``computation_shape`` of TF 2.2's 3-D topology on a real TPU.

:func:`restrict_to` then hides from the user's code what the release did not have yet
(``SURFACES``: the public names of ``tf.distribute``, ``tf.distribute.experimental``, the
strategies and ``ReplicaContext``, read on the real TF 2.1.0, 2.2.3 and 2.3.4).

The experimental ``TPUStrategy`` constructor and its ``device_assignment``
keyword exist in every release and need nothing.  On TF 2.0/2.1 itself this
module does nothing.
"""

from __future__ import absolute_import, division, print_function

import types
from typing import Any, Dict, FrozenSet, List, Tuple

import tensorflow as tf

from migrate_tpu.runtime import emulation, releases, strategies, tpu_system

_originals: List[Tuple[Any, str, Any]] = []  # (owner, name, its value before or _MISSING): what uninstall puts back
_MISSING = object()
_INSTALLED: List[str] = []  # the release whose names install() added, once it ran


def _set(owner, name, value):
    _originals.append((owner, name, owner.__dict__.get(name, _MISSING)
                       if isinstance(owner, type) else getattr(owner, name, _MISSING)))
    setattr(owner, name, value)


def _is_tpu_strategy(strategy):
    if isinstance(strategy, strategies._EmulatedTPU):
        return True
    return type(strategy).__name__.startswith("TPUStrategy")


def experimental_run_v2(self, fn, args=(), kwargs=None):
    """TF 2.1's ``Strategy.experimental_run_v2``: ``run`` under its old name."""
    if _is_tpu_strategy(self):
        strategies.reject_eager_plain_function(fn, tpu_system.EAGER_RUN_MESSAGE_2_1)
    return self.run(fn, args=args, kwargs=kwargs)


def _stable_tpu_strategy_method(name):
    """``tf.distribute.TPUStrategy``'s method ``name`` (TF >= 2.4 has the logical-device
    helpers there alone), or None."""
    return getattr(getattr(tf.distribute, "TPUStrategy", None), name, None)


def experimental_assign_to_logical_device(self, tensor, logical_device_id):
    """TF 2.2's ``Strategy.experimental_assign_to_logical_device``: a TPU strategy's checks
    its argument (``tf.distribute.TPUStrategy``'s method), any other raises."""
    method = _stable_tpu_strategy_method("experimental_assign_to_logical_device")
    if method is None or not _is_tpu_strategy(self):
        raise NotImplementedError(tpu_system.NO_MODEL_PARALLELISM_MESSAGE)
    return method(self, tensor, logical_device_id)


def experimental_split_to_logical_devices(self, tensor, partition_dimensions):
    """TF 2.2's ``Strategy.experimental_split_to_logical_devices`` (see above)."""
    method = _stable_tpu_strategy_method("experimental_split_to_logical_devices")
    if method is None or not _is_tpu_strategy(self):
        raise NotImplementedError(tpu_system.NO_MODEL_PARALLELISM_MESSAGE)
    return method(self, tensor, partition_dimensions)


def experimental_replicate_to_logical_devices(self, tensor):
    """TF 2.2's ``Strategy.experimental_replicate_to_logical_devices`` (see above)."""
    method = _stable_tpu_strategy_method("experimental_replicate_to_logical_devices")
    if method is None or not _is_tpu_strategy(self):
        raise NotImplementedError(tpu_system.NO_MODEL_PARALLELISM_MESSAGE)
    return method(self, tensor)


def experimental_make_numpy_dataset(self, numpy_input):
    """TF 2.1's ``Strategy.experimental_make_numpy_dataset``."""
    make = getattr(self.extended, "experimental_make_numpy_dataset", None)
    if make is not None:
        try:
            return make(numpy_input)
        except (NotImplementedError, AttributeError, TypeError):
            pass
    return tf.data.Dataset.from_tensor_slices(numpy_input)


def experimental_distribute_datasets_from_function(self, dataset_fn, options=None):
    """TF 2.1's name for ``distribute_datasets_from_function``."""
    if options is None:
        return self.distribute_datasets_from_function(dataset_fn)
    return self.distribute_datasets_from_function(dataset_fn, options)


def _resolver_with_local_empty_name(real: Any):  # Any: mypy takes no plain variable as a base class
    class TPUClusterResolver(real):
        __doc__ = real.__doc__

        def __init__(self, tpu=None, *args, **kwargs):
            if tpu == "" or tpu == b"":
                tpu = "local"
            real.__init__(self, tpu, *args, **kwargs)

    TPUClusterResolver.__module__ = real.__module__
    return TPUClusterResolver


def _build_with_rank3_shapes(real_build):
    def build(topology, computation_shape=None, computation_stride=None, num_replicas=1, **kwargs):
        rank = len(getattr(topology, "mesh_shape", ()))

        def widen(shape):
            if shape is not None and rank == 4 and len(shape) == 3:
                shape = list(shape)
                return shape[:2] + [1] + shape[2:]
            return shape

        return real_build(topology, widen(computation_shape), widen(computation_stride),
                          num_replicas, **kwargs)

    return staticmethod(build)


#: The surfaces this module provides, oldest first.
RELEASES = ("2.1", "2.2", "2.3")


def install(emulated=True, release="2.1"):
    """Add the names of TF ``release`` (2.1, 2.2 or 2.3) that this TensorFlow lacks.
    Idempotent (the first call decides the release)."""
    if release not in RELEASES:
        raise ValueError("release must be one of {}; got {!r}".format(", ".join(RELEASES), release))
    if _INSTALLED or tpu_system.tf_version() < (2, 2):
        return
    _INSTALLED.append(release)
    strategy = tf.distribute.Strategy
    if not hasattr(strategy, "experimental_run_v2"):
        _set(strategy, "experimental_run_v2",
             experimental_run_v2 if release == "2.1" else strategies._strategy_experimental_run_v2_of_2_2)
    if not hasattr(strategy, "experimental_make_numpy_dataset"):
        _set(strategy, "experimental_make_numpy_dataset", experimental_make_numpy_dataset)
    if not hasattr(strategy, "experimental_distribute_datasets_from_function"):
        _set(strategy, "experimental_distribute_datasets_from_function",
             experimental_distribute_datasets_from_function)
    if release != "2.1":
        for name, helper in (("experimental_assign_to_logical_device", experimental_assign_to_logical_device),
                             ("experimental_split_to_logical_devices", experimental_split_to_logical_devices),
                             ("experimental_replicate_to_logical_devices",
                              experimental_replicate_to_logical_devices)):
            if not hasattr(strategy, name):
                _set(strategy, name, helper)
    if not emulated:
        if release == "2.1":
            resolvers = tf.distribute.cluster_resolver
            real = resolvers.TPUClusterResolver
            wrapped = _resolver_with_local_empty_name(real)
            for mod in emulation._modules("distribute.cluster_resolver"):
                if getattr(mod, "TPUClusterResolver", None) is real:
                    _set(mod, "TPUClusterResolver", wrapped)
        assignment = getattr(tf.tpu.experimental, "DeviceAssignment", None)
        if assignment is not None and release in ("2.1", "2.2"):  # TF 2.1 and 2.2: 3-D topologies
            _set(assignment, "build", _build_with_rank3_shapes(assignment.build))
    releases.install(release)


# What TF 2.1.0 had: ``dir()`` of these objects in TensorFlow 2.1.0 (public names),
# read on the real interpreter (tests/runtime/test_surface.py compares again).
SURFACE_2_1 = {
    "distribute": (
        "CrossDeviceOps", "HierarchicalCopyAllReduce", "InputContext", "InputReplicationMode",
        "MirroredStrategy", "NcclAllReduce", "OneDeviceStrategy", "ReduceOp",
        "ReductionToOneDevice", "ReplicaContext", "Server", "Strategy", "StrategyExtended",
        "cluster_resolver", "experimental", "experimental_set_strategy", "get_replica_context",
        "get_strategy", "has_strategy", "in_cross_replica_context"),
    "distribute.experimental": (
        "CentralStorageStrategy", "CollectiveCommunication", "MultiWorkerMirroredStrategy",
        "ParameterServerStrategy", "TPUStrategy"),
    # tf.distribute.Strategy, MirroredStrategy and experimental.TPUStrategy alike
    "Strategy": (
        "colocate_vars_with", "configure", "experimental_distribute_dataset",
        "experimental_distribute_datasets_from_function", "experimental_local_results",
        "experimental_make_numpy_dataset", "experimental_run", "experimental_run_v2", "extended",
        "group", "make_dataset_iterator", "make_input_fn_iterator", "num_replicas_in_sync",
        "reduce", "scope", "unwrap", "update_config_proto"),
    # what tf.compat.v1.distribute.experimental.TPUStrategy had beyond "Strategy"
    "TPUStrategyV1": ("steps_per_run",),
    # tf.distribute.get_replica_context() in a replica (all_gather came with TF 2.4)
    "ReplicaContext": (
        "all_reduce", "devices", "merge_call", "num_replicas_in_sync", "replica_id_in_sync_group",
        "strategy"),
}

# What TF 2.2.3 had, as SURFACE_2_1 (read on the real interpreter; tests/runtime/test_surface.py
# compares again); compat.v1's TPUStrategy lacks some of "Strategy"'s names: all of its own here.
SURFACE_2_2 = {
    "distribute": (
        "CrossDeviceOps", "DistributedValues", "HierarchicalCopyAllReduce", "InputContext",
        "InputReplicationMode", "MirroredStrategy", "NcclAllReduce", "OneDeviceStrategy", "ReduceOp",
        "ReductionToOneDevice", "ReplicaContext", "RunOptions", "Server", "Strategy", "StrategyExtended",
        "cluster_resolver", "experimental", "experimental_set_strategy", "get_replica_context",
        "get_strategy", "has_strategy", "in_cross_replica_context"),
    "distribute.experimental": (
        "CentralStorageStrategy", "CollectiveCommunication", "CollectiveHints", "MultiWorkerMirroredStrategy",
        "ParameterServerStrategy", "TPUStrategy", "ValueContext"),
    # tf.distribute.Strategy, MirroredStrategy and experimental.TPUStrategy alike
    "Strategy": (
        "colocate_vars_with", "configure", "experimental_assign_to_logical_device",
        "experimental_distribute_dataset", "experimental_distribute_datasets_from_function",
        "experimental_distribute_values_from_function", "experimental_local_results",
        "experimental_make_numpy_dataset", "experimental_replicate_to_logical_devices", "experimental_run",
        "experimental_run_v2", "experimental_split_to_logical_devices", "extended", "group",
        "make_dataset_iterator", "make_input_fn_iterator", "num_replicas_in_sync", "reduce", "run", "scope",
        "unwrap", "update_config_proto"),
    "compat.v1 TPUStrategy": (
        "colocate_vars_with", "configure", "experimental_distribute_dataset",
        "experimental_distribute_datasets_from_function", "experimental_local_results",
        "experimental_make_numpy_dataset", "experimental_run", "experimental_run_v2", "extended", "group",
        "make_dataset_iterator", "make_input_fn_iterator", "num_replicas_in_sync", "reduce", "run", "scope",
        "steps_per_run", "unwrap", "update_config_proto"),
    "ReplicaContext": (
        "all_reduce", "devices", "merge_call", "num_replicas_in_sync", "replica_id_in_sync_group",
        "strategy"),
}

# What TF 2.3.4 had, as SURFACE_2_2 ("Strategy" is also tf.distribute.TPUStrategy's, new in 2.3).
SURFACE_2_3 = {
    "distribute": (
        "CrossDeviceOps", "DistributedDataset", "DistributedIterator", "DistributedValues",
        "HierarchicalCopyAllReduce", "InputContext", "InputOptions", "InputReplicationMode",
        "MirroredStrategy", "NcclAllReduce", "OneDeviceStrategy", "ReduceOp", "ReductionToOneDevice",
        "ReplicaContext", "RunOptions", "Server", "Strategy", "StrategyExtended", "TPUStrategy",
        "cluster_resolver", "experimental", "experimental_set_strategy", "get_replica_context",
        "get_strategy", "has_strategy", "in_cross_replica_context"),
    "distribute.experimental": (
        "CentralStorageStrategy", "CollectiveCommunication", "CollectiveHints", "MultiWorkerMirroredStrategy",
        "ParameterServerStrategy", "TPUStrategy", "ValueContext"),
    "Strategy": (
        "cluster_resolver", "colocate_vars_with", "configure", "experimental_assign_to_logical_device",
        "experimental_distribute_dataset", "experimental_distribute_datasets_from_function",
        "experimental_distribute_values_from_function", "experimental_local_results",
        "experimental_make_numpy_dataset", "experimental_replicate_to_logical_devices", "experimental_run",
        "experimental_run_v2", "experimental_split_to_logical_devices", "extended", "group",
        "make_dataset_iterator", "make_input_fn_iterator", "num_replicas_in_sync", "reduce", "run", "scope",
        "unwrap", "update_config_proto"),
    "compat.v1 TPUStrategy": (
        "cluster_resolver", "colocate_vars_with", "configure", "experimental_distribute_dataset",
        "experimental_distribute_datasets_from_function", "experimental_local_results",
        "experimental_make_numpy_dataset", "experimental_run", "experimental_run_v2", "extended", "group",
        "make_dataset_iterator", "make_input_fn_iterator", "num_replicas_in_sync", "reduce", "run", "scope",
        "steps_per_run", "unwrap", "update_config_proto"),
    "ReplicaContext": (
        "all_reduce", "devices", "merge_call", "num_replicas_in_sync", "replica_id_in_sync_group",
        "strategy"),
}

#: release -> the public names user code sees under its surface
SURFACES = {"2.1": SURFACE_2_1, "2.2": SURFACE_2_2, "2.3": SURFACE_2_3}


def _compat_v1_tpu_strategy_names(surface):
    """All the names of the release's ``compat.v1`` TPUStrategy (SURFACE_2_1 lists those
    beyond "Strategy"'s)."""
    if "compat.v1 TPUStrategy" in surface:
        return frozenset(surface["compat.v1 TPUStrategy"])
    return frozenset(surface["Strategy"]) | frozenset(surface["TPUStrategyV1"])


# Whether a frame runs the user's code, who alone sees the release's surface (TensorFlow's,
# Keras's and other installed packages' code see what this TensorFlow has).
_is_user_code = releases.is_user_code


class _SurfaceModule(types.ModuleType):
    """A ``tf.distribute`` module whose names from after the release user code cannot see
    (TensorFlow and Keras use them: they stay in the module)."""

    def __getattribute__(self, name):
        if name[:1] != "_" and name in _HIDDEN_MODULE_NAMES.get(id(self), ()):
            import sys
            if _is_user_code(sys._getframe(1)):
                raise AttributeError("module '{}' has no attribute '{}'".format(
                    types.ModuleType.__getattribute__(self, "__name__"), name))
        return types.ModuleType.__getattribute__(self, name)

    def __dir__(self):
        import sys
        names = types.ModuleType.__dir__(self)
        if _is_user_code(sys._getframe(1)):
            hidden = _HIDDEN_MODULE_NAMES.get(id(self), ())
            names = [n for n in names if n not in hidden]
        return names


_HIDDEN_MODULE_NAMES: Dict[int, FrozenSet[str]] = {}  # id(module) -> names user code cannot see


def _strategy_attributes_of(base, known, shown_name=None):
    """A ``__getattribute__`` for ``base`` that hides, from user code only, the public
    strategy attributes that the release did not have (TF 2.1.0: ``run``, ``gather``, ...).
    ``known(klass)``: the names the release's counterpart of ``klass`` had."""
    import sys
    original = base.__getattribute__
    hidden_by_class: Dict[type, FrozenSet[str]] = {}

    def hidden(klass):
        names = hidden_by_class.get(klass)
        if names is None:
            kept = known(klass)
            names = frozenset(n for n in dir(klass) if not n.startswith("_") and n not in kept)
            hidden_by_class[klass] = names
        return names

    def __getattribute__(self, name):
        if name[:1] != "_" and name in hidden(type(self)):
            if _is_user_code(sys._getframe(1)):
                klass = type(self)
                shown = getattr(klass, "_tf_class_name", klass.__name__)
                if shown_name is not None:
                    shown = shown_name(self, original) or shown
                raise AttributeError("'{}' object has no attribute '{}'".format(shown, name))
        return original(self, name)

    return __getattribute__


def restrict_to(release):
    """Make the names TF ``release`` (2.1, 2.2 or 2.3) lacked absent for user code
    (``AttributeError``): under 2.1 ``tf.distribute.TPUStrategy``, ``strategy.run``,
    ``gather``, a replica context's ``all_gather``, ...; under 2.2 ``tf.distribute.TPUStrategy``,
    ``strategy.cluster_resolver``, ``gather``, ...  Runs on that release itself too, where it
    hides only what the emulation adds.  Idempotent (the first call decides the release)."""
    if release not in SURFACES:
        raise ValueError("release must be one of {}; got {!r}".format(", ".join(sorted(SURFACES)), release))
    if any(name == "__getattribute__" for _, name, _ in _originals):
        return
    surface = SURFACES[release]
    for path in ("distribute", "distribute.experimental"):
        keep = set(surface[path])
        for module in emulation._modules(path, v1=False):
            if type(module) is not types.ModuleType:
                continue  # a lazy loader or wrapper: left as it is
            _HIDDEN_MODULE_NAMES[id(module)] = frozenset(
                n for n in types.ModuleType.__dir__(module) if not n.startswith("_") and n not in keep)
            _originals.append((module, "__class__", types.ModuleType))
            module.__class__ = _SurfaceModule
    # compat.v1 strategies (TPUStrategy with steps_per_run) derive from tf.distribute.Strategy
    # on TF 2.1 but not on later releases, where their base needs the same hiding.
    v1_base = tf.compat.v1.distribute.Strategy
    strategy_names = frozenset(surface["Strategy"])
    v1_names = _compat_v1_tpu_strategy_names(surface)

    def known(klass):
        return v1_names if issubclass(klass, v1_base) else strategy_names

    for base in (tf.distribute.Strategy, v1_base):
        if base is v1_base and issubclass(v1_base, tf.distribute.Strategy):
            continue  # TF 2.1 itself: the v2 base's hiding covers it
        _set(base, "__getattribute__", _strategy_attributes_of(base, known))
    replica_names = frozenset(surface["ReplicaContext"])
    replica_base = tf.distribute.ReplicaContext
    def replica_context_name(context, getattribute):
        # a TPU strategy's replicas have TensorFlow's TPU replica context
        strategy = getattribute(context, "_strategy")
        return "_TPUReplicaContext" if isinstance(strategy, strategies._EmulatedTPU) else None

    _set(replica_base, "__getattribute__",
         _strategy_attributes_of(replica_base, lambda klass: replica_names, replica_context_name))


def restrict_to_2_1():
    """:func:`restrict_to` TF 2.1.0's names."""
    restrict_to("2.1")


def uninstall():
    """Remove what :func:`install` and :func:`restrict_to` added."""
    releases.uninstall()
    del _INSTALLED[:]
    while _originals:
        owner, name, value = _originals.pop()
        if value is _MISSING:
            try:
                delattr(owner, name)
            except AttributeError:
                pass
        else:
            setattr(owner, name, value)
