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
* what :mod:`migrate_tpu.runtime.surfaces.releases` shows of the release, as it does for
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
strategies and ``ReplicaContext``, read on the real TF 2.1.0, 2.2.3 and 2.3.4), on the classes
as on their instances: each such class attribute becomes a :class:`_Hidden` descriptor, absent
for user code (which then finds what the program itself put on a class, as Python would) and
the original for TensorFlow's.

The experimental ``TPUStrategy`` constructor and its ``device_assignment``
keyword exist in every release and need nothing.  On TF 2.0/2.1 itself this
module does nothing.
"""

from __future__ import absolute_import, division, print_function

import sys
import threading
import types
from typing import Any, Dict, FrozenSet, List, Set

import tensorflow as tf

from migrate_tpu.runtime import patches
from migrate_tpu.runtime.tpu import strategies, tpu_extended, tpu_system
from migrate_tpu.runtime.surfaces import releases

_MISSING = patches.MISSING
_INSTALLED: List[str] = []  # the release whose names install() added, once it ran


def _set(owner, name, value):
    patches.patch("legacy", owner, name, value)


def _is_tpu_strategy(strategy):
    if isinstance(strategy, strategies._EmulatedTPU):
        return True
    return type(strategy).__name__.startswith("TPUStrategy")


def experimental_run_v2(self, fn, args=(), kwargs=None, *more, **options):
    """TF 2.1's ``Strategy.experimental_run_v2``: ``run`` under its old name (the strategy's
    own ``run``, also where the program made this ``Strategy.run``)."""
    if (more or options) and _is_user_code(sys._getframe(1)):
        # TF 2.1.0 took no options; TensorFlow's own overrides of run pass them to super().run,
        # which finds this where the program made it Strategy.run
        if more:
            raise TypeError("experimental_run_v2() takes from 2 to 4 positional arguments but {} were "
                            "given".format(4 + len(more)))
        raise TypeError("experimental_run_v2() got an unexpected keyword argument '{}'".format(sorted(options)[0]))
    if isinstance(self, strategies._EmulatedTPU):
        # the emulated class has its own experimental_run_v2: this is tf.distribute.Strategy's
        # called on it (the shim above), which TF 2.1.0 runs through the strategy's extended
        # object, not the TPU's override
        return strategies._mirrored_run(self, fn, args, kwargs, None)
    if _is_tpu_strategy(self):
        tpu_extended.refuse_eager_plain_function(fn, tpu_system.EAGER_RUN_MESSAGE_2_1)
    return _call_own(self, "run", fn, *((args, kwargs) + more), **options)


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
        return _call_own(self, "distribute_datasets_from_function", dataset_fn)
    return _call_own(self, "distribute_datasets_from_function", dataset_fn, options)


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
    for base in (strategy, tf.compat.v1.distribute.Strategy):  # TF >= 2.2: the v1 classes' is apart
        if not hasattr(base, "experimental_run_v2"):
            _set(base, "experimental_run_v2",
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
            for mod in tpu_system.api_modules("distribute.cluster_resolver"):
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
            if _is_user_code(sys._getframe(1)):
                raise AttributeError("module '{}' has no attribute '{}'".format(
                    types.ModuleType.__getattribute__(self, "__name__"), name))
        return types.ModuleType.__getattribute__(self, name)

    def __dir__(self):
        names = types.ModuleType.__dir__(self)
        if _is_user_code(sys._getframe(1)):
            hidden = _HIDDEN_MODULE_NAMES.get(id(self), ())
            names = [n for n in names if n not in hidden]
        return names


_HIDDEN_MODULE_NAMES: Dict[int, FrozenSet[str]] = {}  # id(module) -> names user code cannot see


class _Hidden(object):
    """A class attribute of TensorFlow's (or the emulation's) that the release did not have, in
    place of the attribute.  User code sees the class as if it were not there: the lookup goes on
    to the next class of the MRO, as Python's would, so ``hasattr(tf.distribute.Strategy, 'run')``
    is False under the 2.1 surface, and a ``run`` that the program puts on a class (the 2020 shim
    ``tf.distribute.Strategy.run = tf.distribute.Strategy.experimental_run_v2``) is found on
    instances of that class and its subclasses, the emulated TPUStrategy included.  TensorFlow's
    and Keras's code (``self.run``, ``super().run``) gets the original."""

    __slots__ = ("home", "name", "value", "surface")

    def __init__(self, home, name, value, surface):
        self.home, self.name, self.value, self.surface = home, name, value, surface

    def __get__(self, instance, owner=None):
        if owner is None:
            owner = type(instance)
        if self.surface.hides(owner, self.name):
            if _is_user_code(sys._getframe(1)):
                return self.surface.next_after(owner, self.home, self.name, instance)
        return _bind(self.value, instance, owner)


