"""verify on the emulated TPU's machine (runtime/tpu/tpu_machine.py): an original that a TPU Node of 2020
stopped (a checkpoint to local disk) is said so, not called a divergence (an original stopped
before its first step is an error with that advice: tests/verify/test_advice.py); as on a TPU VM
(--tpu-env vm) the same program runs all its steps and verifies same."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from migrate_tpu.runtime.process import envs
from tests.conftest import missing_tf_env

pytestmark = [pytest.mark.tf, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"


def _local_checkpoint(folder, directory="./ckpts", restore=False):
    """train_loop.py with a checkpoint to local disk after each step, as 2020 code often wrote one:
    on a TPU Node (Colab's, Cloud TPU's) the TPU worker writes it and fails (files on gs:// only);
    on a TPU VM it runs."""
    source = (PROGRAMS / "train_loop.py").read_text()
    made = source.replace('iterator = iter(strategy.experimental_distribute_dataset(dataset))\n',
                          'checkpoint = tf.train.Checkpoint(kernel=kernel, bias=bias)\n'
                          'manager = tf.train.CheckpointManager(checkpoint, "{}", max_to_keep=2)\n'.format(directory) +
                          ('checkpoint.restore(manager.latest_checkpoint)\n' if restore else '') +
                          'iterator = iter(strategy.experimental_distribute_dataset(dataset))\n', 1)
    made = made.replace('    loss = train_step(iterator)\n', '    loss = train_step(iterator)\n    manager.save()\n', 1)
    assert made.count("manager") == 2 + restore, "train_loop.py changed: the checkpoint has no place in it"
    folder.mkdir()
    path = folder / "local_checkpoint.py"
    path.write_text(made)
    return path


def verify(tmp_path, *args, program=None):
    if envs.interpreter("tf2.4") is None:
        missing_tf_env("!!! NO tf2.4 INTERPRETER under {}: verify NOT RUN; create it with `migrate-tpu envs tf2.4`".format(envs.envs_dir()))
    env = dict(os.environ, TMPDIR=str(tmp_path))
    env.pop("MIGRATE_TPU_ENVIRONMENT", None)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "migrate_tpu", "verify", "--format", "json", "--output-file", str(report),
                           "--python", "tf2.4", "--steps", "2", "--no-blame", *args,
                           str(program or _local_checkpoint(tmp_path / "program"))],
                          cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    assert report.is_file(), "no report (exit {}):\n{}{}".format(done.returncode, done.stdout, done.stderr)
    return done.returncode, json.loads(report.read_text("utf-8"))


def test_an_original_a_tpu_node_stopped_is_said_so(tmp_path):
    """Both runs stop at the first checkpoint, after step 1, as the original stopped on a TPU Node:
    the step before it is compared, and the note says the TPU stopped there too."""
    status, report = verify(tmp_path)
    assert (status, report["verdict"], report["steps"]) == (0, "same", 1), json.dumps(report, indent=1)
    note = report["notes"][0]
    assert note.startswith("both runs stopped with the same exception after step 1: UnimplementedError: File system scheme "
                           "'[local]' not implemented (file: './ckpts/ckpt-1_temp"), note
    assert "a TPU Node of that release stopped the original there too" in note, note
    # with what `migrate-tpu run` advises about it: the data on gs:// with --gcs, or a TPU VM
    assert "--gcs DIR of `migrate-tpu run` and `migrate-tpu verify`" in note and "--tpu-env vm" in note, note


def test_on_a_tpu_vm_it_verifies_same(tmp_path):
    status, report = verify(tmp_path, "--tpu-env", "vm")
    assert (status, report["verdict"], report["steps"]) == (0, "same", 2), json.dumps(report, indent=1)


def test_with_gcs_each_run_has_a_bucket_of_its_own(tmp_path):
    """``verify --gcs DIR`` as ``run --gcs DIR``: the program's gs:// paths are DIR's, and each run
    works in a copy of its own.  The program restores its latest checkpoint before training: had
    the migration's run found the original's checkpoints in a shared bucket, it would have started
    from the trained values and diverged at step 1.  The user's DIR is left as it was."""
    bucket = tmp_path / "bucket"
    (bucket / "verify-bucket").mkdir(parents=True)
    (bucket / "verify-bucket" / "kept.txt").write_text("the user's object")
    program = _local_checkpoint(tmp_path / "program", "gs://verify-bucket/ckpts", restore=True)
    status, report = verify(tmp_path, "--gcs", str(bucket), program=program)
    assert (status, report["verdict"], report["steps"]) == (0, "same", 2), json.dumps(report, indent=1)
    assert sorted(p.name for p in bucket.rglob("*")) == ["kept.txt", "verify-bucket"]

