"""The emulated TPUStrategy's extended object: the one owner of the TPU's cross-replica operations
and of the refusals TPUStrategy makes, as TensorFlow's ``TPUExtended`` owns them.

An emulated TPUStrategy is a MirroredStrategy with one replica per emulated core; its extended
object is TensorFlow's ``MirroredExtended`` of the release, made into :class:`TPUExtended` of
that class (a subclass made once per release's class, its methods calling MirroredExtended's):

* **cross-replica operations** (``_reduce_to``, ``_batch_reduce_to``, ``_update``,
  ``_update_non_slot``, ``_broadcast_to``, ``_gather_to_implementation``): the TPU's while the
  replica function is traced (``tpu_replicate``: a collective among the cores' calls, as
  ``CrossReplicaSum``), MirroredStrategy's otherwise;
* **a user's run** (``_call_for_each_replica``): one trace, judged by the TPU's compiler and run on
  every core (``tpu_replicate.replicated_run``); TensorFlow's own calls keep MirroredStrategy's;
* **the refusals** (rules of :data:`tpu_rules.TPU_RULES`, each read at the emulated release):
  ``eager-plain-function`` (:meth:`TPUExtended.check_run_function`), ``all-reduce-dtype`` (in a
  merge call of a replica, and in the trace), ``sparse-input-prefetch`` (TensorFlow's own
  ``TPUExtended._check_spec``) and, through the compile step, the compiler's.

Replicas' merge calls reach the reductions through MirroredStrategy's replica context, whose
``_merge_call`` the emulation wraps with :func:`relay_refusals` (through the ledger of patches):
a refused all-reduce is raised in the replica's thread, where the user's line is.

Python 3.7 syntax: TensorFlow 2.1.0 runs it.
"""

from __future__ import absolute_import, division, print_function

import os
import threading
import weakref
from typing import Any, Callable, Dict

import tensorflow as tf

from migrate_tpu.runtime.tpu import tpu_replicate, tpu_rules
from migrate_tpu.runtime.tpu.tpu_system import STATE

#: The methods of MirroredExtended the TPU's extended object answers itself (those the release's
#: class has: ``_gather_to_implementation`` from TF 2.4, ``_use_merge_call`` from 2.5, the two
#: names of distributing a dataset function).
OWNED = ("_reduce_to", "_batch_reduce_to", "_update", "_update_non_slot", "_broadcast_to",
         "_gather_to_implementation", "_create_variable", "_call_for_each_replica", "_use_merge_call",
         "_experimental_distribute_dataset", "_distribute_datasets_from_function",
         "_experimental_distribute_datasets_from_function")

_MERGE = threading.local()  # .depth: merge functions of an emulated TPU's replicas under way
_CLASSES: Dict[type, type] = {}  # MirroredExtended class of the release -> its TPUExtended


class _AllReduceRefused(Exception):
    """Raised in the merge function (the main thread), turned into the replica's TypeError."""


class _Refused(object):
    """What a merge function returns in place of its result when the TPU would have refused its
    all-reduce: the replica raises the TypeError in its own thread, with the user's frames."""

    def __init__(self, message):
        self.message = message


def _refuse_all_reduce_of(values):
    """Rule ``all-reduce-dtype`` for reductions a replica's merge call asks for (not
    ``strategy.reduce`` of ``run``'s results, which TPUExtended sums on the host)."""
    if not getattr(_MERGE, "depth", 0):
        return
    for value in values:
        message = tpu_rules.refusal_of(value, STATE.tf_api)
        if message:
            raise _AllReduceRefused(message)


def _options_of(args, kwargs):
    """The ``InputOptions`` a distributing method was given (its second argument, from TF 2.2;
    TF 2.1's take none)."""
    return args[0] if args else kwargs.get("options")


def _prefetched(options):
    return options is None or bool(getattr(options, "experimental_prefetch_to_device", True))


def _check_spec_of_the_release():
    """TensorFlow's own ``TPUExtended._check_spec`` where the emulated release has rule
    ``sparse-input-prefetch``, else None."""
    if not tpu_rules.holds("sparse-input-prefetch", STATE.tf_api):
        return None
    try:
        from tensorflow.python.distribute import tpu_strategy
    except ImportError:  # pragma: no cover - every release here has it
        return None
    return getattr(getattr(tpu_strategy, "TPUExtended", None), "_check_spec", None)


