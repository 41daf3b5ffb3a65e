"""The emulated TPUStrategy classes: ``tf.distribute.MirroredStrategy`` with one replica per
emulated core whose extended object is the TPU's (``tpu_extended``: its cross-replica operations,
its run, its refusals), the constructor keywords and logical-device helpers, TensorFlow's class
names, and, on a pod, one input worker per TPU host.
"""

from __future__ import absolute_import, division, print_function

import logging
from typing import Any, Tuple, cast

import numpy as np
import tensorflow as tf

from migrate_tpu.runtime.tpu import tpu_replicate
from migrate_tpu.runtime.program.autograph_scope import converted_as_run_converts
from migrate_tpu.runtime.tpu.resolver import TPUClusterResolver
from migrate_tpu.runtime.tpu.topology import DeviceAssignment, build_device_assignment, current_topology
from migrate_tpu.runtime.tpu.tpu_extended import become_tpu_extended
from migrate_tpu.runtime.tpu.tpu_rules import check_core_count
from migrate_tpu.runtime.tpu.tpu_system import (EAGER_RUN_MESSAGE_2_1, EAGER_RUN_MESSAGE_2_4,
                                            EXPERIMENTAL_DEPRECATION, STATE, api_version,
                                            local_devices, tf_version)


# --------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------

# tf.distribute.Strategy's own run (experimental_run_v2 on TF 2.1), taken before a program
# can assign its own (the 2020 shim ``tf.distribute.Strategy.run = ...experimental_run_v2``)
_BASE_RUN: Any = getattr(tf.distribute.Strategy, "run", None)
_BASE_RUN_V2: Any = getattr(tf.distribute.Strategy, "experimental_run_v2", None)


def _own(name, base):
    """tf.distribute.Strategy's ``name`` as TensorFlow defines it, or as the recorder of verify
    wraps it (so that the step is recorded), never what a program assigned on the class."""
    for klass in tf.distribute.Strategy.__mro__:
        value = klass.__dict__.get(name)
        if value is None:
            continue
        if type(value).__name__ in ("_Hidden", "_HiddenData"):  # a surface's hiding descriptor
            value = getattr(value, "value", value)
        if value is base or (base is not None and getattr(value, "_migrate_tpu_wraps", None) is base):
            return value
        break
    return base


def _mirrored_run(strategy, fn, args, kwargs, options):
    if _BASE_RUN is not None:
        run = _own("run", _BASE_RUN)
        if options is None:
            return run(strategy, fn, args=args, kwargs=kwargs)
        return run(strategy, fn, args=args, kwargs=kwargs, options=options)
    return _own("experimental_run_v2", _BASE_RUN_V2)(strategy, fn, args=args, kwargs=kwargs)


class _EmulatedTPU(object):
    """What every emulated TPUStrategy adds to the ``tf.distribute`` strategy it runs on:
    the device assignment, the resolver, TPU's attributes of ``extended``, and
    TensorFlow's class name in users' errors."""

    #: the name TensorFlow's own class has (errors name it, not the emulation)
    _tf_class_name = "TPUStrategy"

    def _emulated_init(self, tpu_cluster_resolver, device_assignment):
        if not STATE.installed:
            raise RuntimeError("migrate_tpu.runtime.surfaces.emulation.install() has not run")
        check_core_count(STATE.replicas, STATE.hosts)  # no TPU has 3 cores
        if tpu_cluster_resolver is None:
            tpu_cluster_resolver = TPUClusterResolver("")
        topology = current_topology()
        if device_assignment is None:
            device_assignment = build_device_assignment(
                topology, num_replicas=int(np.prod(topology.mesh_shape)))
        elif not isinstance(device_assignment, DeviceAssignment):
            raise ValueError("device_assignment must be a tf.tpu.experimental.DeviceAssignment, "
                             "got {}".format(type(device_assignment)))
        self._start_replicas(device_assignment)
        self._emulated_resolver = tpu_cluster_resolver
        self._emulated_device_assignment = device_assignment
        # the TPU's cross-replica operations, its run and its refusals: one extended object
        become_tpu_extended(self.extended, device_assignment, tpu_cluster_resolver, STATE.hosts)

    @property
    def cluster_resolver(self):
        return self._emulated_resolver

    @property
    def emulated_device_assignment(self):
        return self._emulated_device_assignment

    def __getattr__(self, name):
        # only reached when normal lookup failed: say it as TensorFlow would
        raise AttributeError("'{}' object has no attribute '{}'".format(self._tf_class_name, name))


