"""The emulated TPU's machine (runtime/tpu/tpu_machine.py): which machine ``--tpu-env`` names, gs:// as a
local folder, the TPU worker's words and log.  Standard library only: the fast tier."""

import os

import pytest

from migrate_tpu.runtime.tpu import tpu_machine
from migrate_tpu.runtime.tpu.tpu_machine import NODE, VM


@pytest.fixture(autouse=True)
def fresh_selection():
    """Each test selects its own machine; the module's selection is put back after it."""
    kept = dict(vars(tpu_machine.SELECTED))
    yield
    vars(tpu_machine.SELECTED).update(kept)


def test_the_default_is_colabs_tpu_node_of_2020():
    machine = tpu_machine.choose(environ={})
    assert (machine.name, machine.kind) == ("colab", NODE)
    assert machine.announced == {"COLAB_TPU_ADDR": "localhost:8470", "TPU_NAME": "grpc://localhost:8470"}


@pytest.mark.parametrize("name,kind,announced", [
    ("colab", NODE, {"COLAB_TPU_ADDR", "TPU_NAME"}), ("node", NODE, {"TPU_NAME"}), ("none", NODE, set()),
    ("vm", VM, {"TPU_NAME"})])
def test_each_choice_is_a_machine_and_what_announces_its_tpu(name, kind, announced):
    machine = tpu_machine.choose(name, environ={})
    assert machine.kind == kind and set(machine.announced) == announced
    assert tpu_machine.MACHINES[name].announced == machine.announced  # what the runner sets, one table


def test_a_tpu_vm_names_its_tpu_local():
    assert tpu_machine.choose("vm", environ={}).announced == {"TPU_NAME": "local"}


def test_the_environment_variable_chooses_and_the_option_wins():
    assert tpu_machine.choose(environ={"MIGRATE_TPU_ENVIRONMENT": "vm"}).name == "vm"
    assert tpu_machine.choose("node", environ={"MIGRATE_TPU_ENVIRONMENT": "vm"}).name == "node"
    assert tpu_machine.MACHINE_VARIABLE == "MIGRATE_TPU_ENVIRONMENT"


def test_an_unknown_machine_names_the_choices():
    with pytest.raises(ValueError, match=r"unknown TPU environment 'laptop' \(choose from colab, node, none, vm\)"):
        tpu_machine.choose("laptop", environ={})


def test_select_sets_the_machine_and_the_folder_of_the_buckets(tmp_path):
    machine = tpu_machine.select("vm", gcs=str(tmp_path / "buckets" / ""), environ={})
    assert machine.name == "vm" and not tpu_machine.is_node()
    assert tpu_machine.SELECTED.gcs_root == str(tmp_path / "buckets")
    tpu_machine.select(environ={"MIGRATE_TPU_GCS": str(tmp_path)})
    assert tpu_machine.is_node() and tpu_machine.SELECTED.gcs_root == str(tmp_path)
    tpu_machine.select(environ={})
    assert tpu_machine.SELECTED.gcs_root is None


@pytest.mark.parametrize("path,local", [
    ("gs://bucket/data/train-0.tfrecord", "/g/bucket/data/train-0.tfrecord"),
    ("gs://bucket/model/", "/g/bucket/model/"),
    ("gs://bucket", "/g/bucket"),
    ("gs://bucket/data/*.tfrecord", "/g/bucket/data/*.tfrecord")])
def test_gs_paths_are_paths_under_the_folder_and_back(path, local):
    assert tpu_machine.gcs_to_local(path, "/g") == local
    assert tpu_machine.local_to_gcs(local, "/g") == path


def test_only_paths_under_the_folder_go_back_to_gs():
    assert tpu_machine.local_to_gcs("/gg/bucket/x", "/g") == "/gg/bucket/x"
    assert tpu_machine.local_to_gcs("/tmp/x", "/g") == "/tmp/x"
    assert tpu_machine.local_to_gcs("/tmp/x", None) == "/tmp/x"


@pytest.mark.parametrize("path,scheme", [
    ("gs://b/x", True), ("file:///tmp/x", True), ("hdfs://n/x", True), ("/tmp/x", False), ("data/x", False),
    ("c:/x", False), ("", False)])