def tpu_extended_class(mirrored_extended):
    """The TPU's extended class of the release's ``mirrored_extended`` class (made once)."""
    found = _CLASSES.get(mirrored_extended)
    if found is None:
        found = _CLASSES[mirrored_extended] = _make_class(mirrored_extended)
    return found


class _TPUOperations(object):
    """The methods of the TPU's extended class (:func:`tpu_extended_class` gives them to a subclass of
    the release's MirroredExtended, ``_release_extended``, and call its own)."""

    _release_extended: Any = None
    # MirroredExtended's, and what tpu_replicate.start_computation gives each instance
    _container_strategy: Callable[[], Any]
    _migrate_tpu_variables: Dict[int, Any]

    # ---- the refusal of run ----

    def check_run_function(self, fn, message):
        """Rule ``eager-plain-function`` (:func:`refuse_eager_plain_function`)."""
        refuse_eager_plain_function(fn, message)

    # ---- cross-replica operations ----

    def _reduce_to(self, reduce_op, value, *args, **kwargs):
        if tpu_replicate.compiling(self):
            return tpu_replicate.reduce_in_computation(self, reduce_op, value)
        _refuse_all_reduce_of([value])
        return self._release_extended._reduce_to(self, reduce_op, value, *args, **kwargs)

    def _batch_reduce_to(self, reduce_op, value_destination_pairs, *args, **kwargs):
        if tpu_replicate.compiling(self):
            return [tpu_replicate.reduce_in_computation(self, reduce_op, v) for v, _ in value_destination_pairs]
        _refuse_all_reduce_of([pair[0] for pair in value_destination_pairs])
        return self._release_extended._batch_reduce_to(self, reduce_op, value_destination_pairs, *args, **kwargs)

    def _update(self, var, fn, args, kwargs, group):
        if tpu_replicate.compiling(self):
            return tpu_replicate.update_in_computation(var, fn, args, kwargs, group)
        return self._release_extended._update(self, var, fn, args, kwargs, group)

    def _update_non_slot(self, colocate_with, fn, args, kwargs, group):
        if tpu_replicate.compiling(self):
            first = tpu_replicate.first_copies
            result = fn(*first(tuple(args)), **first(dict(kwargs or {})))
            return result if group else (result,)
        return self._release_extended._update_non_slot(self, colocate_with, fn, args, kwargs, group)

    def _broadcast_to(self, tensor, destinations):
        if tpu_replicate.compiling(self):  # every core has the value already
            return tensor
        return self._release_extended._broadcast_to(self, tensor, destinations)

    def _gather_to_implementation(self, value, destinations, axis, *args, **kwargs):
        if tpu_replicate.compiling(self):
            return tpu_replicate.gather_in_computation(self, value, axis)
        return self._release_extended._gather_to_implementation(self, value, destinations, axis, *args, **kwargs)

    def _use_merge_call(self):
        # TF >= 2.5: the replicas all-reduce through merge calls while traced here
        return True if tpu_replicate.compiling(self) else self._release_extended._use_merge_call(self)

    def _create_variable(self, *args, **kwargs):
        """TensorFlow's, noting each distributed variable by its first copy's handle (the trace
        captures that handle; each core's call gets its own copy's)."""
        created = self._release_extended._create_variable(self, *args, **kwargs)
        copies = tpu_replicate.components(created) if tpu_replicate.is_distributed(created) else ()
        if copies:
            self._migrate_tpu_variables[id(copies[0].handle)] = weakref.ref(created)
        return created

    # ---- a user's run ----

    def _call_for_each_replica(self, fn, args, kwargs):
        """A user's ``run`` as the TPU runs it; TensorFlow's own calls as MirroredStrategy does."""
        asked, options, user_fn = tpu_replicate.take_asked_run(self)
        if not asked or tpu_replicate.compiling(self) or os.environ.get(tpu_replicate.PER_REPLICA_TRACES) == "1":
            return self._release_extended._call_for_each_replica(self, fn, args, kwargs)
        try:
            strategy = self._container_strategy()
            if tf.executing_eagerly():
                return tpu_replicate.eager_run(strategy, fn, args, kwargs, options, user_fn)
            return tpu_replicate.replicated_run(strategy, fn, args, kwargs, options)
        finally:
            tpu_replicate.run_taken()

    # ---- inputs: TensorFlow's own _check_spec where the release has it ----

    def _experimental_distribute_dataset(self, dataset, *args, **kwargs):
        check_spec = _check_spec_of_the_release()
        if check_spec is not None and _prefetched(_options_of(args, kwargs)):
            check_spec(self, dataset.element_spec)  # before distributing, as TensorFlow does
        return self._release_extended._experimental_distribute_dataset(self, dataset, *args, **kwargs)

    def _distribute_datasets_from_function(self, dataset_fn, *args, **kwargs):
        made = self._release_extended._distribute_datasets_from_function(self, dataset_fn, *args, **kwargs)
        return _checked_after(self, made, _options_of(args, kwargs))

    def _experimental_distribute_datasets_from_function(self, dataset_fn, *args, **kwargs):
        made = self._release_extended._experimental_distribute_datasets_from_function(
            self, dataset_fn, *args, **kwargs)
        return _checked_after(self, made, _options_of(args, kwargs))


