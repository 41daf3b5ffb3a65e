"""The emulated TPUStrategy's extended object (runtime/tpu/tpu_extended.py) is the one owner of
the TPU's cross-replica operations and refusals: the release's MirroredExtended made the TPU's by
its class, with no method set on the instance, answering as the TPU through it, on the real
interpreters."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
from roundtrip_helpers import REPO, TF21, TF24, TF221, require_python

PROGRAM = Path(__file__).resolve().parent / "programs" / "tpu_extended_owner.py"
IN_EVERY_RELEASE = ["_batch_reduce_to", "_broadcast_to", "_call_for_each_replica", "_create_variable",
                    "_reduce_to", "_update", "_update_non_slot"]


@pytest.mark.tf
@pytest.mark.parametrize("python, api, only_in_release", [
    (TF21, "2.1", ["_experimental_distribute_dataset", "_experimental_distribute_datasets_from_function"]),
    (TF24, "2.4", ["_distribute_datasets_from_function", "_experimental_distribute_dataset",
                   "_gather_to_implementation"]),
    (TF221, "2.4", ["_distribute_datasets_from_function", "_experimental_distribute_dataset",
                    "_gather_to_implementation", "_use_merge_call"]),
], ids=["tf2.1", "tf2.4", "tf2.21"])
def test_the_extended_object_owns_the_tpus_operations_by_its_class(python, api, only_in_release, tmp_path):
    python = require_python(python)
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3", TF_USE_LEGACY_KERAS="1",
               TPU_NAME="node-1")  # a Node announced, as --tpu-env node announces it
    done = subprocess.run([python, str(PROGRAM), api], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert (lines["CLASS"], lines["MIRRORED"], lines["ON_INSTANCE"]) == ("TPUExtended", "True", "[]")
    assert lines["OWNED"] == str(sorted(IN_EVERY_RELEASE + only_in_release))  # what the release's class lacks, too
    assert lines["SUM"] == "36"  # 1 + 2 + ... + 8, all-reduced among the eight cores' calls of one trace
    assert lines["FLOAT64"] == "refused"  # CrossReplicaSum's TypeError, in the op's words
    assert lines["EAGER"] == "NotImplementedError"
