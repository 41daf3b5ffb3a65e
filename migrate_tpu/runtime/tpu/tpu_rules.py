"""Two rules of a real TPU that ``tf.distribute.MirroredStrategy`` does not have, as data with
where they come from, and the checks the emulated TPUStrategy makes with them:

* the dtypes the TPU's all-reduce takes.  Inside the replicated computation, a TPUStrategy
  reduces (``ReplicaContext.all_reduce``, the gradient aggregation of ``apply_gradients``, a
  SUM or MEAN variable updated in a replica) with the ``CrossReplicaSum`` op, whose type
  constraint refuses float64, int64 and every other dtype not listed below, with a
  ``TypeError`` raised when the step is traced.  ``strategy.reduce`` of the results of ``run``
  does not go through it (``TPUExtended._reduce_to`` sums them with ``add_n`` on the TPU host
  outside the replicated computation), so it is never refused;
* the core counts TPU machines have (``--replicas``).

Python 3.7 syntax; TensorFlow is imported only by the functions that need it, so the tables
and messages can be read (and tested) without it.
"""

from __future__ import absolute_import, division, print_function

import threading
from typing import NamedTuple, Tuple


# --------------------------------------------------------------------------
# The all-reduce's dtypes
# --------------------------------------------------------------------------


class AllReduceTypes(NamedTuple):
    """The dtypes (TensorFlow's names, in the op's order) that ``CrossReplicaSum`` takes at
    ``release``, and where that is written in the release's wheel: ``(path under the
    tensorflow package, line, words on that line)``."""
    release: str
    allowed: Tuple[str, ...]
    sources: Tuple[Tuple[str, int, str], ...]


def _sources(gen_tpu_ops_line, op_def_library_line, tpu_strategy_line):
    return (("python/ops/gen_tpu_ops.py", gen_tpu_ops_line, "Must be one of the following types"),
            ("python/framework/op_def_library.py", op_def_library_line, "raise TypeError("),
            ("python/distribute/tpu_strategy.py", tpu_strategy_line, "return tpu_ops.cross_replica_sum(value)"))


#: Per emulated TF API (the surface's release): the dtypes a TPU all-reduces.  Checked on the
#: real interpreters (tests/runtime/test_tpu_rules.py): ``gen_tpu_ops.cross_replica_sum`` of a
#: dtype not listed raises exactly ALL_REDUCE_MESSAGE with this list, in a graph, as when a TPU
#: traces its step (2.4.1's op def says ``half``, its message ``float16``).  The sources: the
#: generated op's docstring of ``input``'s types, op_def_library's ``_SatisfiesTypeConstraint``
#: raising the TypeError, and ``TPUExtended._reduce_to`` calling the op inside the TPU context.
ALL_REDUCE_TYPES = {
    "2.1": AllReduceTypes("2.1.0", ("bfloat16", "float32", "int32", "uint32"), _sources(360, 57, 499)),
    "2.2": AllReduceTypes("2.2.3", ("bfloat16", "float32", "int32", "uint32"), _sources(360, 57, 684)),
    "2.3": AllReduceTypes("2.3.4", ("bfloat16", "float32", "int32", "uint32"), _sources(364, 57, 882)),
    "2.4": AllReduceTypes("2.4.1", ("float16", "bfloat16", "float32", "int32", "uint32"), _sources(361, 59, 1095)),
}

#: op_def_library's words for an input whose dtype the op does not take (2.1.0 to 2.21)
ALL_REDUCE_MESSAGE = ("Value passed to parameter 'input' has DataType {dtype} not in list of "
                      "allowed values: {allowed}")


def all_reduce_types(tf_api):
    """The :class:`AllReduceTypes` of surface ``tf_api`` (``'2.1'``, ..., ``'2.4'``; the mixed
    ``'2.1+2.4'`` is 2.4's, as is any later one)."""
    key = str(tf_api or "2.4").split("+")[-1]
    if key in ALL_REDUCE_TYPES:
        return ALL_REDUCE_TYPES[key]
    return ALL_REDUCE_TYPES["2.4"]


def all_reduce_refusal(dtype_name, tf_api):
    """The TPU's message for all-reducing a ``dtype_name`` value, or None where it takes it."""
    rule = all_reduce_types(tf_api)
    if dtype_name in rule.allowed:
        return None
    return ALL_REDUCE_MESSAGE.format(dtype=dtype_name, allowed=", ".join(rule.allowed))


