"""Issue #6, part 4: real trees. CPython's standard library is on every machine.

``check`` over the whole standard library must neither crash nor find
anything (it has no TensorFlow). Because the prefilter rightly skips nearly
every file there, a second test makes the codemod parse and analyse a fixed
sample of the library with the prefilter switched off: it must report
nothing and change nothing, and no file may fail for any reason but one
CPython itself has.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from migrate_tpu.codemod.migrator import TPUMigrator
from migrate_tpu.engine.discover import discover
from migrate_tpu.engine.pipeline import run

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SAMPLE = 160
SAMPLE_MAX_BYTES = 40_000

pytestmark = pytest.mark.skipif(not (STDLIB / "os.py").exists(), reason="no standard library sources")


def test_check_over_the_standard_library_finds_nothing_and_does_not_crash(tmp_path):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "migrate_tpu", "check", "--jobs", "2", str(STDLIB)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    elapsed = time.monotonic() - started
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == ""
    assert ": error: " not in done.stderr
    assert elapsed < 60, f"check over the standard library took {elapsed:.1f} s"


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
    results = list(run(sample, EveryFile(), "check", jobs=2))
    assert len(results) == len(sample)
    failed = [f"{r.path}: {r.error}" for r in results if r.failed]
    assert failed == []
    findings = [f"{r.path}: {[getattr(x, 'rule', x) for x in r.reports]}" for r in results if r.reports]
    assert findings == []
    assert not any(r.changed for r in results)
    assert all(path.read_bytes() == data for path, data in before.items())
