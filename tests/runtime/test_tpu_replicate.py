"""The replica computation as a TPUStrategy runs it (``migrate_tpu/runtime/tpu/tpu_replicate.py``):
one trace, run on every core with that core's copy of every variable and collective all-reduces,
gives what MirroredStrategy's trace per replica gives (TensorFlow's own reference here), on every
interpreter.  The TPU's behaviours themselves (one trace, a replica id without a static value, the
compiler's refusals) are cases of the fidelity suite (tests/runtime/fidelity)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
from roundtrip_helpers import require_python

PER_REPLICA_TRACES = "MIGRATE_TPU_PER_REPLICA_TRACES"  # tpu_replicate.PER_REPLICA_TRACES (that module imports TensorFlow)

pytestmark = [pytest.mark.tf, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).resolve().parent / "programs" / "replicated_training.py"


def _run(python, api, per_replica):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0", TF_USE_LEGACY_KERAS="1")
    env[PER_REPLICA_TRACES] = "1" if per_replica else "0"
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-m", "migrate_tpu", "run", "--python", python, "--tf-api", api, str(PROGRAM)],
                          env=env, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=400)
    assert done.returncode == 0, done.stderr[-4000:]
    return [line for line in done.stdout.splitlines() if line.split(" ")[0] in ("epoch", "w0", "per-replica", "fit")]


# TF 2.1.0 (whose distributed variables and updates are found by device) and TF 2.21 (merge calls
# forced, tf-keras); TF 2.4.1 runs the same program's kind in the verify and round-trip tests
@pytest.mark.parametrize("python,api", [("tf2.1", "2.1"), ("tf2.21", "2.4")])
def test_one_trace_on_every_core_trains_as_a_trace_per_replica(python, api):
    require_python(python)
    once, per_replica = _run(python, api, False), _run(python, api, True)
    assert len(once) == 5 and once[3] == "per-replica equal: True"
    assert once[0].startswith("epoch 0 loss ") and "iters 4" in once[0] and "iters 8" in once[1]
    # the same numbers to float32's rounding: the 8 replicas' sums are added in another order (a
    # collective's, MirroredStrategy's on one device), which moves the last bits and no more
    assert _numbers(once) == pytest.approx(_numbers(per_replica), rel=1e-6, abs=1e-7)
    assert [_words(line) for line in once] == [_words(line) for line in per_replica]


def _numbers(lines):
    import re
    return [float(x) for line in lines for x in re.findall(r"-?\d+\.\d+(?:e-?\d+)?|\b\d+\b", line)]


def _words(line):
    import re
    return re.sub(r"-?\d+\.\d+(?:e-?\d+)?|\b\d+\b", "N", line)


SHARED_RESOURCE = PROGRAM.parent / "shared_resource_step.py"


@pytest.mark.parametrize("python,api", [("tf2.1", "2.1"), ("tf2.21", "2.4")])
def test_a_resource_every_core_writes_after_an_all_reduce_neither_hangs_nor_races(python, api):
    """Every core's call writes ``shared`` (each adds the all-reduced 2.0), none waits for another
    (the run once hung here), and what the program reads after ``run`` comes after every core's
    write.  What a TPU did with a variable from outside the scope was not established: the
    emulation runs each core's write, as MirroredStrategy does."""
    require_python(python)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "migrate_tpu", "run", "--python", python, "--tf-api", api,
                           "--replicas", "2", "--timeout", "240", str(SHARED_RESOURCE)],
                          env=env, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=400)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith(("in a function", "eager run"))]
    assert lines == ["in a function 0.0 4.0", "in a function 4.0 8.0",
                     "eager run 8.0 12.0", "eager run 12.0 16.0"], done.stdout[-2000:]


AUTOGRAPH_SCOPE = PROGRAM.parent / "autograph_scope.py"


@pytest.mark.parametrize("python,api,recorded", [("tf2.1", "2.1", False), ("tf2.4", "2.4", True), ("tf2.21", "2.1", True)])
def test_autograph_converts_the_users_functions_and_none_of_the_runtimes(python, api, recorded, tmp_path):
    """As TensorFlow's own ``run``: the replica function is converted (its ``if`` over a tensor
    works), and the runtime's ``run``/``experimental_run_v2`` and the recorder's wrappers, which
    stand in for TensorFlow's, are not (they were: five of six functions converted in a small
    training loop were the runtime's, about 40 % of its run's CPU time on TF 2.1 and 2.4)."""
    require_python(python)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0", PYTHONPATH=str(REPO))
    if recorded:  # as verify runs it
        env["MIGRATE_TPU_RECORD"] = str(tmp_path / "record.jsonl")
    done = subprocess.run([sys.executable, "-m", "migrate_tpu", "run", "--python", python, "--tf-api", api,
                           "--replicas", "2", str(AUTOGRAPH_SCOPE), api],
                          env=env, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=400)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith(("results", "converted"))]
    assert lines == ["results 12.0 -10.0", "converted replica_step train_step"], done.stdout[-2000:]
    assert not recorded or (tmp_path / "record.jsonl").stat().st_size > 0


@pytest.mark.parametrize("python,api", [("tf2.1", "2.1"), ("tf2.4", "2.4"), ("tf2.21", "2.4")])
def test_every_op_of_a_step_waits_for_its_cores_inputs(python, api):
    """A TPU's computation starts once all its inputs are there; inlined by TensorFlow, an op that
    reads none of them (a dropout's RandomUniform) started at once, even in a step whose input then
    ended the epoch, and how many cores drew from their generators differed from run to run (the
    original of keras-io's X-ray classifier differed from itself at its second epoch)."""
    require_python(python)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0", TF_USE_LEGACY_KERAS="1", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "migrate_tpu", "run", "--python", python, "--tf-api", api,
                           str(PROGRAM.parent / "inputs_first.py")], env=env, cwd=str(REPO), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=400)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "RANDOM 1 WAITS True" in done.stdout.splitlines(), done.stdout + done.stderr[-2000:]