class _EmulatedTPUStrategyBase(_EmulatedTPU, tf.distribute.MirroredStrategy):
    """The TPU system (one host or a pod): a MirroredStrategy with one replica per emulated
    core of the assignment, whose input workers are the TPU hosts."""

    _mirrored_class = tf.distribute.MirroredStrategy

    def _start_replicas(self, device_assignment):
        devices = local_devices()
        topology = device_assignment.topology
        per_task = topology.num_tpus_per_task
        placed = []
        for r in range(device_assignment.num_replicas):
            task, ordinal = topology._lookup(device_assignment.coordinates(r, 0))
            placed.append(devices[task * per_task + ordinal])
        cross_device_ops = tf.distribute.ReductionToOneDevice() if STATE.shared_gpu else None
        self._mirrored_class.__init__(self, devices=placed, cross_device_ops=cross_device_ops)
        if STATE.hosts > 1:
            _one_input_worker_per_host(self.extended, placed)


def _one_input_worker_per_host(extended, devices):
    """Make each emulated TPU host an input worker of ``extended`` feeding its own cores.

    TensorFlow's MirroredStrategy then does what TPUStrategy does on a pod: it calls a
    dataset function once per input worker (``InputContext(num_input_pipelines=H,
    input_pipeline_id=k)``), shards a distributed dataset per worker, and host k's
    pipeline feeds replicas ``k*N/H .. (k+1)*N/H - 1``.  Every host's pipeline runs on
    this process's CPU (checked on TF 2.4.1 and 2.21, whose MirroredExtended keeps the
    (host device, compute devices) pairs in ``_input_workers_devices``).
    """
    if not hasattr(extended, "_input_workers_devices"):
        raise NotImplementedError(
            "migrate_tpu.runtime: an emulated pod needs TensorFlow >= 2.4 (this is {}); run "
            "the pod with --python tf2.4 --tf-api {}".format(tf.__version__, STATE.tf_api or "2.1"))
    per_host = len(devices) // STATE.hosts
    host_device = extended._input_workers_devices[0][0]
    extended._input_workers_devices = tuple(
        (host_device, tuple(devices[k * per_host:(k + 1) * per_host])) for k in range(STATE.hosts))


def _strategy_run(self, fn, args=(), kwargs=None, options=None):
    """Like ``Strategy.run``, with TPU's refusal of eager plain functions."""
    self.extended.check_run_function(fn, EAGER_RUN_MESSAGE_2_4)
    with tpu_replicate.run_asked(self.extended, options, fn):
        return _mirrored_run(self, fn, args, kwargs, options)


def _strategy_experimental_run_v2(self, fn, args=(), kwargs=None):
    """TF 2.1's name for ``run``, with TF 2.1's refusal message."""
    self.extended.check_run_function(fn, EAGER_RUN_MESSAGE_2_1)
    asked = fn
    if tf_version() < (2, 2):
        fn = _outputs_as_tensors(fn)
    with tpu_replicate.run_asked(self.extended, None, asked):
        return _mirrored_run(self, fn, args, kwargs, None)


def _strategy_experimental_run_v2_of_2_2(self, fn, args=(), kwargs=None, options=None):
    """``experimental_run_v2`` of TF 2.2 and 2.3: ``run``'s deprecated alias (so a TPU refuses
    an eager plain function with ``run``'s words)."""
    return self.run(fn, args=args, kwargs=kwargs, options=options)


def _as_tensor(value):
    if isinstance(value, (bool, int, float, np.number, np.ndarray)):
        return tf.convert_to_tensor(value)
    return value


def _outputs_as_tensors(fn):
    """``fn`` with its Python numbers returned as tensors, as TPU's ``tpu.replicate``
    returns every output of a replica.  TF 2.1's ``reduce(MEAN, v, axis=N)`` runs a
    helper that returns the static size of that axis as a Python int: a TPU reduces
    the replicas' tensors, MirroredStrategy would refuse to SUM one plain number
    (``A non-DistributedValues value 2 cannot be reduced``).  The user's function is converted
    here, as TF 2.1.0's TPUStrategy converts it, whether or not AutoGraph converts this wrapper
    (the runtime's own code, which it leaves alone unless asked as by TF 2.1's ``tf_convert``)."""
    fn = converted_as_run_converts(fn)

    def replica_fn(*args, **kwargs):
        return tf.nest.map_structure(_as_tensor, fn(*args, **kwargs))
    return replica_fn


class _ExperimentalTPUStrategy(object):
    """``tf.distribute.experimental.TPUStrategy`` on emulated TPU cores."""

    _tf_class_name = "TPUStrategy"

    def __init__(self, tpu_cluster_resolver=None, device_assignment=None):
        if api_version() >= (2, 3):  # deprecated when tf.distribute.TPUStrategy came
            # through absl's logger, as TensorFlow 2.3.4, 2.4.1 and 2.21 log it
            logging.getLogger("absl").warning(EXPERIMENTAL_DEPRECATION)
        cast(_EmulatedTPU, self)._emulated_init(tpu_cluster_resolver, device_assignment)  # a mixin: TPUStrategy also derives from _EmulatedTPU


def _num_logical_devices_per_replica(strategy):
    return strategy._emulated_device_assignment.num_cores_per_replica


