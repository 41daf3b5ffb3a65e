"""XLA's verdict on the one trace of a TPU step: the refusals the TPU's compiler made that no op
list can see.

A TPU hands the replicated computation to XLA, which refuses what it cannot give static shapes
and constants to, whatever ops it holds: an op input that must be a compile-time constant but is
an input of the computation (``tpu.replicate`` converts every argument of ``run`` to a tensor:
``tpu.py`` at v2.1.0 and v2.4.1, ``split_compile_and_replicate``), a loop whose body changes the
shape of what it carries, a TensorList of no fixed size (a ``tf.while_loop`` without
``maximum_iterations`` whose gradient the step takes).  The CPU and the TPU share these
tf2xla kernels and their checks, so XLA on the CPU gives the TPU's words.

The trace is lowered to HLO (``experimental_get_compiler_ir``, from TF 2.4; no code is generated
and nothing runs) as a copy in which

* the inputs of the computation are read from variables, so none is a compile-time constant (on
  the TPU they are replicated inputs), with the first core's shapes (a dimension the trace does
  not know is given 2: the dynamic padder's bound is not known here);
* the emulation's collectives, which stand in for the TPU's ``CrossReplicaSum`` and have no XLA
  kernel on the CPU, are identities.

Only the refusals listed in :data:`VERDICTS` are the TPU's: any other failure of this copy (an op
the CPU's XLA lacks and the TPU has, a shape the stand-in collectives changed) says nothing
about the TPU, and the step runs.  A false refusal of a real program is worse than a miss.

Python 3.7 syntax; TensorFlow is imported by the functions that need it.
"""

from __future__ import absolute_import, division, print_function

import itertools
import re
from typing import Any, List, NamedTuple, Optional, Sequence

#: The emulation's stand-ins for the TPU's cross-replica ops (judged as identities).
STAND_IN_COLLECTIVES = frozenset({"CollectiveReduce", "CollectiveReduceV2", "CollectiveReduceV3",
                                  "CollectiveGather", "CollectiveGatherV2", "CollectiveBcastSend",
                                  "CollectiveBcastRecv"})


class Verdict(NamedTuple):
    """One kind of refusal XLA makes for the TPU: its rule (a :data:`tpu_rules.TPU_RULES` key, which
    holds its sources) and the words that identify it in XLA's message."""
    name: str
    pattern: str


VERDICTS = (
    Verdict("compile-time-constant", r"must be a compile-time constant"),
    Verdict("loop-shapes", r"shapes of loop body do not match|Input shapes of loop body do not match"),
    Verdict("fixed-list-size", r"XLA compilation requires a fixed tensor list size"),
)


def verdict_of(message) -> Optional[Verdict]:
    """The TPU refusal ``message`` (XLA's) is, or None for a failure that says nothing of the TPU."""
    for verdict in VERDICTS:
        if re.search(verdict.pattern, message or ""):
            return verdict
    return None


def _without_stand_ins(graph_def):
    """``graph_def`` (its functions too) with the emulation's collectives as identities of their
    first input."""
    def rewrite(nodes):
        renamed = []
        for node in nodes:
            if node.op not in STAND_IN_COLLECTIVES:
                continue
            data = [name for name in node.input if not name.startswith("^")]
            control = [name for name in node.input if name.startswith("^")]
            dtype = node.attr["T"].type if "T" in node.attr else None
            node.op = "Identity"
            for key in list(node.attr):
                del node.attr[key]
            if dtype is not None:
                node.attr["T"].type = dtype
            del node.input[:]
            node.input.extend(data[:1] + control)
            renamed.append(node.name)
        return renamed

    def output_named(text, renamed):
        # inside a function an output is "node:arg:index": the collectives' arg is "data",
        # an Identity's "output"
        for name in renamed:
            text = text.replace(name + ":data:", name + ":output:")
        return text

    rewrite(graph_def.node)
    _renamed_functions(graph_def)
    for function in graph_def.library.function:
        renamed = rewrite(function.node_def)
        if not renamed:
            continue
        for node in function.node_def:
            inputs = [output_named(name, renamed) for name in node.input]
            del node.input[:]
            node.input.extend(inputs)
        for key in list(function.ret):
            function.ret[key] = output_named(function.ret[key], renamed)
    return graph_def


_COPIES = itertools.count(1)


def _renamed_functions(graph_def):
    """Every function of ``graph_def``'s library under a name of its own, each reference to it
    too: the rewritten copies would otherwise clash with the trace's functions, which the
    runtime already holds under those names."""
    suffix = "_migrate_tpu_judged_{}".format(next(_COPIES))
    names = {function.signature.name for function in graph_def.library.function}

    def renamed_attrs(nodes):
        for node in nodes:
            for value in node.attr.values():
                if value.HasField("func") and value.func.name in names:
                    value.func.name += suffix
                for func in value.list.func:
                    if func.name in names:
                        func.name += suffix
            if node.op in names:  # a function called as an op
                node.op += suffix

    renamed_attrs(graph_def.node)
    for function in graph_def.library.function:
        function.signature.name += suffix
        renamed_attrs(function.node_def)
    for gradient in graph_def.library.gradient:
        if gradient.function_name in names:
            gradient.function_name += suffix
        if gradient.gradient_func in names:
            gradient.gradient_func += suffix


def _concrete_shape(shape) -> List[int]:
    dims = shape.as_list() if shape.rank is not None else []
    return [2 if d is None else d for d in dims]


