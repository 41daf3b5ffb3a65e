"""Warm re-runs through the result cache, and --shard K/N, through the real CLI."""

import json
import pickle
from pathlib import Path

import pytest

OLD = b"""import tensorflow as tf

strategy = tf.distribute.experimental.TPUStrategy(resolver)
dataset = strategy.experimental_distribute_datasets_from_function(make_dataset)
"""


def tree(root: Path, count: int = 12) -> None:
    for number in range(count):
        folder = root / f"pkg{number % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{number}.py").write_bytes(OLD.replace(b"make_dataset", b"make_dataset_%d" % number))
    (root / "plain.py").write_bytes(b"print('no TensorFlow here')\n")


def entries(cache: Path):
    return [p for p in cache.rglob("*") if p.is_file() and len(p.parent.name) == 2]


@pytest.mark.slow
def test_second_run_reads_the_cache(cli, tmp_path):
    tree(tmp_path / "src")
    first = cli("diff", "src")
    assert first.returncode == 1
    cache = tmp_path / ".migrate-tpu-cache"
    stored = entries(cache)
    assert len(stored) == 12  # one per file that needed parsing; plain.py never parsed
    # Prove the second run takes results from the cache: doctor one entry.
    victim = stored[0]
    result = pickle.loads(victim.read_bytes())
    result.diff = b"--- a/doctored\n+++ b/doctored\n@@ -1 +1 @@\n-doctored\n+doctored\n"
    victim.write_bytes(pickle.dumps(result))
    second = cli("diff", "src")
    assert b"\n-doctored\n+doctored\n" in second.stdout  # (the CLI puts its own paths in the headers)
    assert cli("diff", "src", "--no-cache").stdout == first.stdout


@pytest.mark.slow
def test_cache_follows_file_content_and_settings(cli, tmp_path):
    tree(tmp_path / "src", count=2)
    before = cli("diff", "src").stdout
    target = tmp_path / "src" / "pkg0" / "mod0.py"
    target.write_bytes(target.read_bytes().replace(b"experimental_distribute_datasets_from_function", b"distribute_datasets_from_function"))
    after = cli("diff", "src").stdout
    assert after != before and after.count(b"+++ b/") == 2
    only_renames = cli("diff", "src", "--select", "TPU102").stdout
    assert b"+strategy = tf.distribute.TPUStrategy" not in only_renames and b"+dataset = strategy.distribute_datasets" in only_renames


@pytest.mark.slow
def test_fix_still_writes_after_a_cached_diff(cli, tmp_path):
    tree(tmp_path / "src", count=3)
    assert cli("diff", "src").returncode == 1
    fixed = cli("fix", "src")
    assert fixed.returncode == 0, fixed.stderr
    for path in (tmp_path / "src").rglob("mod*.py"):
        assert b"tf.distribute.TPUStrategy(resolver)" in path.read_bytes()
    assert cli("diff", "src").returncode == 0


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_no_cache_writes_nothing(cli, tmp_path):
    tree(tmp_path / "src", count=2)
    cli("check", "src", "--no-cache")
    assert not (tmp_path / ".migrate-tpu-cache").exists()
    cli("check", "src", "--cache-dir", "elsewhere")
    assert entries(tmp_path / "elsewhere")


@pytest.mark.slow
def test_shards_partition_the_tree(cli, tmp_path):
    tree(tmp_path / "src", count=30)
    whole = json.loads(cli("check", "src", "--format", "json", "--no-cache").stdout)
    seen = []
    for index in (1, 2, 3):
        part = json.loads(cli("check", "src", "--format", "json", "--shard", f"{index}/3", "--no-cache").stdout)
        seen.append(sorted({f["path"] for f in part["findings"]}))
        again = json.loads(cli("check", "src", "--format", "json", "--shard", f"{index}/3", "--no-cache").stdout)
        assert sorted({f["path"] for f in again["findings"]}) == seen[-1]  # deterministic
    merged = [path for part in seen for path in part]
    assert sorted(merged) == sorted({f["path"] for f in whole["findings"]})
    assert len(merged) == len(set(merged)) == 30
    assert all(part for part in seen)


def test_bad_shard_is_a_usage_error(cli, tmp_path):
    tree(tmp_path / "src", count=1)
    result = cli("check", "src", "--shard", "4/3")
    assert result.returncode == 2 and b"K/N" in result.stderr


STAND_IN = b"""class SingleDeviceStrategy(object):
    def experimental_run_v2(self, fn, args, kwargs):
        return fn(*args, **kwargs)
"""

TRAINER = b"""import tensorflow as tf


class Trainer(object):
    def __init__(self, strategy):
        self.strategy = strategy

    @tf.function
    def step(self, x):
        return self.strategy.experimental_run_v2(tf.square, args=(x,), kwargs={})
"""


def _safety(cli, *options):
    done = cli("check", "--format", "json", "--select", "TPU101", "src", *options)
    return [(Path(f["path"]).name, f["safety"]) for f in json.loads(done.stdout)["findings"]]


@pytest.mark.slow
def test_a_cached_result_is_not_reused_once_another_file_it_read_changed(cli, tmp_path):
    # train.py's finding depends on utils.py (a stand-in strategy class of the tree makes the
    # rename unsafe), which train.py does not even import: the cache must see utils.py change.
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "utils.py").write_bytes(b"class Helper(object):\n    pass\n")
    (tmp_path / "src" / "train.py").write_bytes(TRAINER)
    assert _safety(cli) == [("train.py", "safe")]
    assert entries(tmp_path / ".migrate-tpu-cache")  # the result is cached
    (tmp_path / "src" / "utils.py").write_bytes(STAND_IN)
    assert _safety(cli, "--no-cache") == [("train.py", "unsafe")]
    assert _safety(cli) == [("train.py", "unsafe")]  # not the stale "safe"
    # Unchanged since, the result comes from the cache (doctored to prove it).
    stored = [(entry, pickle.loads(entry.read_bytes())) for entry in entries(tmp_path / ".migrate-tpu-cache")]
    victim, result = max(((e, r) for e, r in stored if r.path.endswith("train.py")), key=lambda item: item[0].stat().st_mtime_ns)
    assert [Path(path).name for path, _, _ in result.depends_on] == ["utils.py"]
    result.reports[0].safety = "doctored"
    victim.write_bytes(pickle.dumps(result))
    assert _safety(cli) == [("train.py", "doctored")]


def test_a_run_records_each_consulted_file_as_it_first_saw_it(tmp_path):
    # A worker stats each consulted file once per run: every later result that depends on it
    # records it as it was when it was read, so a change during the run is still seen later.
    from migrate_tpu.engine.cache import fingerprints, unchanged

    helper = tmp_path / "utils.py"
    helper.write_text("A = 1\n")
    seen = {}
    first = fingerprints([str(helper)], seen)
    assert first == fingerprints([str(helper)]) and unchanged(first)
    helper.write_text("A = 2  # changed while the run goes on\n")
    later = fingerprints([str(helper), str(helper)], seen)
    assert later == first  # as first seen, not as it is now
    assert not unchanged(later)  # so the next run does not trust a result made from the old text
    assert fingerprints([str(helper)]) != first