def test_a_scheme_is_what_tensorflow_parses_as_one(path, scheme):
    assert tpu_machine.has_scheme(path) is scheme


def test_without_a_folder_a_gs_path_says_what_to_pass():
    message = tpu_machine.missing_gcs_message("gs://b/model")
    assert message.startswith("gs://b/model: Cloud Storage is not reachable")
    assert "--gcs DIR" in message and "MIGRATE_TPU_GCS=DIR" in message and "DIR/BUCKET/PATH" in message


@pytest.mark.parametrize("api,error", [((2, 1), "NotFoundError"), ((2, 2), "NotFoundError"),
                                       ((2, 3), "UnavailableError"), ((2, 4), "UnavailableError")])
def test_python_in_a_nodes_input_pipeline_fails_as_the_release_failed(api, error):
    found, message = tpu_machine.python_on_worker("PyFunc", api)
    assert found == error
    if error == "NotFoundError":
        assert message.startswith("No registered 'PyFunc' OpKernel for 'CPU' devices compatible with node {{node PyFunc}}")
    else:
        assert message.startswith("failed to connect to all addresses\nAdditional GRPC error information from remote "
                                  "target /job:localhost/replica:0/task:0/device:CPU:0:")


def test_a_local_path_on_the_worker_is_the_workers_words():
    assert tpu_machine.LOCAL_PATH_ON_WORKER.format(path="/tmp/x") == "File system scheme '[local]' not implemented (file: '/tmp/x')"


def test_a_tpu_vm_has_no_worker_log():
    tpu_machine.select("vm", environ={})
    assert tpu_machine.worker_log() is None
    assert tpu_machine.end_lines() == []


def test_a_nodes_worker_log_is_a_file_of_the_run_said_at_its_end(tmp_path, monkeypatch):
    monkeypatch.setenv("MIGRATE_TPU_WORKER_LOG", str(tmp_path / "logs" / "worker.log"))
    tpu_machine.select("colab", environ={})
    assert tpu_machine.worker_log() == str(tmp_path / "logs" / "worker.log")
    assert tpu_machine.end_lines() == []  # nothing written: nothing said
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "worker.log").write_text("1.0\n2.0\n")  # as the host's prints append to it (tpu_contexts)
    assert (tmp_path / "logs" / "worker.log").read_text() == "1.0\n2.0\n"
    assert tpu_machine.end_lines() == [
        "the TPU worker's log (what ran on the TPU Node's host and printed): {} (2 lines)".format(tmp_path / "logs" / "worker.log")]


def test_by_default_the_worker_log_is_one_file_per_process(monkeypatch):
    monkeypatch.delenv("MIGRATE_TPU_WORKER_LOG", raising=False)
    tpu_machine.select("node", environ={})
    path = tpu_machine.worker_log()
    assert path.endswith("tpu-worker-{}.log".format(os.getpid())) and not os.path.exists(path)


def test_the_banner_says_which_machine():
    tpu_machine.select("colab", gcs="/g", environ={})
    assert tpu_machine.describe() == ("a TPU Node as Colab's TPU runtime was in 2020 (--tpu-env colab): files on gs:// "
                                      "only and no Python on the TPU worker; gs:// is /g")
    tpu_machine.select("vm", environ={})
    assert tpu_machine.describe() == "a TPU VM (--tpu-env vm): local files and Python input work"


@pytest.mark.parametrize("text,names", [
    ("UnimplementedError: File system scheme '[local]' not implemented (file: '/tmp/c')", "Cloud Storage"),
    ("NotFoundError: No registered 'PyFunc' OpKernel for 'CPU' devices compatible with node {{node PyFunc}}", "no Python"),
    ("UnavailableError: failed to connect to all addresses", "cannot call back")])
def test_a_nodes_errors_come_with_a_note_on_what_to_do(text, names):
    tpu_machine.select("none", environ={})
    note = tpu_machine.note_for(text)
    assert names in note and "--tpu-env none" in note and "--tpu-env vm" in note
    tpu_machine.select("vm", environ={})
    assert tpu_machine.note_for(text) is None


def test_other_errors_have_no_note():
    tpu_machine.select("colab", environ={})
    assert tpu_machine.note_for("ValueError: no such thing") is None