#: TPUStrategy's model-parallelism helpers: on every strategy in TF 2.2 and 2.3 (a TPU's check
#: their arguments, others raise ``NotImplementedError``), on ``tf.distribute.TPUStrategy``
#: alone from TF 2.4 on.
LOGICAL_DEVICE_HELPERS = ("experimental_assign_to_logical_device", "experimental_split_to_logical_devices",
                          "experimental_replicate_to_logical_devices")


class _StableTPUStrategy(object):
    """``tf.distribute.TPUStrategy`` (TF >= 2.3) on emulated TPU cores."""

    _tf_class_name = "TPUStrategyV2"
    _extra_kwargs: Tuple[str, ...] = ()  # the real class's other keywords: emulation.install() sets them

    def __init__(self, tpu_cluster_resolver=None, experimental_device_assignment=None, **kwargs):
        unknown = [k for k in kwargs if k not in self._extra_kwargs]
        if unknown:
            raise TypeError("__init__() got an unexpected keyword argument '{}'".format(unknown[0]))
        cast(_EmulatedTPU, self)._emulated_init(tpu_cluster_resolver, experimental_device_assignment)  # a mixin: TPUStrategyV2 also derives from _EmulatedTPU

    def experimental_assign_to_logical_device(self, tensor, logical_device_id):
        """Annotates ``tensor`` for one logical core; the value is unchanged."""
        count = _num_logical_devices_per_replica(self)
        if logical_device_id < 0 or logical_device_id >= count:
            raise ValueError("`logical_core_id` to assign must be lower then total "
                             "number of logical devices per replica. Received "
                             "logical device id {} but there are only total of {} "
                             "logical devices in replica.".format(logical_device_id, count))
        return tf.identity(tensor)

    def experimental_split_to_logical_devices(self, tensor, partition_dimensions):
        """Annotates ``tensor`` to be tiled over the logical cores; the value is unchanged."""
        count = _num_logical_devices_per_replica(self)
        splits = int(np.prod(partition_dimensions))
        shape = tensor.shape
        rank = len(shape)
        if rank != len(partition_dimensions):
            raise ValueError("Length of `partition_dimensions` ({}) must be  "
                             "equal to the rank of `x` ({}).".format(len(partition_dimensions), rank))
        for index, size in enumerate(shape.as_list() if hasattr(shape, "as_list") else shape):
            if size is None:
                continue
            if size % partition_dimensions[index] != 0:
                raise ValueError("Tensor shape at dimension ({}) must be "
                                 "divisible by corresponding value specified "
                                 "by `partition_dimensions` ({}).".format(
                                     index, partition_dimensions[index]))
        if splits != count:
            raise ValueError("Number of logical devices ({}) does not match the "
                             "number of partition splits specified ({}).".format(count, splits))
        return tf.identity(tensor)

    def experimental_replicate_to_logical_devices(self, tensor):
        """Annotates ``tensor`` to be replicated on every logical core; the value is unchanged."""
        return tf.identity(tensor)


class TPUStrategy(_ExperimentalTPUStrategy, _EmulatedTPUStrategyBase):
    """``tf.distribute.experimental.TPUStrategy`` on emulated TPU cores.

    The class names are TensorFlow's own (``TPUStrategy``, ``TPUStrategyV2``,
    ``TPUStrategyV1``): Keras and tf-keras decide how a TPU differs by the class
    name's prefix (per-replica logs take the first replica's value, metric
    variables are ON_WRITE, ...), so the emulation must answer those checks as a
    TPU does.
    """


class TPUStrategyV2(_StableTPUStrategy, _EmulatedTPUStrategyBase):
    """``tf.distribute.TPUStrategy`` (TF >= 2.3) on emulated TPU cores."""


class TPUStrategyV1(_EmulatedTPU, tf.compat.v1.distribute.MirroredStrategy):
    """``tf.compat.v1.distribute.experimental.TPUStrategy`` on one emulated TPU host: the
    TF1-style API (``experimental_run``, ``make_dataset_iterator``, ...) of a
    ``compat.v1`` MirroredStrategy, with ``steps_per_run``."""

    _tf_class_name = "TPUStrategyV1"
    _mirrored_class = tf.compat.v1.distribute.MirroredStrategy

    def __init__(self, tpu_cluster_resolver=None, steps_per_run=None, device_assignment=None):
        self._emulated_init(tpu_cluster_resolver, device_assignment)
        self.extended.steps_per_run = steps_per_run or 1

    _start_replicas = _EmulatedTPUStrategyBase.__dict__["_start_replicas"]

    @property
    def steps_per_run(self):
        """DEPRECATED: use .extended.steps_per_run instead."""
        return self.extended.steps_per_run


def strategy_classes():
    """(experimental, stable) emulated TPUStrategy classes."""
    return TPUStrategy, TPUStrategyV2
