"""The contexts a TPU builds its step in, as the emulation builds the one trace.

``tpu.replicate`` calls the replica function inside its ``TPUReplicateContext``: an XLA control-flow
context (TensorFlow's library takes its XLA paths there), in which ``tpu.outside_compilation``
marks ops for the TPU's host, and whose host ops on a TPU Node run on the TPU worker (its log gets
what they print).  :func:`replica_trace` gives the emulation's trace those three.

Python 3.7 syntax: TensorFlow 2.1.0 runs it.
"""

from __future__ import absolute_import, division, print_function

import contextlib
import itertools
import os
import threading

_TRACING = threading.local()  # .on: an emulated TPU's replica function is being traced here


@contextlib.contextmanager
def replica_trace(machine):
    """The replica function's trace as the TPU makes it: in an XLA context, with
    ``outside_compilation`` marking host ops, and host prints where ``machine``'s host puts them."""
    previous = getattr(_TRACING, "on", False)
    _TRACING.on = True
    try:
        with _in_xla_context(), _host_prints(machine):
            yield
    finally:
        _TRACING.on = previous


@contextlib.contextmanager
def _in_xla_context():
    """The trace inside an XLA control-flow context, as ``tpu.replicate`` builds the computation
    (its ``TPUReplicateContext`` is an ``XLAControlFlowContext``, entered before the computation
    is called: ``tpu.py`` at v2.1.0 and v2.4.1).  TensorFlow's own library asks for it
    (``control_flow_util.GraphOrParentsInXlaContext``) and then builds what XLA takes: ``cond_v2``
    outputs a branch's gradient intermediates directly instead of in Optionals, ``while_v2``
    wants ``maximum_iterations`` for the accumulators of a gradient, Keras's BatchNormalization
    leaves out the cond on the batch size.  The plain context, not the TPU's: that one also
    marks every op for the TPU's cluster, which the CPU cannot run."""
    from tensorflow.python.ops import control_flow_ops
    context = control_flow_ops.XLAControlFlowContext()
    context.Enter()
    try:
        yield
    finally:
        context.Exit()
        _lowered_for_this_cpu()


#: The functional control flow ops that TensorFlow lowers to Switch/Merge outside an XLA context.
FUNCTIONAL_CONTROL_FLOW = frozenset({"If", "StatelessIf", "While", "StatelessWhile"})


def _lowered_for_this_cpu():
    """The trace's conditionals and loops marked for lowering, as TensorFlow marks them outside an
    XLA context (``control_flow_util_v2.maybe_set_lowering_attr``, v2.1.0 to 2.21).  In the XLA
    context it leaves them functional, for XLA to compile; the emulation runs the trace on the
    CPU's executor, where TF 2.1.0 cannot place a functional ``If`` whose branches use a resource
    of another core (a summary writer: "Cannot place the graph because a reference or resource
    edge connects colocation groups").  Lowering changes no computation."""
    import tensorflow as tf
    from tensorflow.core.framework import attr_value_pb2
    from tensorflow.python.eager import context
    if context.context().function_call_options.executor_type == "SINGLE_THREADED_EXECUTOR":
        return  # TensorFlow does not lower for it either
    for op in tf.compat.v1.get_default_graph().get_operations():
        if op.type in FUNCTIONAL_CONTROL_FLOW and "_lower_using_switch_merge" not in op.node_def.attr:
            op._set_attr("_lower_using_switch_merge", attr_value_pb2.AttrValue(b=True))


def outside_compilation(original):
    """``tpu.outside_compilation`` as it works in a TPU's replicate context: the ops
    ``computation`` makes are marked for the TPU's host with TensorFlow's own
    ``OutsideCompilationV2Context`` (what ``outside_compilation`` enters inside a
    ``TPUReplicateContext``, ``tpu.py`` at v2.1.0 and v2.4.1); outside an emulated TPU's trace it is
    TensorFlow's."""
    counter = itertools.count()

    def outside(computation, *args, **kwargs):
        context_class = _outside_compilation_context()
        if not getattr(_TRACING, "on", False) or context_class is None:
            return original(computation, *args, **kwargs)
        context = context_class(str(next(counter)))
        context.Enter()
        try:
            return computation(*args, **kwargs)
        finally:
            context.Exit()
    outside.__doc__ = original.__doc__
    return outside


def _outside_compilation_context():
    import importlib
    for name in ("tensorflow.python.tpu.tpu_replication", "tensorflow.python.tpu.tpu",
                 "tensorflow_core.python.tpu.tpu"):
        try:
            found = getattr(importlib.import_module(name), "OutsideCompilationV2Context", None)
        except ImportError:
            continue
        if found is not None:
            return found
    return None


@contextlib.contextmanager
def _host_prints(machine):
    """``tf.print`` in the step as the TPU's host runs it: on a TPU Node the host is the TPU
    worker, whose log (not the client's output) gets what it prints."""
    if machine != "node":
        yield
        return
    from tensorflow.python.ops import gen_logging_ops
    original = gen_logging_ops.print_v2
    stream = "file://" + _worker_log()

    def print_v2(input, output_stream="stderr", *args, **kwargs):
        return original(input, stream, *args, **kwargs)
    gen_logging_ops.print_v2 = print_v2
    try:
        yield
    finally:
        gen_logging_ops.print_v2 = original


def _worker_log():
    """The TPU worker's log of this run (tpu_machine names it), its folder made."""
    try:
        from migrate_tpu.runtime.tpu import tpu_machine
        path = str(tpu_machine.worker_log())
    except (ImportError, AttributeError):  # a machine model without a worker log
        import tempfile
        path = os.path.join(tempfile.gettempdir(), "migrate-tpu-tpu-worker-{}.log".format(os.getpid()))
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    return path