def lower(concrete, first_shapes: Sequence[Any]) -> Optional[str]:
    """XLA's error lowering ``concrete`` (the trace, inputs ``(replica id, *inputs)``) with the
    first core's input shapes, or None where it lowers (or cannot be judged here)."""
    import tensorflow as tf
    from tensorflow.python.eager import wrap_function
    inputs = list(concrete.inputs)
    captured = list(concrete.captured_inputs)
    own = len(inputs) - len(captured)
    if own != len(first_shapes) + 1 or any(not _is_eager(value) for value in captured):
        return None  # a capture of an enclosing graph: no value to lower it with here
    shapes = [tf.TensorShape([])] + [tf.TensorShape(_concrete_shape(shape)) for shape in first_shapes]
    dtypes = [tensor.dtype for tensor in inputs[:own]]
    if any(not (dtype.is_floating or dtype.is_integer or dtype.is_bool) for dtype in dtypes):
        return None  # a string or variant input: the TPU keeps such values on its host
    graph_def = _without_stand_ins(concrete.graph.as_graph_def())
    with tf.init_scope():
        pruned = wrap_function.function_from_graph_def(
            graph_def, [t.name for t in inputs], [t.name for t in concrete.outputs])

        def judged():
            values = [_not_a_constant(shape, dtype) for shape, dtype in zip(shapes, dtypes)]
            return pruned(*(values + captured))
        try:
            _to_hlo(_compiled(judged).get_concrete_function())
        except Exception as error:  # XLA's refusal comes as an InvalidArgumentError or ValueError
            return str(error)
    return None


#: The device the judged copy is lowered for (the CPU's XLA: it shares the TPU's tf2xla kernels).
_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


def _to_hlo(concrete):
    """Lower ``concrete`` (no arguments of its own) to HLO through the eager context: what
    ``experimental_get_compiler_ir`` does, without the random op it runs to find a device (which
    would move the program's own random seeds)."""
    import inspect
    from tensorflow.python.eager import context
    get = context.context().get_compiler_ir
    captured = list(concrete.captured_inputs)
    if "flat_args" in inspect.signature(get).parameters:  # TF >= 2.13
        return get(device_name=_DEVICE, platform_name=None, function_name=concrete.name, flat_args=[],
                   captured_inputs=captured, stage="hlo")
    return get(device_name=_DEVICE, function_name=concrete.name, args=captured, stage="hlo")


def _not_a_constant(shape, dtype):
    """Zeros of ``shape`` that XLA cannot fold into a constant (they come from a random op), as
    a replicated input of the TPU computation is none.  Not an argument of the judged function:
    XLA would take an argument's value as the constant it needs; nor a variable's value: TF
    2.4.1's IR export stops on a resource that a constant is needed from."""
    import tensorflow as tf
    noise = tf.random.uniform(shape, seed=1)  # an op seed: the program's seed sequence stays as it is
    if dtype.is_bool:
        return noise < 0.0
    return tf.cast(noise * 0.0, dtype)


def _compiled(fn):
    import tensorflow as tf
    try:
        return tf.function(fn, jit_compile=True, autograph=False)
    except TypeError:  # TF 2.4: the argument's earlier name
        return tf.function(fn, experimental_compile=True, autograph=False)


def _is_eager(value):
    return hasattr(value, "numpy") or type(value).__name__ == "EagerTensor"


def available():
    """Whether this TensorFlow can lower a function to HLO without running it (TF >= 2.4)."""
    from tensorflow.python.eager import context
    return callable(getattr(context.context(), "get_compiler_ir", None))


def _node_of(message):
    found = re.search(r"node `?([\w/.\-]+)", message or "")
    return found.group(1) if found else None


def _user_line(concrete, node):
    """The user's line that made ``node`` of the trace (or of a function it calls), or None."""
    from migrate_tpu.runtime.tpu import tpu_ops
    if not node:
        return None
    short = node.rsplit("/", 1)[-1]
    for _owner, op in tpu_ops.ops_of(concrete.graph):
        if op.name == node or op.name.endswith("/" + short) or op.name == short:
            line = tpu_ops.user_line_of(op)
            if line:
                return line
    return None


def _first_line(message):
    """XLA's sentence, without the wrapper words of the IR call."""
    text = (message or "").strip()
    text = re.sub(r"^Failed getting HLO text: '?", "", text)
    text = text.splitlines()[0] if text else text
    return text.replace(_CALL_SCOPE, "")  # the judged copy's call of the trace, not the TPU's


#: The name scope the judged copy's call of the trace adds to every node name.
_CALL_SCOPE = "PartitionedCall/"


def refusal(concrete, first_shapes):
    """The TPU compiler's refusal of the trace (a ``tpu_ops.Refusal``), or None where XLA takes it
    (or cannot judge it on this TensorFlow)."""
    from migrate_tpu.runtime.tpu import tpu_ops, tpu_rules
    if not available():
        return None
    message = lower(concrete, first_shapes)
    verdict = verdict_of(message)
    if verdict is None:
        return None
    words = _first_line(message)
    line = _user_line(concrete, _node_of(message))
    where = " (created at {})".format(line) if line else ""
    return tpu_ops.Refusal(verdict.name, tpu_rules.error_of(verdict.name),
                           "Compilation failure: {}{}\n\tTPU compilation failed".format(words, where))