def _make_class(base):
    """``TPUExtended``: ``base`` with :class:`_TPUOperations`' methods, those of :data:`OWNED` only
    where ``base`` has them (what the release's class lacks, its TPU's lacks too)."""
    methods = {name: value for name, value in vars(_TPUOperations).items()
               if callable(value) and (name not in OWNED or hasattr(base, name))}
    methods.update(emulated_tpu=True, _release_extended=base, __doc__="MirroredExtended of TF {} with the TPU's "
                   "cross-replica operations and refusals.".format(tf.__version__))
    return type("TPUExtended", (base,), methods)


def _checked_after(extended, made, options):
    """The spec of datasets a function made is known once it has run: checked then."""
    check_spec = _check_spec_of_the_release()
    if check_spec is not None and _prefetched(options):
        check_spec(extended, made.element_spec)
    return made


_FUNCTION_TYPES: Any = None


def _function_types():
    """(tf.function class, ConcreteFunction class) of the running TF."""
    global _FUNCTION_TYPES
    if _FUNCTION_TYPES is None:
        fn = tf.function(lambda: tf.constant(0))
        concrete = type(fn.get_concrete_function())
        for klass in concrete.__mro__:
            if klass.__name__ == "ConcreteFunction":
                concrete = klass
                break
        _FUNCTION_TYPES = (type(fn), concrete)
    return _FUNCTION_TYPES


def _is_a_tf_function(fn):
    function_type, concrete_type = _function_types()
    if isinstance(fn, (function_type, concrete_type)):
        return True
    # Not a callability test (B004): whether the object's __call__ is itself a tf.function.
    return callable(fn) and isinstance(getattr(fn, "__call__", None), function_type)  # noqa: B004


def refuse_eager_plain_function(fn, message):
    """Rule ``eager-plain-function``: raise ``NotImplementedError(message)`` when, executing
    eagerly, ``fn`` is neither a ``tf.function``, a ``ConcreteFunction``, nor a callable whose
    ``__call__`` is a ``tf.function`` (a TPU's ``run`` compiles what it is given)."""
    if tf.executing_eagerly() and not _is_a_tf_function(fn):
        raise NotImplementedError(message)


def become_tpu_extended(extended, device_assignment, resolver, hosts):
    """Make ``extended`` (an emulated TPUStrategy's MirroredExtended) the TPU's: its class, and the
    attributes TPUExtended has (hosts, replicas per host, the resolver, the device assignment)."""
    tpu_replicate.variables_read_the_first_copy()
    extended.__class__ = tpu_extended_class(type(extended))
    extended.num_hosts = hosts
    extended.num_replicas_per_host = device_assignment.num_replicas // hosts
    extended.experimental_enable_dynamic_batch_size = True
    extended.steps_per_run = 1
    extended._tpu_cluster_resolver = resolver
    extended._device_assignment = device_assignment
    tpu_replicate.start_computation(extended, device_assignment.num_replicas)


def relay_refusals(original):
    """A ``_merge_call`` for MirroredStrategy's replica contexts: for an emulated TPU's replica,
    its merge function runs with rule ``all-reduce-dtype`` on, and a refusal is raised as
    TensorFlow's ``TypeError`` in the replica's thread (where the user's ``all_reduce`` or
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
