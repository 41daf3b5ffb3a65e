"""The TPU compiler's rules for the ops of a replica function (rules ``no-kernel``,
``python-on-node``, ``variant-stays`` and ``padded-string`` of :mod:`tpu_rules`'s table), the
release's op lists they read, and the check that applies them to the one trace of
:mod:`migrate_tpu.runtime.tpu.tpu_replicate`.

What a TPU of the release did with an op of the step:

* an op with an XLA kernel in the release is compiled (the lists in ``xla_ops/<release>.txt`` are
  TensorFlow's own kernel registry of that release's wheel, written by ``scripts/xla-op-lists``);
* an op without one fails the compilation when soft placement is off (``InvalidArgumentError:
  Compilation failure: Detected unsupported operations when trying to compile graph ... on
  XLA_TPU_JIT``, tensorflow/tpu#176; ``tpu_strategy_test.test_recover_from_compilation_failures``)
  and is moved to the TPU host when it is on (automatic outside compilation: ``tpu.py`` passes
  ``allow_soft_placement`` for it at v2.1.0 line 1003 and v2.4.1 line 1236; soft placement is on
  by default in TF 2);
* on the host, an op that runs the client's Python (``tf.py_function``, ``tf.numpy_function``)
  fails on a TPU Node, whose host is the TPU worker, with no Python of the user's
  (tensorflow#30818: ``No registered 'EagerPyFunc' OpKernel for CPU devices``); a TPU VM's host
  is the client, and it runs;
* an op without an XLA kernel that takes or makes a ``variant`` value (a TensorList being
  resized) cannot move to the host: the value exists only inside the TPU computation.  Inferred
  from the XLA probe (``TensorListResize`` has no XLA kernel at v2.1.0 or v2.4.1) and the
  padding rule below; the TPU's exact words were not found, so the error says what it is;
* an input of the computation whose dtype the TPU cannot hold (a string) and whose shape the
  dynamic padder would pad fails the compilation (``InternalError``,
  ``tpu_strategy_test.test_dynamic_shape_with_outside_compilation_failure`` at v2.4.1).

Python 3.7 syntax; TensorFlow is imported by the functions that need it, so the rules can be
read and tested without it.
"""

from __future__ import absolute_import, division, print_function

import os
from typing import Any, Dict, FrozenSet, Iterator, List, NamedTuple, Optional, Tuple

from migrate_tpu.runtime.program.user_code import user_line_of_stack
from migrate_tpu.runtime.tpu.tpu_rules import error_of, release_of

_LISTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "xla_ops")

#: Ops a traced function holds that are not computation: its arguments and results, and the
#: collectives this emulation uses in place of the TPU's CrossReplicaSum.
NOT_COMPILED = frozenset({"Placeholder", "_Arg", "_Retval", "CollectiveReduce", "CollectiveReduceV2",
                          "CollectiveReduceV3", "CollectiveGather", "CollectiveGatherV2"})

#: Ops whose kernel calls back into the client's Python interpreter.
PYTHON_OPS = frozenset({"EagerPyFunc", "PyFunc", "PyFuncStateless"})

#: Ops that write to the process's output streams or files from the host.
PRINT_OPS = frozenset({"PrintV2", "Print"})

#: Ops the TPU backend compiles with kernels of its own that the CPU's XLA lacks (tf2xla's
#: TPU-only ``where_op.cc`` and ``unique_op.cc``, written in early 2020 for bounded dynamic
#: shapes: "Dynamic padder will handle the dynamic dimension").  Which release first shipped them
#: was not established from the sources read; they are taken as present from 2.2 on, so that no
#: step of 2.2-2.4 is refused for them (a false alarm is as bad as a miss), and absent in 2.1.0,
#: released before they were written (the XLA probe at v2.1.0 finds neither).
TPU_ONLY_OPS = {"2.1": frozenset(), "2.2": frozenset({"Where", "Unique"}),
                "2.3": frozenset({"Where", "Unique"}), "2.4": frozenset({"Where", "Unique"})}

