"""The replica computation as a TPUStrategy of the release builds it: traced once, compiled with
the TPU's rules, run on every emulated core.

A TPUStrategy's ``run`` hands the replica function to ``tpu.replicate``: the function is traced
once, in a TPU replica context whose replica id is an input of the computation (a ``Tensor``
without a static value), that one graph is compiled by XLA for the TPU, and the compiled program
runs on every core (``TPUExtended._tpu_function_creator``, ``tpu_strategy.py`` at v2.1.0 and
v2.4.1).  MirroredStrategy instead traces the function once per replica, in a thread each, with
the replica id a Python number.  This module gives the emulated TPUStrategy the TPU's way:

* **one trace** per ``run`` call in a traced function (per input signature when ``run`` is called
  eagerly with a ``tf.function``, which the TPU compiles as a whole: :func:`eager_run`), in a
  replica context whose ``replica_id_in_sync_group`` is that trace's input;
* **the TPU's compiler rules** checked on that one graph (:mod:`migrate_tpu.runtime.tpu.tpu_ops`):
  an op without an XLA kernel in the release fails the compilation with soft placement off and is
  moved to the TPU host with it on (automatic outside compilation), where a TPU Node's host has no
  Python and its output goes to the TPU worker's log;
* **the same graph on every core**: the traced function is called once per emulated core, each
  call on its core's device with that core's replica id and that core's copy of every
  distributed variable; all-reduces inside it are collective ops among the calls, as
  ``CrossReplicaSum`` is among a TPU's cores.  Input splitting, variables and ``regroup`` of the
  results stay TensorFlow's own.

Python 3.7 syntax: TensorFlow 2.1.0 runs it.
"""

from __future__ import absolute_import, division, print_function

import contextlib
import itertools
import threading
import time
import weakref
from typing import Any, Dict, List, Tuple

import numpy as np
import tensorflow as tf

from migrate_tpu.runtime import patches
from migrate_tpu.runtime.tpu import tpu_compiler, tpu_contexts, tpu_ops, tpu_rules
from migrate_tpu.runtime.program.autograph_scope import converted_as_run_converts
from migrate_tpu.runtime.tpu.tpu_system import STATE

try:  # TF >= 2.4
    from tensorflow.python.distribute import distribute_utils as _distribute_utils
except ImportError:  # TF 2.1 - 2.3
    _distribute_utils = None
from tensorflow.python.distribute import distribute_lib, reduce_util
from tensorflow.python.distribute import values as _values

#: Set to 1, the replica function is traced once per replica as MirroredStrategy does (for the
#: benchmark that compares the two ways; nothing else sets it).
PER_REPLICA_TRACES = "MIGRATE_TPU_PER_REPLICA_TRACES"

_COMPILING = threading.local()  # .extended: the emulated TPU whose replica function is being traced
_ASKED = threading.local()  # .run: (extended, options) of the user's run now on its way to the extended
_GROUP_KEYS = itertools.count(1000)  # one collective group per emulated strategy
_INSTANCE_KEYS = itertools.count(1)  # one collective instance per all-reduce in a trace


# --------------------------------------------------------------------------
# TensorFlow's helpers, wherever the release keeps them
# --------------------------------------------------------------------------


def _select_replica(index, structure):
    module = _distribute_utils if _distribute_utils is not None else _values
    return module.select_replica(index, structure)


def _regroup(extended, values):
    if _distribute_utils is not None:
        return _distribute_utils.regroup(values)
    device_map = getattr(extended, "_device_map", None)
    if device_map is not None:  # TF 2.1: values of a device map
        return _values.regroup(device_map, values)
    return _values.regroup(values)


def components(distributed) -> Tuple[Any, ...]:
    found = getattr(distributed, "_values", None)
    if found is None:
        found = getattr(distributed, "values", ())
    return tuple(found or ())


def is_distributed(value):
    return isinstance(value, _values.DistributedValues)


def compiling(extended):
    """Whether ``extended`` is tracing its replica function now (its reductions are the TPU's)."""
    return getattr(_COMPILING, "extended", None) is extended