def _dtype_name(value):
    """The TensorFlow dtype name of a tensor or per-replica value, or None for anything else
    (a Python number becomes a float32 or int32 tensor, both taken)."""
    import tensorflow as tf
    parts = getattr(value, "_values", None)
    if isinstance(parts, (tuple, list)) and parts:  # PerReplica, Mirrored, a distributed variable
        value = parts[0]
    elif not tf.is_tensor(value) and not hasattr(value, "indices"):  # IndexedSlices: a tensor's dtype
        return None
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return None
    try:
        return tf.as_dtype(dtype).name
    except TypeError:
        return None


class _Refused(object):
    """What a merge function returns in place of its result when the TPU would have refused its
    all-reduce: the replica raises the TypeError in its own thread, with the user's frames."""

    def __init__(self, message):
        self.message = message


_MERGE = threading.local()  # .depth: merge functions of an emulated TPU's replicas under way


def refusal_of(value, tf_api):
    """The TPU's message for all-reducing ``value`` (a tensor or per-replica value) under surface
    ``tf_api``, or None where its dtype is taken (or it has none)."""
    name = _dtype_name(value)
    return all_reduce_refusal(name, tf_api) if name else None


def _check(values, tf_api):
    for value in values:
        message = refusal_of(value, tf_api)
        if message:
            raise _AllReduceRefused(message)


class _AllReduceRefused(Exception):
    """Raised in the merge function (the main thread), turned into the replica's TypeError."""


def enforce_all_reduce_types(extended, tf_api):
    """Make ``extended`` (an emulated TPUStrategy's) refuse, as the TPU's ``CrossReplicaSum``
    does, to all-reduce a value of a dtype the release's TPU does not take, when the reduction
    comes from a replica (a merge call) and not from ``strategy.reduce`` on ``run``'s results.
    Only this strategy's instance changes; :func:`relay_refusals` must be installed too."""
    reduce_to = extended._reduce_to
    batch_reduce_to = extended._batch_reduce_to

    def _reduce_to(reduce_op, value, *args, **kwargs):
        if getattr(_MERGE, "depth", 0):
            _check([value], tf_api)
        return reduce_to(reduce_op, value, *args, **kwargs)

    def _batch_reduce_to(reduce_op, value_destination_pairs, *args, **kwargs):
        if getattr(_MERGE, "depth", 0):
            _check([pair[0] for pair in value_destination_pairs], tf_api)
        return batch_reduce_to(reduce_op, value_destination_pairs, *args, **kwargs)

    extended._reduce_to = _reduce_to
    extended._batch_reduce_to = _batch_reduce_to


def relay_refusals(original):
    """A ``_merge_call`` for MirroredStrategy's replica contexts: for an emulated TPU's replica,
    its merge function runs with the all-reduce rule on, and a refusal is raised as TensorFlow's
    ``TypeError`` in the replica's thread (where the user's ``all_reduce`` or
    ``apply_gradients`` line is); any other strategy's merge call is ``original``'s."""
    def _merge_call(self, fn, args, kwargs):
        extended = getattr(getattr(self, "_strategy", None), "extended", None)
        if not getattr(extended, "emulated_tpu", False):
            return original(self, fn, args, kwargs)

        def merge_fn(*merge_args, **merge_kwargs):
            _MERGE.depth = getattr(_MERGE, "depth", 0) + 1
            try:
                return fn(*merge_args, **merge_kwargs)
            except _AllReduceRefused as refused:
                return _Refused(str(refused))
            finally:
                _MERGE.depth -= 1

        result = original(self, merge_fn, args, kwargs)
        if isinstance(result, _Refused):
            raise TypeError(result.message)
        return result
    _merge_call.__doc__ = original.__doc__
    return _merge_call


def mirrored_replica_context_class():
    """MirroredStrategy's replica context class (its ``_merge_call`` hands the merge to the main
    thread): ``mirrored_run._MirroredReplicaContext`` from TF 2.2 on, ``mirrored_strategy.
    MirroredReplicaContext`` in TF 2.1; None where neither is found."""
    try:
        from tensorflow.python.distribute import mirrored_run
        found = getattr(mirrored_run, "_MirroredReplicaContext", None)
    except ImportError:
        found = None
    if found is None:
        from tensorflow.python.distribute import mirrored_strategy
        found = getattr(mirrored_strategy, "MirroredReplicaContext", None)
    if found is None or "_merge_call" not in found.__dict__:
        return None
    return found


