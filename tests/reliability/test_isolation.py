"""Source that is not on disk (stdin) goes through a worker process too.

``migrate_isolated`` is what ``fix -`` can use so that input which crashes
LibCST's parser (5,000 nested brackets overflow its stack: a segmentation
fault) is reported instead of killing the process.
"""

from __future__ import annotations

from pathlib import Path

from migrate_tpu.codemod.migration.migrator import TPUMigrator
from migrate_tpu.compose import EngineMigrator
from migrate_tpu.engine.pipeline import migrate_isolated
from tests.reliability.conftest import GOOD, MIGRATED

DEEP = "import tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy(r)\ny = " + "[" * 5000 + "1" + "]" * 5000 + "\n"


def test_good_source_comes_back_migrated():
    result, new_data = migrate_isolated(GOOD.encode(), Path("<stdin>"), EngineMigrator(TPUMigrator()), "fix")
    assert result.error is None
    assert new_data == MIGRATED.encode()
    assert result.changed and not result.written


def test_check_mode_returns_findings_and_no_bytes():
    result, new_data = migrate_isolated(GOOD.encode(), Path("<stdin>"), EngineMigrator(TPUMigrator()), "check")
    assert new_data is None
    assert {report.rule for report in result.reports} >= {"TPU101", "TPU103"}


def test_input_that_crashes_the_parser_is_an_error_not_a_crash():
    result, new_data = migrate_isolated(DEEP.encode(), Path("<stdin>"), EngineMigrator(TPUMigrator()), "fix", timeout=20)
    assert new_data is None
    assert result.error is not None
    assert any(reason in result.error for reason in ("too deeply nested", "crashed (SIGSEGV)", "gave up after")), result.error


def test_a_killed_worker_is_reported(monkeypatch):
    monkeypatch.setenv("MIGRATE_TPU_TEST_CRASH", "piped.py")
    result, new_data = migrate_isolated(GOOD.encode(), Path("piped.py"), EngineMigrator(TPUMigrator()), "fix")
    assert new_data is None
    assert "SIGKILL" in (result.error or "")


def test_binary_and_unrelated_input():
    result, new_data = migrate_isolated(b"\x00\x01" + GOOD.encode(), Path("<stdin>"), EngineMigrator(TPUMigrator()), "fix")
    assert "binary file" in result.error and new_data is None
    result, new_data = migrate_isolated(b"print('hello')\n", Path("<stdin>"), EngineMigrator(TPUMigrator()), "fix")
    assert result.error is None and new_data is None and not result.parsed
