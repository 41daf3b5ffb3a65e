"""Issue #6, part 4: real trees. CPython's standard library is on every machine.

``check`` over the whole standard library must neither crash nor find
anything (it has no TensorFlow). Because the prefilter rightly skips nearly
every file there, a second test makes the codemod parse and analyse a fixed
sample of the library with the prefilter switched off: it must report
nothing and change nothing, and no file may fail for any reason but one
CPython itself has.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from migrate_tpu.codemod.migration.migrator import TPUMigrator
from migrate_tpu.compose import EngineMigrator
from migrate_tpu.engine.discover import discover
from migrate_tpu.engine.pipeline import run

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SAMPLE = 160
SAMPLE_MAX_BYTES = 40_000

# The standard library, or 160 of its modules: seconds each on 2 cores.
pytestmark = [pytest.mark.skipif(not (STDLIB / "os.py").exists(), reason="no standard library sources"), pytest.mark.slow]


def test_check_over_the_standard_library_finds_nothing_and_does_not_crash(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "migrate_tpu", "check", "--jobs", "2", "--format", "json", str(STDLIB)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,  # a hang, not slowness, fails: the time is measured in benchmarks/
    )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["findings"] == []
    # Files the prefilter skips are still checked for being decodable: the
    # library's own deliberately undecodable test data is named, and nothing else.
    for error in report["errors"]:
        data = (Path(error["path"]) if Path(error["path"]).is_absolute() else tmp_path / error["path"]).read_bytes()
        with pytest.raises((SyntaxError, ValueError)):
            compile(data, error["path"], "exec", dont_inherit=True, flags=0x400)  # CPython refuses it too
    assert done.returncode == (2 if report["errors"] else 0), done.stderr[-3000:]
    summary = report["summary"]
    assert summary["files"] > 1000
    # What makes this tree fast: it has no TensorFlow, so the prefilter keeps
    # (nearly) every file away from the parser.
    assert summary["parsed"] <= summary["files"] // 100, summary
    assert summary["parsed"] + summary["skipped"] + summary["errors"] == summary["files"], summary


class EveryFile(TPUMigrator):
    """The real migrator with the prefilter switched off: every file is parsed."""

    def needs_work(self, data: bytes) -> bool:
        return True


def _sample():
    files = sorted(f.path for f in discover([str(STDLIB)]) if f.problem is None)
    files = [p for p in files if p.suffix == ".py" and 0 < p.stat().st_size <= SAMPLE_MAX_BYTES]
    step = max(1, len(files) // SAMPLE)
    chosen = []
    for path in files[::step][:SAMPLE]:
        data = path.read_bytes()
        try:
            compile(data, str(path), "exec", dont_inherit=True, flags=0x400)  # ast only
        except (SyntaxError, ValueError):
            continue  # deliberately broken test data; CPython refuses it too
        chosen.append(path)
    return chosen


def test_codemod_over_a_sample_of_the_standard_library():
    sample = _sample()
    assert len(sample) > SAMPLE // 2
    before = {path: path.read_bytes() for path in sample}
    results = list(run(sample, EngineMigrator(EveryFile()), "check", jobs=2))
    assert len(results) == len(sample)
    failed = [f"{r.path}: {r.error}" for r in results if r.failed]
    assert failed == []
    findings = [f"{r.path}: {[getattr(x, 'rule', x) for x in r.reports]}" for r in results if r.reports]
    assert findings == []
    assert not any(r.changed for r in results)
    assert all(path.read_bytes() == data for path, data in before.items())
