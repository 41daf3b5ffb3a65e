"""The TPU compiler's op rules of ``migrate_tpu/runtime/tpu/tpu_ops.py``: the releases' XLA op lists,
the verdict on a trace's ops, the messages, and the lists checked against the real interpreters.

How the rules meet real programs (one trace, a refused op failing at the user's line, a host op
on a TPU Node) is the fidelity suite's (tests/runtime/fidelity); the one trace and every core's
copy of the variables are pinned by tests/runtime/test_tpu_replicate.py.
"""

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
from roundtrip_helpers import require_python

from migrate_tpu.runtime.tpu import tpu_ops
from migrate_tpu.runtime.tpu.tpu_ops import Finding, judge, padded_input_refusal, release_of, xla_ops

REPO = Path(__file__).resolve().parents[2]


def _finding(op_type, variant=False, line="/work/train.py:12"):
    return Finding(op_type, "replica/" + op_type, "replica_computation", line, variant)


# --------------------------------------------------------------------------
# The lists and the verdict (no TensorFlow)
# --------------------------------------------------------------------------


def test_each_surface_reads_its_release_list():
    assert [release_of(api) for api in ("2.1", "2.2", "2.3", "2.4", "2.1+2.4", None)] == [
        "2.1", "2.2", "2.3", "2.4", "2.4", "2.4"]
    # ops XLA gained between the releases: a TPU of 2.1.0 could not compile them, one of 2.4.1 could
    assert "RandomGammaGrad" not in xla_ops("2.1") and "RandomGammaGrad" in xla_ops("2.4")
    assert "TensorListConcatV2" not in xla_ops("2.1") and "TensorListConcatV2" in xla_ops("2.4")
    for api in ("2.1", "2.4"):
        assert {"MatMul", "ReadVariableOp", "AssignAddVariableOp", "While", "StatefulPartitionedCall"} <= xla_ops(api)
        assert not {"EagerPyFunc", "PrintV2", "StringFormat", "AsString", "TensorListResize",
                    "RandomGamma"} & xla_ops(api)
    # the TPU's own kernels for data-dependent shapes: not in 2.1.0, taken as there from 2.2 on
    assert not {"Unique", "Where"} & xla_ops("2.1")
    assert {"Unique", "Where"} <= xla_ops("2.2") and {"Unique", "Where"} <= xla_ops("2.4")


def test_soft_placement_off_refuses_the_first_op_without_a_kernel_at_its_line():
    refusal, moved = judge([_finding("StringFormat"), _finding("PrintV2")], soft_placement=False, machine="vm")
    assert moved == []
    assert refusal.rule == "no-kernel" and refusal.error == "InvalidArgumentError"
    assert refusal.message == (
        "Compilation failure: Detected unsupported operations when trying to compile graph replica_computation "
        "on XLA_TPU_JIT: StringFormat (No registered 'StringFormat' OpKernel for XLA_TPU_JIT devices compatible "
        "with node {{node replica/StringFormat}}){{node replica/StringFormat}} (created at /work/train.py:12)\n"
        "\tTPU compilation failed")


def test_soft_placement_on_moves_ops_to_the_host_and_a_node_has_no_python():
    found = [_finding("PrintV2"), _finding("EagerPyFunc")]
    refusal, moved = judge(found, soft_placement=True, machine="vm")
    assert refusal is None and moved == found  # a TPU VM's host is the client: both run
    refusal, moved = judge(found, soft_placement=True, machine="node")
    assert refusal.rule == "python-on-node" and refusal.error == "NotFoundError"
    assert refusal.message.startswith("From /job:worker/replica:0/task:0:\nNo registered 'EagerPyFunc' OpKernel "
                                      "for CPU devices compatible with node {{node replica/EagerPyFunc}} "
                                      "(created at /work/train.py:12)")
    assert judge([_finding("PrintV2")], soft_placement=True, machine="node") == (None, [_finding("PrintV2")])


def test_a_list_that_lives_on_the_tpu_cannot_move_to_the_host():
    refusal, _ = judge([_finding("TensorListResize", variant=True)], soft_placement=True, machine="vm")
    assert refusal.rule == "variant-stays" and "TensorListResize" in refusal.message
    # with soft placement off it is the plain refusal, as for any op without a kernel
    refusal, _ = judge([_finding("TensorListResize", variant=True)], soft_placement=False, machine="vm")
    assert refusal.rule == "no-kernel"


def test_no_user_line_is_said_as_none():
    refusal, _ = judge([_finding("PrintV2", line=None)], soft_placement=False, machine="node")
    assert "created at" not in refusal.message


class _Spec(object):
    def __init__(self, dims, dtype):
        self.shape = _Shape(dims)
        self.dtype = _Dtype(dtype)


class _Shape(object):
    def __init__(self, dims):
        self.dims = dims
        self.rank = None if dims is None else len(dims)

    def as_list(self):
        return list(self.dims)

    def __str__(self):
        return str(self.dims)


class _Dtype(object):
    def __init__(self, name):
        self.name = name


def test_the_padder_refuses_a_string_input_of_dynamic_shape_only():
    strings, floats = _Spec([None], "string"), _Spec([None], "float32")
    refusal = padded_input_refusal([floats, strings], dynamic_batch=True)
    assert refusal.rule == "padded-string" and refusal.error == "InternalError"
    assert refusal.message.startswith("Compilation failure: input 1 of the replicated computation is a string tensor")
    assert padded_input_refusal([floats, strings], dynamic_batch=False) is None  # no padder: no padding
    assert padded_input_refusal([_Spec([2], "string"), floats], dynamic_batch=True) is None  # static: not padded


# --------------------------------------------------------------------------
# The lists against the real releases
# --------------------------------------------------------------------------


@pytest.mark.tf
@pytest.mark.parametrize("api", ["2.1", "2.4"])
def test_the_list_is_the_releases_own_registry(api):
    """The shipped list is what the release's kernel registry says after an XLA compilation
    (scripts/xla-op-lists writes it): a rewrite that drifts from TensorFlow fails here."""
    python = require_python("tf" + api)
    probe = Path(REPO / "scripts" / "xla-op-lists").read_text().split('PROBE = r"""')[1].split('"""')[0]
    done = subprocess.run([str(python), "-c", probe], stdout=subprocess.PIPE, universal_newlines=True,
                          check=True, timeout=300)
    version, *ops = done.stdout.split()
    assert version.startswith(api)
    assert frozenset(ops) == xla_ops(api) - tpu_ops.TPU_ONLY_OPS[api]
