"""TensorFlow's file and input entry points on the emulated machine (runtime/tpu/tpu_machine_io.py), on
the real interpreters (TF 2.1.0, 2.4.1, 2.21): every entry point that reaches a file maps gs:// to
the folder of --gcs; on a TPU Node what the client's Python writes works, and so do ops the program
puts on the client; without --gcs a gs:// path says what to pass.  The failure modes themselves
(a local checkpoint, TFRecord file, SavedModel or logdir; Python input) are the fidelity suite's."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
from roundtrip_helpers import REPO, TF21, TF24, TF221, require_python

pytestmark = [pytest.mark.tf, pytest.mark.slow]

PROGRAMS = Path(__file__).resolve().parent / "programs"
#: (interpreter, --tf-api)
CONFIGS = [(TF24, "2.4"), (TF221, "2.4"), (TF21, "2.1")]
IDS = ["tf2.4", "tf2.21", "tf2.1-api2.1"]


def run(config, program, *run_args, environ=None):
    python, api = config
    require_python(python)
    # a seeded hash makes the run a fork of the session's warm interpreter (the fidelity suite's,
    # whose environment this is), not a new interpreter that imports TensorFlow again
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
    for name in ("TPU_NAME", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", "MIGRATE_TPU_ENVIRONMENT", "MIGRATE_TPU_GCS"):
        env.pop(name, None)
    env.update(environ or {})
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    argv = [sys.executable, "-m", "migrate_tpu", "run", "--python", python, "--tf-api", api, *run_args, str(PROGRAMS / program)]
    done = subprocess.run(argv, cwd=str(REPO), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=400)
    return done.returncode, done.stdout, "$ {}\nexit {}\n{}\n{}".format(" ".join(argv), done.returncode, done.stdout[-3000:], done.stderr[-3000:])


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_every_op_that_names_files_is_mapped(config):
    """The op registry of each release against the table of ops whose string inputs are paths."""
    python = require_python(config[0])
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([python, str(PROGRAMS / "path_ops_registry.py")], cwd=str(REPO), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert "MISSING []" in done.stdout.splitlines(), done.stdout + done.stderr[-3000:]


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_every_entry_point_reads_and_writes_buckets_in_the_folder(config, tmp_path):
    rc, out, where = run(config, "gcs_entry_points.py", "--gcs", str(tmp_path))
    assert rc == 0, where
    errors = [line for line in out.splitlines() if line.startswith("ENTRY ") and " error " in line]
    assert errors == [], where
    for expected in ("ENTRY gfile.glob ['gs://entry-bucket/g/a.txt']",
                     "ENTRY gfile.walk [('gs://entry-bucket/g', ['a.txt']), ('gs://entry-bucket/g/sub', ['c.txt'])]",
                     "ENTRY list_files ['gs://entry-bucket/data/r.tfrecord']",
                     "ENTRY matching_files ['gs://entry-bucket/data/t.txt']",
                     "ENTRY interleave 4", "ENTRY distributed TFRecordDataset 6.0",
                     "ENTRY Checkpoint.save gs://entry-bucket/ckpt/c-1", "ENTRY latest_checkpoint gs://entry-bucket/ckpt/c-1",
                     "ENTRY Checkpoint.restore 3.0", "ENTRY saved_model.load 3.0", "ENTRY load_model tf 1",
                     "ENTRY ModelCheckpoint True", "ENTRY TensorBoard True", "ENTRY create_file_writer 1"):
        assert expected in out.splitlines(), where
    assert sorted(os.listdir(tmp_path / "entry-bucket")) == [
        "ckpt", "data", "g", "keras_model", "logs", "managed", "mc", "sm", "tb", "weights"], where


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_on_a_node_the_clients_own_writes_and_ops_placed_on_it_work(config):
    rc, out, where = run(config, "node_client_io.py")
    assert rc == 0, where
    for expected in ("CLIENT save_weights h5 True", "CLIENT load_weights h5 True", "CLIENT gfile True", "CLIENT numpy True",
                     "CLIENT tf.device /job:localhost y"):
        assert expected in out.splitlines(), where
    # '/cpu:0' is the worker's CPU under the worker's device scope (tensorflow#64117); a checkpoint's
    # SaveV2 runs there unless experimental_io_device names the client (TF >= 2.3)
    failing = [line for line in out.splitlines() if line.startswith(("CLIENT tf.device /cpu:0 ", "CLIENT Checkpoint.save "))]
    assert len(failing) == 2 and all("error UnimplementedError" in line and "File system scheme '[local]'" in line
                                     for line in failing), where
    if config[1] != "2.1":
        assert "CLIENT CheckpointOptions io_device True" in out.splitlines(), where


def test_a_gs_path_without_a_folder_says_what_to_pass():
    rc, out, where = run((TF24, "2.4"), "gcs_entry_points.py")
    assert rc == 1, where  # the last line reads the folder: no --gcs, no folder
    assert ("ENTRY gfile.makedirs error UnimplementedError gs://entry-bucket/g/sub: Cloud Storage is not reachable under "
            "`migrate-tpu run`; run again with --gcs DIR (or MIGRATE_TPU_GCS=DIR) and gs://BUCKET/PATH is read and "
            "written as DIR/BUCKET/PATH") in out.splitlines(), where
    # ops too (read_file), and never TensorFlow's own Cloud Storage client, which retries for minutes offline
    assert any(line.startswith("ENTRY read_file error UnimplementedError gs://entry-bucket/data/t.txt: Cloud Storage is not reachable")
               for line in out.splitlines()), where