#: An op that later releases trace where the release traced one without an XLA kernel, by the
#: attribute that says so: TF 2.21 grows a ``TensorArray(dynamic_size=True)`` with
#: ``TensorListSetItem(resize_if_index_out_of_bounds=True)`` where TF 2.1.0-2.4.1 traced
#: ``TensorListResize`` (checked by tracing the same loop on each interpreter).
RELEASE_EQUIVALENTS = {("TensorListSetItem", "resize_if_index_out_of_bounds"): "TensorListResize"}

#: dtypes a TPU computation cannot hold as an input it pads (TensorFlow's names)
UNPADDABLE_INPUT_TYPES = frozenset({"string", "variant", "resource"})


_OP_LISTS: Dict[str, FrozenSet[str]] = {}


def xla_ops(tf_api):
    """The ops the release of surface ``tf_api`` compiles for the TPU: its XLA kernels and the
    TPU's own (:data:`TPU_ONLY_OPS`)."""
    release = release_of(tf_api)
    found = _OP_LISTS.get(release)
    if found is None:
        with open(os.path.join(_LISTS, release + ".txt")) as handle:
            found = frozenset(line.strip() for line in handle if line.strip() and not line.startswith("#"))
        found = found | TPU_ONLY_OPS[release]
        _OP_LISTS[release] = found
    return found


class Finding(NamedTuple):
    """An op of the trace that the TPU handles otherwise than a CPU: its type, node name, the
    function graph it is in, and the user's line that made it (None where no user frame is
    known)."""
    op_type: str
    node: str
    graph: str
    line: Optional[str]
    variant: bool
    outside: bool = False  # marked for the host by the program (``tpu.outside_compilation``)


def _stack(op):
    frames: List[Tuple[str, int]] = []
    try:
        trace = op.traceback
    except Exception:  # an op without a Python stack (imported from a FunctionDef)
        return frames
    for frame in trace or ():
        if isinstance(frame, tuple):
            frames.append((frame[0], frame[1]))
        else:
            frames.append((getattr(frame, "filename", ""), getattr(frame, "lineno", 0)))
    return frames


def user_line_of(op):
    """The user's line that made ``op`` ("file:line"), or None where no user frame is known."""
    return user_line_of_stack(_stack(op))


def _function_names(op):
    names = []
    for value in op.node_def.attr.values():
        if value.HasField("func"):
            names.append(value.func.name)
        for func in value.list.func:
            names.append(func.name)
    return names


def _inner_graph(graph, name):
    """The Python graph of function ``name`` called from ``graph`` (a ``tf.function``'s, a
    while loop's body), or None where only its FunctionDef is left."""
    current = graph
    while current is not None:
        function = getattr(current, "_functions", {}).get(name)
        inner = getattr(function, "graph", None)
        if inner is not None:
            return inner
        current = getattr(current, "outer_graph", None)
    return None


def ops_of(graph, seen=None) -> Iterator[Tuple[Any, Any]]:
    """Every (graph, op) of ``graph`` and the function graphs it calls, once each."""
    seen = set() if seen is None else seen
    if id(graph) in seen:
        return
    seen.add(id(graph))
    for op in graph.get_operations():
        yield graph, op
        for name in _function_names(op):
            inner = _inner_graph(graph, name)
            if inner is not None:
                yield from ops_of(inner, seen)


def _is_variant(op):
    return any(t.dtype.name == "variant" for t in list(op.inputs) + list(op.outputs))


def _release_op_type(op):
    """The op the release traced for ``op`` (:data:`RELEASE_EQUIVALENTS`), else its own type."""
    for (op_type, attribute), release_type in RELEASE_EQUIVALENTS.items():
        if op.type == op_type and attribute in op.node_def.attr and op.node_def.attr[attribute].b:
            return release_type
    return op.type


def findings(graph, tf_api) -> List[Finding]:
    """The ops of ``graph`` (and the functions it calls) that the release's XLA cannot compile."""
    known = xla_ops(tf_api)
    found = []
    for owner, op in ops_of(graph):
        op_type = _release_op_type(op)
        if op_type in known or op_type in NOT_COMPILED:
            continue
        found.append(Finding(op_type, op.name, getattr(owner, "name", "") or "", user_line_of_stack(_stack(op)),
                             _is_variant(op), _outside(op)))
    return found