@contextlib.contextmanager
def _compiling_for(extended):
    previous = getattr(_COMPILING, "extended", None)
    _COMPILING.extended = extended
    try:
        yield
    finally:
        _COMPILING.extended = previous


# --------------------------------------------------------------------------
# The TPU's replica context and cross-replica operations
# --------------------------------------------------------------------------


class TPUReplicaContext(distribute_lib.ReplicaContext):
    """The replica context of the one trace: the replica id is the computation's input (no
    Python branch can read it), merge functions run at once in this thread with plain tensors,
    as in a TPU computation."""

    def __init__(self, strategy, replica_id):
        distribute_lib.ReplicaContext.__init__(self, strategy, replica_id_in_sync_group=replica_id)
        self._tpu_replica_id = replica_id

    @property
    def replica_id_in_sync_group(self):
        return self._tpu_replica_id

    @property
    def _replica_id(self):
        # what distributed variables read to pick their replica's copy (TF >= 2.2): the first
        # core's, which each core's call replaces by its own (_captures_for); TF 2.1 takes the
        # first copy for a replica id without a static value by itself
        return 0

    def _merge_call(self, merge_fn, args, kwargs):
        # the base class's: the merge function, in cross-replica mode, once (TF 2.1 - 2.21)
        return distribute_lib.ReplicaContext._merge_call(self, merge_fn, args, kwargs)


def reduce_in_computation(extended, reduce_op, value):
    """An all-reduce inside the computation: the TPU scales a MEAN by 1/N and sums with
    ``CrossReplicaSum`` (``TPUExtended._reduce_to`` at v2.1.0 and v2.4.1), refusing the dtypes
    that op does not take; here a collective sum among the cores' calls."""
    from tensorflow.python.ops import collective_ops
    if is_distributed(value):
        value = components(value)[0]
    if isinstance(value, tf.Variable):
        value = value.read_value()
    if isinstance(value, tf.IndexedSlices):
        value = tf.convert_to_tensor(value)
    message = tpu_rules.refusal_of(value, STATE.tf_api)
    if message:
        raise TypeError(message)
    op = reduce_util.ReduceOp.from_variable_aggregation(reduce_op) if not isinstance(
        reduce_op, reduce_util.ReduceOp) else reduce_op
    if op == reduce_util.ReduceOp.MEAN:
        value = value * (1. / extended._num_replicas_in_sync_emulated)
    elif op != reduce_util.ReduceOp.SUM:
        raise NotImplementedError("Currently only support sum & mean in TPUStrategy.")
    return collective_ops.all_reduce(value, extended._num_replicas_in_sync_emulated,
                                     extended._migrate_tpu_group_key, next(_INSTANCE_KEYS), "Add", "Id",
                                     subdiv_offsets=(0,))


def gather_in_computation(extended, value, axis):
    """An all-gather inside the computation: every core's value concatenated along ``axis``
    in replica order; here a collective gather among the cores' calls (along the first axis, the
    others moved there and back)."""
    from tensorflow.python.ops import collective_ops
    if is_distributed(value):
        value = components(value)[0]
    value = tf.convert_to_tensor(value)
    rank = value.shape.rank
    axis = axis + rank if axis < 0 else axis
    order = [axis] + [d for d in range(rank) if d != axis]
    moved = tf.transpose(value, order) if axis else value
    gathered = collective_ops.all_gather(moved, extended._num_replicas_in_sync_emulated,
                                         extended._migrate_tpu_group_key, next(_INSTANCE_KEYS))
    if not axis:
        return gathered
    back = [order.index(d) for d in range(rank)]
    return tf.transpose(gathered, back)


def first_copies(structure):
    """Each distributed value of ``structure`` as its first replica's copy (the trace's; the
    calls of the other cores get their own copies in its place)."""
    return tf.nest.map_structure(lambda x: components(x)[0] if is_distributed(x) else x, structure)


def update_in_computation(var, fn, args, kwargs, group):
    """``extended.update`` inside the computation: one update of this core's copy (the TPU
    updates its replicated variable once: ``TPUExtended._update``)."""
    copy = components(var)[0] if is_distributed(var) else var
    with _update_context(copy):
        result = fn(copy, *first_copies(tuple(args)), **first_copies(dict(kwargs or {})))
    return result if group else (result,)


