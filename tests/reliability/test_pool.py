"""How many worker processes a run starts: one for a handful of files, more for a tree.

A new worker first loads LibCST and the rules, which costs more than it saves
on a few files (issue 10.4); the time that costs is measured in benchmarks/,
here only the decisions are checked. Each file's result carries the process
id of the worker that migrated it, so the test sees which workers ran.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace

import pytest

from migrate_tpu.codemod.foundation.findings import Report
from migrate_tpu.codemod.migration.migrator import TPUMigrator
from migrate_tpu.compose import EngineMigrator
from migrate_tpu.engine import pipeline
from migrate_tpu.engine.pipeline import run
from tests.reliability.conftest import GOOD, write


class ReportsItsWorker(TPUMigrator):
    """The real migrator; each result names the worker process, and ``slow.py`` takes 10 s."""

    def migrate(self, text, path="<stdin>", line_offset=0):
        outcome = super().migrate(text, path, line_offset)
        if path.endswith("slow.py"):
            time.sleep(10)
        return replace(outcome, reports=[Report("WORKER", str(os.getpid()), 1, 1, 1, 1, "manual", False)])


def workers_used(paths, jobs=2):
    results = list(run(paths, EngineMigrator(ReportsItsWorker()), "check", jobs=jobs))
    assert all(not result.failed for result in results), [result.error for result in results]
    return {int(report.message) for result in results for report in result.reports}


def test_a_handful_of_files_is_served_by_one_worker(tmp_path, monkeypatch):
    # Only the backlog rule is checked here: the time rule (a file holding a
    # worker for long) is switched off, so that a slow start-up on a loaded
    # machine cannot start a second worker.
    monkeypatch.setattr(pipeline, "LAZY_SPAWN_AFTER", 3600.0)
    paths = [write(tmp_path / f"m{i}.py", GOOD) for i in range(5)]
    used = workers_used(paths)
    assert len(used) == 1 and os.getpid() not in used  # isolated all the same: never this process


def test_a_tree_gets_more_workers(tmp_path):
    paths = [write(tmp_path / f"m{i:02d}.py", GOOD) for i in range(40)]
    assert len(workers_used(paths)) == 2


@pytest.mark.slow
def test_a_long_file_among_few_lets_another_worker_start(tmp_path):
    # slow.py holds the (no longer fresh) worker for 10 s; once a file has held
    # a worker for LAZY_SPAWN_AFTER (1 s) the files behind it get a second worker.
    # Only a parent starved of CPU for 9 s could miss that moment.
    paths = [write(tmp_path / "m0.py", GOOD), write(tmp_path / "slow.py", GOOD)] + [write(tmp_path / f"m{i}.py", GOOD) for i in range(1, 4)]
    assert len(workers_used(paths)) == 2


def test_one_job_means_one_worker(tmp_path):
    paths = [write(tmp_path / f"m{i:02d}.py", GOOD) for i in range(40)]
    assert len(workers_used(paths, jobs=1)) == 1
