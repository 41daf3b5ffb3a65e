"""XLA's verdict on the one trace (``migrate_tpu/runtime/tpu/tpu_compiler.py``): which of XLA's failures
are the TPU's refusals, and in whose words.  Lowering real traces, on TF 2.4.1 and 2.21, is the
fidelity suite's (tests/runtime/fidelity: python_int_as_depth, loop_grows_tensor,
while_gradient_unbounded)."""

import pytest

from migrate_tpu.runtime.tpu import tpu_compiler, tpu_ops
from migrate_tpu.runtime.tpu.tpu_rules import TPU_RULES
from migrate_tpu.runtime.tpu.tpu_ops import Finding, judge

#: What TF 2.4.1's IR export raised for the three refusals (taken from the fidelity runs).
CONSTANT = ("Failed getting HLO text: 'Input 1 to node `PartitionedCall/one_hot` with op OneHot must be a "
            "compile-time constant.\n\nXLA compiles pieces of the graph ...'")
LOOP = ("Input and output shapes of loop body do not match: (s32[], f32[2,3]) vs. (s32[], f32[4,3])")
LIST = ("XLA compilation requires a fixed tensor list size. Set the max number of elements. This could also "
        "happen if you're using a TensorArray in a while loop that does not have its maximum_iteration set")


@pytest.mark.parametrize("message, name", [(CONSTANT, "compile-time-constant"), (LOOP, "loop-shapes"),
                                           (LIST, "fixed-list-size")])
def test_the_tpus_refusals_are_named(message, name):
    assert tpu_compiler.verdict_of(message).name == name


@pytest.mark.parametrize("message", [
    # an op the CPU's XLA lacks and the TPU has (or a stand-in collective): says nothing of the TPU
    "Detected unsupported operations when trying to compile graph on XLA_CPU_JIT: Unique",
    "No registered 'CollectiveReduceV2' OpKernel for XLA_CPU_JIT devices",
    # a shape the stand-in collectives changed
    "Cannot reshape a tensor with 8 elements to shape [16]",
    "", None])
def test_any_other_failure_is_no_refusal(message):
    assert tpu_compiler.verdict_of(message) is None


def test_the_words_are_xlas_without_the_judged_copys_names():
    assert tpu_compiler._first_line(CONSTANT) == (
        "Input 1 to node `one_hot` with op OneHot must be a compile-time constant.")
    assert tpu_compiler._node_of(CONSTANT) == "PartitionedCall/one_hot"


def test_every_verdict_is_a_rule_of_the_table():
    assert [verdict.name for verdict in tpu_compiler.VERDICTS] == ["compile-time-constant", "loop-shapes",
                                                                   "fixed-list-size"]
    assert all(TPU_RULES[verdict.name].sources for verdict in tpu_compiler.VERDICTS)


def test_an_op_the_program_put_on_the_host_is_not_refused():
    """``tpu.outside_compilation`` marks ops for the host: with soft placement off they are not
    XLA's to refuse; a Python op among them still meets a Node's worker."""
    printed = Finding("StringFormat", "replica/StringFormat", "replica_computation", "/work/train.py:12", False, True)
    refusal, moved = judge([printed], False, "node")
    assert refusal is None and moved == [printed]
    python = Finding("EagerPyFunc", "replica/EagerPyFunc", "replica_computation", "/work/train.py:13", False, True)
    refusal, _ = judge([python], False, "node")
    assert refusal.rule == "python-on-node"
    unmarked = Finding("StringFormat", "replica/StringFormat", "replica_computation", "/work/train.py:12", False)
    assert judge([unmarked], False, "node")[0].rule == "no-kernel"
    assert tpu_ops.OUTSIDE_COMPILATION_ATTR == "_xla_outside_compilation"