class _HiddenData(_Hidden):
    """A hidden data descriptor (a property): setting and deleting it as well."""

    __slots__ = ()

    def __set__(self, instance, value):
        if self.surface.hides(type(instance), self.name) and _is_user_code(sys._getframe(1)):
            instance.__dict__[self.name] = value
        else:
            self.value.__set__(instance, value)

    def __delete__(self, instance):
        if self.surface.hides(type(instance), self.name) and _is_user_code(sys._getframe(1)):
            del instance.__dict__[self.name]
        else:
            self.value.__delete__(instance)


def _bind(value, instance, owner):
    get = getattr(type(value), "__get__", None)
    return value if get is None else get(value, instance, owner)


class _ClassSurface(object):
    """Which public class attributes user code sees: ``roots`` is ((class, names kept, classes
    that were its bases in the release and are not now), ...), the most specific first; a class
    under none of them keeps everything."""

    def __init__(self, roots, shown_name):
        self.roots = roots
        self.shown_name = shown_name
        self.kept: Dict[type, Any] = {}

    def _root(self, klass):
        if klass not in self.kept:
            self.kept[klass] = next(((names, former) for root, names, former in self.roots
                                     if issubclass(klass, root)), (None, ()))
        return self.kept[klass]

    def kept_names(self, klass):
        return self._root(klass)[0]

    def hides(self, klass, name):
        kept = self.kept_names(klass)
        return kept is not None and name[:1] != "_" and name not in kept

    def next_after(self, owner, home, name, instance):
        """What Python finds for ``name`` when ``home`` does not have it (user code's view)."""
        if instance is not None:
            try:
                own = object.__getattribute__(instance, "__dict__")
            except AttributeError:
                own = {}
            if name in own:
                return own[name]
        mro = owner.__mro__
        for klass in mro[mro.index(home) + 1 if home in mro else 0:]:
            value = klass.__dict__.get(name, _MISSING)
            if value is _MISSING:
                continue
            if isinstance(value, _Hidden):
                if self.hides(owner, name):
                    continue
                value = value.value
            return _bind(value, instance, owner)
        for klass in self._root(owner)[1]:  # what the program put on a former base
            value = klass.__dict__.get(name, _MISSING)
            if value is not _MISSING and not isinstance(value, _Hidden):
                return _bind(value, instance, owner)
        if instance is None:
            raise AttributeError("type object '{}' has no attribute '{}'".format(owner.__name__, name))
        shown = self.shown_name(instance, owner) or getattr(owner, "_tf_class_name", owner.__name__)
        raise AttributeError("'{}' object has no attribute '{}'".format(shown, name))


def _family(*classes):
    """``classes``, their bases and every subclass of their topmost base, as now defined."""
    found: List[type] = []
    todo = [klass.__mro__[-2] for klass in classes]
    while todo:
        klass = todo.pop()
        if klass in found:
            continue
        found.append(klass)
        todo.extend(type.__subclasses__(klass))
        todo.extend(base for base in klass.__mro__[1:-1] if base not in found)
    return found


#: The classes restrict_to() looked at (TensorFlow's and the emulation's), once it ran.
_RESTRICTED_CLASSES: Set[type] = set()


def _hide_class_attributes(surface, classes):
    """Put a :class:`_Hidden` in place of each public attribute of ``classes`` that some class
    of theirs under ``surface`` did not have in the release."""
    for klass in classes:
        below = [other for other in classes if issubclass(other, klass)]
        for name, value in list(vars(klass).items()):
            if name[:1] == "_" or isinstance(value, _Hidden):
                continue
            if any(surface.hides(other, name) for other in below):
                kind = _HiddenData if hasattr(type(value), "__set__") else _Hidden
                _set(klass, name, kind(klass, name, value, surface))
    _RESTRICTED_CLASSES.update(classes)


_OWN_CALLS = threading.local()