@contextlib.contextmanager
def run_asked(extended, options, user_fn=None):
    """A user's ``run`` (``experimental_run_v2``) of an emulated TPU is under way: the
    ``call_for_each_replica`` it reaches (through ``tf.distribute.Strategy.run``, and the
    recorder of verify where it wraps that) runs the replica function as the TPU does.  Other
    callers of ``call_for_each_replica`` (TensorFlow's own) keep MirroredStrategy's.
    ``user_fn`` is the function the user passed: an eager run's compiled call is cached by it,
    as ``_tpu_function_creator`` caches by the function ``run`` was given (what reaches
    ``call_for_each_replica`` is a wrapper made anew at each call)."""
    previous = getattr(_ASKED, "run", None)
    _ASKED.run = (extended, options, user_fn)
    try:
        yield
    finally:
        _ASKED.run = previous


def run_taken():
    """The user's run now under way has reached its extended object."""
    _ASKED.run = None


def take_asked_run(extended):
    asked = getattr(_ASKED, "run", None)
    if asked is None or asked[0] is not extended:
        return False, None, None
    _ASKED.run = None
    return True, asked[1], asked[2]


def _update_context(copy):
    """TensorFlow's context of an update of the first copy: by replica id from TF 2.2 on, by
    device in TF 2.1."""
    import inspect
    parameters = inspect.signature(distribute_lib.UpdateContext.__init__).parameters
    return distribute_lib.UpdateContext(copy.device if "device" in parameters else 0)


_REPLICA_ID_READERS = (("values", "_get_current_replica_id_as_int"),      # TF 2.2
                       ("values_util", "get_current_replica_id_as_int"))  # TF 2.3 on


def variables_read_the_first_copy():
    """TF 2.2 and 2.3 pick a distributed variable's copy by the replica context's public
    ``replica_id_in_sync_group`` (2.4 on: ``_replica_id``, which the TPU context answers): in the
    one trace that is a tensor, so tell them the first copy, as ``_replica_id`` does."""
    import importlib
    for module_name, name in _REPLICA_ID_READERS:
        try:
            module = importlib.import_module("tensorflow.python.distribute." + module_name)
        except ImportError:
            continue
        original = getattr(module, name, None)
        if original is None or getattr(original, "_migrate_tpu_first_copy", False):
            continue

        def read(original=original):
            if isinstance(tf.distribute.get_replica_context(), TPUReplicaContext):
                return 0
            return original()
        read._migrate_tpu_first_copy = True  # type: ignore[attr-defined]
        patches.patch("tpu_replicate", module, name, read)  # undone with the emulation


def start_computation(extended, num_replicas):
    """What the one trace of ``extended`` (the TPU's, ``tpu_extended``) needs: the number of
    cores, one collective group, and its distributed variables by their first copy's handle."""
    extended._num_replicas_in_sync_emulated = num_replicas
    extended._migrate_tpu_group_key = next(_GROUP_KEYS)
    extended._migrate_tpu_variables = {}  # id(first copy's handle) -> the distributed variable


# --------------------------------------------------------------------------
# One trace
# --------------------------------------------------------------------------


#: Python values ``tpu.replicate`` turns into inputs of the computation; other objects (None, a
#: model, a function) stay closed over, as the emulation cannot say how the TPU refused them.
_PLAIN_VALUES = (bool, int, float, complex, str, bytes, np.generic, np.ndarray)