#: The attribute ``tpu.outside_compilation`` gives every op it marks for the TPU's host
#: (``_OUTSIDE_COMPILATION_ATTR`` in ``tpu.py`` at v2.1.0 and v2.4.1, ``tpu_replication.py`` in 2.21).
OUTSIDE_COMPILATION_ATTR = "_xla_outside_compilation"


def _outside(op):
    return OUTSIDE_COMPILATION_ATTR in op.node_def.attr


def marked_for_host(graph):
    """Whether the program marked ops of ``graph`` (or the functions it calls) for the host."""
    return any(_outside(op) for _owner, op in ops_of(graph))


def _where(finding):
    return " (created at {})".format(finding.line) if finding.line else ""


def no_kernel_message(finding):
    """XLA's words for an op it cannot compile for the TPU (tensorflow/tpu#176 shows them)."""
    return ("Compilation failure: Detected unsupported operations when trying to compile graph {graph} on "
            "XLA_TPU_JIT: {op} (No registered '{op}' OpKernel for XLA_TPU_JIT devices compatible with node "
            "{{{{node {node}}}}}){{{{node {node}}}}}{where}\n\tTPU compilation failed").format(
                graph=finding.graph, op=finding.op_type, node=finding.node, where=_where(finding))


def python_on_node_message(finding):
    """The TPU worker's words for a Python op that automatic outside compilation moved to it."""
    return ("From /job:worker/replica:0/task:0:\nNo registered '{op}' OpKernel for CPU devices compatible "
            "with node {{{{node {node}}}}}{where}\n\t(a TPU Node's host is the TPU worker, which has no "
            "Python of this program: automatic outside compilation moved the step's {op} there; "
            "a TPU VM, `--tpu-env vm`, runs it)").format(op=finding.op_type, node=finding.node, where=_where(finding))


def variant_message(finding):
    return ("Compilation failure: {op} has no XLA kernel for the TPU and works on a value that exists "
            "only inside the TPU computation, so automatic outside compilation cannot move it to the host "
            "(node {node}){where}\n\tTPU compilation failed").format(
                op=finding.op_type, node=finding.node, where=_where(finding))


class Refusal(NamedTuple):
    """What the TPU raises for a trace: the rule's name, the error class, the message."""
    rule: str
    error: str
    message: str


def judge(found, soft_placement, machine) -> Tuple[Optional[Refusal], List[Finding]]:
    """The TPU's verdict on a trace's findings: the refusal (None where it compiles) and the ops it
    moves to the host."""
    for finding in found:
        if finding.outside:  # the program put it on the host: the TPU compiles the rest
            continue
        if not soft_placement:
            return Refusal("no-kernel", error_of("no-kernel"), no_kernel_message(finding)), []
        if finding.variant:
            return Refusal("variant-stays", error_of("variant-stays"), variant_message(finding)), []
    if machine == "node":
        for finding in found:
            if finding.op_type in PYTHON_OPS:
                return Refusal("python-on-node", error_of("python-on-node"), python_on_node_message(finding)), []
    return None, list(found)


def padded_input_refusal(specs, dynamic_batch) -> Optional[Refusal]:
    """The compilation failure of an input the TPU cannot pad: a string (or other host-only
    dtype) input whose shape the dynamic padder would make dynamic."""
    if not dynamic_batch:
        return None
    for index, spec in enumerate(specs):
        dims = spec.shape.as_list() if spec.shape.rank is not None else None
        if spec.dtype.name in UNPADDABLE_INPUT_TYPES and (dims is None or None in dims):
            return Refusal("padded-string", error_of("padded-string"),
                           ("Compilation failure: input {} of the replicated computation is a {} tensor of "
                            "dynamic shape {}, which the TPU's dynamic padder cannot pad (batch with "
                            "drop_remainder=True, or keep strings out of the step's inputs)\n\tTPU compilation "
                            "failed").format(index, spec.dtype.name, spec.shape))
    return None


def raise_refusal(refusal):
    """Raise ``refusal`` as TensorFlow's error class."""
    import tensorflow as tf
    error = getattr(tf.errors, refusal.error, None)
    if error is not None and issubclass(error, tf.errors.OpError):
        raise error(None, None, refusal.message)
    raise RuntimeError(refusal.message)