# --------------------------------------------------------------------------
# Core counts of TPU machines
# --------------------------------------------------------------------------

#: Cores of one TPU host of 2020 (v2-8, v3-8: 4 chips of 2 cores, a 2x2 mesh of chips) and of
#: the whole boxes of that mesh a program can be given (one core, one chip, two chips); today's
#: single-host TPUs have 1, 4 or 8 devices too (v4-8: 4; v5e and v6e: 1, 4, 8).
HOST_CORES = (1, 2, 4, 8)
#: Cores in all of the multi-host TPU types of 2020 (8 per host): v2-32, v2-128, v2-256,
#: v2-512; v3-32, v3-64, v3-128, v3-256, v3-512, v3-1024, v3-2048.
SLICE_CORES = (32, 64, 128, 256, 512, 1024, 2048)
CORE_COUNT_SOURCE = ("cloud.google.com/tpu/docs/types-zones (TPU types of 2020: v2-8 .. v2-512, "
                     "v3-8 .. v3-2048); cloud.google.com/tpu/docs/v3 (2 TensorCores per chip)")


def _listed(numbers):
    numbers = [str(n) for n in numbers]
    return ", ".join(numbers[:-1]) + " or " + numbers[-1]


def core_count_problem(replicas, hosts=1):
    """One line saying why no TPU has ``replicas`` cores (over ``hosts`` hosts), or None.

    One host (``--replicas`` alone): a count of :data:`HOST_CORES` or :data:`SLICE_CORES`
    (a slice's cores seen from its one client).  An emulated pod (``--hosts``): each host's
    share must be a count of :data:`HOST_CORES`; the number of hosts is the user's choice (a
    smaller pod than any TPU type, to try a pod's input pipelines, is allowed)."""
    replicas, hosts = int(replicas), int(hosts or 1)
    host_part = ("a TPU host has 8 cores (v2-8, v3-8), of which a program may be given 1, 2 or 4; "
                 "a slice has 8 per host, {} in all".format(_listed(SLICE_CORES)))
    if hosts > 1:
        per_host = replicas // hosts
        if per_host in HOST_CORES:
            return None
        return ("migrate-tpu run: no TPU host has {} cores (--hosts {} --replicas {}): {}; "
                "run with --replicas {}".format(per_host, hosts, replicas, host_part, 8 * hosts))
    if replicas in HOST_CORES or replicas in SLICE_CORES:
        return None
    return "migrate-tpu run: no TPU has {} cores (--replicas {}): {}; run with --replicas 8".format(
        replicas, replicas, host_part)


def check_core_count(replicas, hosts=1):
    """Raise ``ValueError`` (one line) where no TPU has the emulated machine's core count."""
    problem = core_count_problem(replicas, hosts)
    if problem:
        raise ValueError(problem)


__all__ = ["ALL_REDUCE_MESSAGE", "ALL_REDUCE_TYPES", "AllReduceTypes", "CORE_COUNT_SOURCE", "HOST_CORES",
           "SLICE_CORES", "all_reduce_refusal", "all_reduce_types", "check_core_count", "core_count_problem",
           "enforce_all_reduce_types", "mirrored_replica_context_class", "relay_refusals"]



# --------------------------------------------------------------------------
# Inputs: TPUStrategy's own check of a distributed dataset
# --------------------------------------------------------------------------

#: From TF 2.3 on, TPUStrategy refuses a dataset of sparse or ragged tensors distributed with
#: device prefetch (the default): ``TPUExtended._check_spec``, called by
#: ``_experimental_distribute_dataset`` and after ``_distribute_datasets_from_function``
#: (``tpu_strategy.py`` at v2.3.4 and v2.4.1; TF 2.21 unchanged; absent at v2.1.0 and v2.2.3).
PREFETCH_CHECK_FROM = (2, 3)
#: MirroredExtended's methods that make a distributed dataset, by release.
DISTRIBUTE_METHODS = ("_experimental_distribute_dataset", "_distribute_datasets_from_function",
                      "_experimental_distribute_datasets_from_function")