class _Leaves(object):
    """The replica's arguments as the computation's tensor inputs and the rest (Python values,
    variables, ...), which the trace closes over."""

    def __init__(self, structure):
        self.structure = structure
        self.leaves = tf.nest.flatten(structure)
        self.parts: List[Any] = []  # per leaf: None (closed over) or its component tensors
        for leaf in self.leaves:
            self.parts.append(self.components(leaf))

    @staticmethod
    def components(leaf):
        if isinstance(leaf, tf.Variable) or is_distributed(leaf):
            return None
        if tf.is_tensor(leaf) or isinstance(leaf, (tf.SparseTensor, tf.RaggedTensor)):
            return [t for t in tf.nest.flatten(leaf, expand_composites=True) if tf.is_tensor(t)]
        if isinstance(leaf, _PLAIN_VALUES):
            # tpu.replicate converts every input to a tensor (split_compile_and_replicate at
            # v2.1.0 and v2.4.1): a Python number is an input of the computation, not a constant
            return [tf.convert_to_tensor(leaf)]
        return None

    def tensors(self):
        return [t for part in self.parts if part for t in part]

    def rebuild(self, tensors):
        tensors = list(tensors)
        rebuilt = []
        for leaf, part in zip(self.leaves, self.parts):
            if not part:
                rebuilt.append(leaf)
                continue
            taken, tensors = tensors[:len(part)], tensors[len(part):]
            if isinstance(leaf, _PLAIN_VALUES) or (
                    tf.is_tensor(leaf) and not isinstance(leaf, (tf.SparseTensor, tf.RaggedTensor))):
                rebuilt.append(taken[0])
            else:
                rebuilt.append(tf.nest.pack_sequence_as(leaf, taken, expand_composites=True))
        return tf.nest.pack_sequence_as(self.structure, rebuilt)


def _relaxed_specs(per_replica_tensors):
    """One TensorSpec per input: a dimension that differs between cores (or is unknown) is
    dynamic, as ``tpu.replicate``'s dynamic padder makes it; equal ones stay static."""
    specs = []
    for position, first in enumerate(per_replica_tensors[0]):
        shape = first.shape
        for tensors in per_replica_tensors[1:]:
            shape = shape.most_specific_compatible_shape(tensors[position].shape)
        specs.append(tf.TensorSpec(shape, first.dtype))
    return specs


class _Outputs(object):
    """The replica function's result as the computation's outputs: tensors (Python numbers
    become tensors, as ``tpu.replicate`` makes them), the rest kept as traced."""

    def __init__(self):
        self.structure = None
        self.is_output: List[bool] = []

    def flat(self, result):
        if isinstance(result, list):  # tpu.replicate drops operations from a list result
            result = [r for r in result if not isinstance(r, tf.Operation)]
        self.structure = result
        flat = []
        self.is_output = []
        for leaf in tf.nest.flatten(result, expand_composites=True):
            if leaf is None or isinstance(leaf, tf.Operation):
                self.is_output.append(False)
                continue
            self.is_output.append(True)
            flat.append(tf.convert_to_tensor(leaf))
        return flat

    def rebuild(self, tensors):
        if self.structure is None or isinstance(self.structure, tf.Operation):
            return None
        tensors = list(tensors)
        leaves = []
        for is_output in self.is_output:
            leaves.append(tensors.pop(0) if is_output else None)
        return tf.nest.pack_sequence_as(self.structure, leaves, expand_composites=True)


def _trace(strategy, fn, first_leaves, specs, outputs, machine):
    """The replica function traced once into a concrete function of (replica id, *inputs)."""
    extended = strategy.extended
    fn = converted_as_run_converts(fn)

    def replica_computation(replica_id, *tensors):
        args, kwargs = first_leaves.rebuild(tensors)
        # A TPU's computation starts once all its inputs are there (TPUExecute takes them all):
        # every op of the replica function waits for the core's inputs, where TensorFlow, once
        # it inlines the call, would start an op that reads none of them (a dropout's
        # RandomUniform of a static shape) at once, even in a step whose input then ends the
        # epoch (OutOfRange): how many cores drew from their generators before the step
        # failed then differed from run to run.
        with tf.control_dependencies([replica_id] + list(tensors)):
            with _compiling_for(extended), tpu_contexts.replica_trace(machine), TPUReplicaContext(strategy, replica_id):
                result = fn(*args, **kwargs)
        return outputs.flat(result)

    computation = tf.function(tf.autograph.experimental.do_not_convert(replica_computation), autograph=False)
    return computation.get_concrete_function(tf.TensorSpec([], tf.int32), *specs)


# --------------------------------------------------------------------------
# The same graph on every core
# --------------------------------------------------------------------------


