"""Each verify run's gs:// (``--gcs DIR`` / ``MIGRATE_TPU_GCS``) is a copy of DIR of its own
(verify/runs/running.py): DIR is never written, and the other run never sees what one wrote."""

from __future__ import annotations

from migrate_tpu.runtime.tpu.tpu_machine import GCS_VARIABLE
from migrate_tpu.verify.runs.plan import Copy
from migrate_tpu.verify.runs.running import RunRequest


def _request(tmp_path, name):
    root = tmp_path / "program"
    root.mkdir(exist_ok=True)
    (root / "program.py").write_text("print('hi')\n")
    copy = Copy(root, "program", root / "program.py", root, "program.py")
    return RunRequest(copy, [], "2.4", None, None, 0, None, None, None, None, tmp_path / f"{name}.json")


def test_each_run_gets_a_copy_of_the_bucket_folder(tmp_path, monkeypatch):
    bucket = tmp_path / "bucket"
    (bucket / "data").mkdir(parents=True)
    (bucket / "data" / "train.txt").write_text("rows")
    monkeypatch.setenv(GCS_VARIABLE, str(bucket))
    first = _request(tmp_path, "original").variables()[GCS_VARIABLE]
    second = _request(tmp_path, "migrated").variables()[GCS_VARIABLE]
    assert len({first, second, str(bucket)}) == 3
    for own in (first, second):
        assert (tmp_path / own / "data" / "train.txt").read_text() == "rows"
    (tmp_path / first / "data" / "ckpt").write_text("written by the original")
    assert not (tmp_path / second / "data" / "ckpt").exists() and not (bucket / "data" / "ckpt").exists()
    # a run again under the same name starts from the bucket as it is, not from what it wrote
    again = _request(tmp_path, "original").variables()[GCS_VARIABLE]
    assert again == first and not (tmp_path / again / "data" / "ckpt").exists()


def test_a_bucket_folder_not_made_yet_is_an_empty_bucket(tmp_path, monkeypatch):
    monkeypatch.setenv(GCS_VARIABLE, str(tmp_path / "not-yet"))
    own = _request(tmp_path, "original").variables()[GCS_VARIABLE]
    assert list((tmp_path / own).iterdir()) == [] and not (tmp_path / "not-yet").exists()


def test_without_a_bucket_no_variable_is_set(tmp_path, monkeypatch):
    monkeypatch.delenv(GCS_VARIABLE, raising=False)
    assert GCS_VARIABLE not in _request(tmp_path, "original").variables()