def _prefetched(options):
    return options is None or bool(getattr(options, "experimental_prefetch_to_device", True))


def check_inputs_as_tpu_strategy(extended, tf_api):
    """Make ``extended`` (an emulated TPUStrategy's) check what it distributes with
    TensorFlow's own ``TPUExtended._check_spec``, where the emulated release has that check.
    Only this strategy's instance changes."""
    from migrate_tpu.runtime.tpu.tpu_system import api_version
    if api_version(tf_api) < PREFETCH_CHECK_FROM:
        return
    try:
        from tensorflow.python.distribute import tpu_strategy
    except ImportError:  # pragma: no cover - every release here has it
        return
    check_spec = getattr(getattr(tpu_strategy, "TPUExtended", None), "_check_spec", None)
    if check_spec is None:
        return
    for name in DISTRIBUTE_METHODS:
        original = getattr(extended, name, None)
        if original is not None:
            setattr(extended, name, _checked(original, check_spec, extended, name))


def _checked(original, check_spec, extended, name):
    def distribute(dataset_or_fn, options=None, *args, **kwargs):
        if name == "_experimental_distribute_dataset" and _prefetched(options):
            check_spec(extended, dataset_or_fn.element_spec)  # TensorFlow's own, before distributing
        made = original(dataset_or_fn, options, *args, **kwargs)
        if name != "_experimental_distribute_dataset" and _prefetched(options):
            check_spec(extended, made.element_spec)  # only known once the function has run
        return made
    return distribute


# --------------------------------------------------------------------------
# Keras's own refusal of loss scaling under TPUStrategy
# --------------------------------------------------------------------------

#: Keras refuses a LossScaleOptimizer (``mixed_float16``) under TPUStrategy from TF 2.3 on:
#: ``strategy_supports_loss_scaling`` is False for it and ``_raise_if_strategy_unsupported`` says
#: "Loss scaling is not supported with TPUStrategy" (``keras/mixed_precision/loss_scale_optimizer.py``
#: at v2.4.1, ``.../experimental/loss_scale_optimizer.py`` at v2.3.4, tf-keras 2.21; v2.2.3 has
#: no TPU check, v2.1.0 no check at all).  The emulated strategy is a MirroredStrategy, which
#: Keras lets scale: Keras's own check is given the emulated TPU as what it is.
LOSS_SCALING_CHECK_FROM = (2, 3)
KERAS_LOSS_SCALING = ("tensorflow.python.keras.mixed_precision.loss_scale_optimizer",
                      "tensorflow.python.keras.mixed_precision.experimental.loss_scale_optimizer",
                      "tf_keras.src.mixed_precision.loss_scale_optimizer")


class _TPUStrategyClasses(object):
    """What Keras's check reads as ``tpu_strategy`` (v2.3.4, v2.4.1): the emulated classes."""

    def __init__(self, experimental, stable, v1):
        self.TPUStrategy, self.TPUStrategyV2, self.TPUStrategyV1 = experimental, stable, v1


def keras_loss_scaling_patches(classes, tf_api):
    """``(module, name, value)`` changes (for the emulation's ledger) that make the loaded Keras
    refuse loss scaling under an emulated TPUStrategy with its own words; ``classes`` are the
    emulated (experimental, stable, v1) strategy classes."""
    import sys
    from migrate_tpu.runtime.tpu.tpu_system import api_version
    if api_version(tf_api) < LOSS_SCALING_CHECK_FROM:
        return []
    changes = []
    for name in KERAS_LOSS_SCALING:
        module = sys.modules.get(name)
        original = getattr(module, "strategy_supports_loss_scaling", None)
        if original is None:
            continue
        changes.append((module, "strategy_supports_loss_scaling", _not_on_an_emulated_tpu(original)))
        if getattr(module, "tpu_strategy", None) is not None:
            changes.append((module, "tpu_strategy", _TPUStrategyClasses(*classes)))
    return changes


def _not_on_an_emulated_tpu(original):
    def strategy_supports_loss_scaling():
        import tensorflow as tf
        if tf.distribute.has_strategy() and getattr(tf.distribute.get_strategy().extended, "emulated_tpu", False):
            return False
        return original()
    return strategy_supports_loss_scaling