def _captures_for(extended, concrete, index):
    """The traced function's captured inputs for core ``index``: each distributed variable's
    first copy replaced by that core's copy."""
    known: Dict[int, Any] = extended._migrate_tpu_variables
    captures = []
    for captured in concrete.captured_inputs:
        ref = known.get(id(captured))
        distributed = ref() if ref is not None else None
        if distributed is not None and index:
            captured = components(distributed)[index].handle
        captures.append(captured)
    return captures


def _shared_resources(extended, concrete):
    """Positions of the captured resources that every core's call touches: a variable made
    outside the strategy's scope, a summary writer, a table (not a distributed variable's copy)."""
    known: Dict[int, Any] = extended._migrate_tpu_variables
    return [position for position, captured in enumerate(concrete.captured_inputs)
            if captured.dtype == tf.resource and id(captured) not in known]


def _unchained(captures, shared):
    """Each core's captures, the cores after the first reading the shared resources through an
    identity of their own.  The enclosing function's automatic control dependencies order every
    use of one resource after the last: they would chain the cores' calls one after another,
    and the first core would wait in its all-reduce for a core that waits for it to finish.
    The identities are made before any call, so no core's call waits for another's; each is
    itself a use of the resource, so it comes after what the program did to it before the step."""
    for per_core in captures[1:]:
        for position in shared:
            per_core[position] = tf.identity(per_core[position], name=_UNCHAINED)
    return captures


_UNCHAINED = "migrate_tpu_unchained_resource"


def _unchained_resolver(op, resource_reads, resource_writes):
    """For the automatic control dependencies of TF 2.2 on: a resource a later core's call reads
    through one of ``_unchained``'s identities is not that call's to order by (from some release
    on they follow an Identity back to its input, which would chain the cores again)."""
    changed = False
    for tensor in op.inputs:
        if tensor.dtype != tf.resource or tensor.op.type != "Identity":
            continue
        if not tensor.op.name.rsplit("/", 1)[-1].startswith(_UNCHAINED):
            continue
        for hidden in (tensor, tensor.op.inputs[0]):
            for found in (resource_reads, resource_writes):
                if hidden in found:
                    found.discard(hidden)
                    changed = True
    return changed


def _register_unchained_resolver():
    from tensorflow.python.framework import auto_control_deps  # TF 2.1.0 to 2.21 have it
    register = getattr(auto_control_deps, "register_acd_resource_resolver", None)
    if register is None:  # TF 2.1: no resolvers, and an Identity hides the resource
        return
    try:
        register(_unchained_resolver)
    except KeyError:  # registered already in this process
        pass


_register_unchained_resolver()


def _after_every_core(first_core_captures, shared, made_by_later_cores):
    """What the program does with a shared resource after the step waits for every core's
    call, not only the first's: an identity of each resource, which the automatic control
    dependencies take for its last use, made after the later cores' calls."""
    if not shared or not made_by_later_cores:
        return
    with tf.control_dependencies(made_by_later_cores):
        for position in shared:
            tf.identity(first_core_captures[position])