def _call_own(obj, name, *args, **kwargs):
    """Call ``obj``'s own ``name``: TensorFlow's, the emulation's or that of a class the program
    defined, never one the program assigned on TensorFlow's classes (the shim
    ``Strategy.run = Strategy.experimental_run_v2`` would call itself).  A call that comes back
    here for the same object (an override of TensorFlow's calling ``super().run``, which finds
    the program's) goes on to the next one, as ``super()`` would have without the shim."""
    if not _hides(obj, name):
        return getattr(obj, name)(*args, **kwargs)
    own = []
    for klass in type(obj).__mro__:
        value = klass.__dict__.get(name, _MISSING)
        if isinstance(value, _Hidden):
            own.append(value.value)
        elif value is not _MISSING and klass not in _RESTRICTED_CLASSES:
            own.append(value)  # a subclass of the program's
    depths = _OWN_CALLS.__dict__.setdefault("depths", {})
    key = (id(obj), name)
    depth = depths.get(key, 0)
    if depth >= len(own):
        raise AttributeError("'{}' object has no attribute '{}'".format(type(obj).__name__, name))
    depths[key] = depth + 1
    try:
        return _bind(own[depth], obj, type(obj))(*args, **kwargs)
    finally:
        if depth:
            depths[key] = depth
        else:
            del depths[key]


def _hides(obj, name):
    """Whether the surface hides ``name`` from user code on ``obj``'s class (restrict_to)."""
    for klass in type(obj).__mro__:
        value = klass.__dict__.get(name)
        if isinstance(value, _Hidden):
            return value.surface.hides(type(obj), name)
    return False


def restrict_to(release):
    """Make the names TF ``release`` (2.1, 2.2 or 2.3) lacked absent for user code
    (``AttributeError``): under 2.1 ``tf.distribute.TPUStrategy``, ``strategy.run``,
    ``gather``, a replica context's ``all_gather``, ...; under 2.2 ``tf.distribute.TPUStrategy``,
    ``strategy.cluster_resolver``, ``gather``, ...  On the classes too (``hasattr(
    tf.distribute.Strategy, 'run')`` is False under 2.1), where what the program assigns is
    found as Python would find it.  Runs on that release itself too, where it hides only what
    the emulation adds.  Idempotent (the first call decides the release)."""
    if release not in SURFACES:
        raise ValueError("release must be one of {}; got {!r}".format(", ".join(sorted(SURFACES)), release))
    if _RESTRICTED_CLASSES:
        return
    surface = SURFACES[release]
    for path in ("distribute", "distribute.experimental"):
        keep = set(surface[path])
        for module in tpu_system.api_modules(path, v1=False):
            if type(module) is not types.ModuleType:
                continue  # a lazy loader or wrapper: left as it is
            _HIDDEN_MODULE_NAMES[id(module)] = frozenset(
                n for n in types.ModuleType.__dir__(module) if not n.startswith("_") and n not in keep)
            patches.patch("legacy", module, "__class__", _SurfaceModule)
    # compat.v1 strategies (TPUStrategy with steps_per_run) derive from tf.distribute.Strategy
    # on TF 2.1 but not on later releases: the most specific root first, and what a program of
    # TF 2.1 assigns on tf.distribute.Strategy (its shim's run) reaches them as on TF 2.1.0
    v1_base = tf.compat.v1.distribute.Strategy
    replica_base = tf.distribute.ReplicaContext
    former = (tf.distribute.Strategy,) if release == "2.1" and not issubclass(v1_base, tf.distribute.Strategy) else ()
    roots = ((v1_base, _compat_v1_tpu_strategy_names(surface), former),
             (tf.distribute.Strategy, frozenset(surface["Strategy"]), ()),
             (replica_base, frozenset(surface["ReplicaContext"]), ()))

    def shown_name(instance, owner):
        # a TPU strategy's replicas have TensorFlow's TPU replica context
        if issubclass(owner, replica_base):
            strategy = instance.__dict__.get("_strategy")
            return "_TPUReplicaContext" if isinstance(strategy, strategies._EmulatedTPU) else None
        return None

    _hide_class_attributes(_ClassSurface(roots, shown_name),
                           _family(tf.distribute.Strategy, v1_base, replica_base))


def uninstall():
    """Remove what :func:`install` and :func:`restrict_to` added."""
    releases.uninstall()
    del _INSTALLED[:]
    _RESTRICTED_CLASSES.clear()
    patches.undo("legacy")