def replicated_run(strategy, fn, args, kwargs, options=None):
    """``strategy.run(fn, args, kwargs)`` as the TPU runs it, in a traced function."""
    extended = strategy.extended
    kwargs = kwargs or {}
    args = tuple(args or ())
    while args and args[-1] is None:  # as TPUStrategy drops trailing Nones
        args = args[:-1]
    count = extended._num_replicas_in_sync_emulated
    per_replica = [_Leaves((_select_replica(i, args), _select_replica(i, kwargs))) for i in range(count)]
    specs = _relaxed_specs([leaves.tensors() for leaves in per_replica])
    refusal = tpu_ops.padded_input_refusal(specs, _dynamic_batch(extended, options))
    if refusal is not None:
        tpu_ops.raise_refusal(refusal)
    outputs = _Outputs()
    machine = _machine()
    started = time.perf_counter()
    concrete = _trace(strategy, fn, per_replica[0], specs, outputs, machine)
    traced = time.perf_counter()
    refusal, moved = tpu_ops.judge(tpu_ops.findings(concrete.graph, STATE.tf_api),
                                   tf.config.get_soft_device_placement(), machine)
    checked = time.perf_counter()
    if refusal is None and not moved and not tpu_ops.marked_for_host(concrete.graph):
        # with ops on the host, XLA is given the rest only, which this copy cannot cut out
        refusal = tpu_compiler.refusal(concrete, [t.shape for t in per_replica[0].tensors()])
    COST["traces"] += 1
    COST["trace_s"] += traced - started
    COST["check_s"] += checked - traced
    COST["compile_s"] += time.perf_counter() - checked
    if refusal is not None:
        tpu_ops.raise_refusal(refusal)
    results = []
    devices = extended.worker_devices
    shared = _shared_resources(extended, concrete)
    captures = _unchained([_captures_for(extended, concrete, index) for index in range(count)], shared)
    graph = tf.compat.v1.get_default_graph()
    made_by_later_cores = []
    for index in range(count):
        made_before = len(graph.get_operations())
        with tf.device(devices[index]):
            flat = concrete._call_flat([tf.constant(index, tf.int32)] + per_replica[index].tensors(),
                                       captures[index])
            if isinstance(flat, tf.Operation) or flat is None:
                flat = []
            _must_run([t for t in tf.nest.flatten(flat) if isinstance(t, tf.Tensor)])
        if index:
            made_by_later_cores.extend(graph.get_operations()[made_before:])
        results.append(outputs.rebuild(tf.nest.flatten(flat)))
    _after_every_core(captures[0], shared, made_by_later_cores)
    if outputs.structure is None or isinstance(outputs.structure, tf.Operation):
        return None
    return _regroup(extended, results)


def _must_run(tensors):
    """Make the traced function compute one core's results whether or not the program uses them:
    every core takes part in the all-reduces, and a core whose results were pruned (a step that
    returns the first core's value alone) would leave the others waiting, where a TPU runs all its
    cores.  A control edge to the core's call does not keep its results once TensorFlow inlines the
    call, so an IdentityN of them becomes one of the function's control outputs."""
    graph = tf.compat.v1.get_default_graph()
    control_outputs = getattr(graph, "control_outputs", None)
    if tensors and isinstance(control_outputs, list):
        control_outputs.append(tf.identity_n(tensors)[0].op)


def _dynamic_batch(extended, options):
    """Whether the dynamic padder is on: ``RunOptions`` from TF 2.4, else the strategy's switch."""
    if options is not None and hasattr(options, "experimental_enable_dynamic_batch_size"):
        return bool(options.experimental_enable_dynamic_batch_size)
    return bool(getattr(extended, "experimental_enable_dynamic_batch_size", True))


def _machine():
    """The machine the emulated TPU is attached to: ``node`` (TPU Node) or ``vm``."""
    return getattr(STATE, "machine", None) or "node"


#: What the compile step cost in this process (benchmarks/tpu_compile.py reads it): traces made,
#: seconds tracing the replica function, seconds checking its ops, seconds lowering it with XLA.
COST = {"traces": 0, "trace_s": 0.0, "check_s": 0.0, "compile_s": 0.0}

_EAGER_CALLS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def eager_run(strategy, fn, args, kwargs, options=None, user_fn=None):
    """An eager ``run`` of a ``tf.function``: the TPU compiles the call as a whole, one
    ``tf.function`` per replica function and strategy (``user_fn``, the one ``run`` was given,
    when known), traced once per input signature (``_tpu_function_creator``'s cache, v2.1.0
    and v2.4.1)."""
    per_strategy = _EAGER_CALLS.setdefault(strategy, {})
    owner = fn if user_fn is None else user_fn
    key = id(owner)
    entry = per_strategy.get(key)
    if entry is None or entry[0]() is not owner:
        def whole_call(call_args, call_kwargs):
            return replicated_run(strategy, fn, call_args, call_kwargs, options)
        # the replica function is a tf.function (an eager run refuses others): it converts itself
        entry = (_weak(owner), tf.function(whole_call, autograph=False))
        per_strategy[key] = entry
    return entry[1](tuple(args or ()), dict(kwargs or {}))


def _weak(fn):
    try:
        return weakref.ref(fn)
    except TypeError:
        return lambda: fn
