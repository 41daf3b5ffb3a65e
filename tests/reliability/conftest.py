"""Helpers for the reliability suite: trees of good and bad files, the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, Optional

import pytest

# A TF 2.1 TPU program whose migration leaves nothing for a person to do.
GOOD = (
    "import tensorflow as tf\n"
    "step = tf.function(lambda v: v * 2)\n"
    "strategy = tf.distribute.experimental.TPUStrategy(resolver)\n"
    "out = strategy.experimental_run_v2(step, args=(x,))\n"
)
MIGRATED = (
    "import tensorflow as tf\n"
    "step = tf.function(lambda v: v * 2)\n"
    "strategy = tf.distribute.TPUStrategy(resolver)\n"
    "out = strategy.run(step, args=(x,))\n"
)
GOOD_NAMES = ("good_a.py", "pkg/good_b.py", "pkg/deep/good_c.py")
TEMP_SUFFIX = ".migrate-tpu.tmp"
# The result cache that runs keep in the current folder; not part of the tree's files.
CACHE_FOLDER = ".migrate-tpu-cache"


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str

    def lines_naming(self, name: str):
        return [line for line in self.stderr.splitlines() if line.startswith(name + ":")]


def migrate_tpu(*args: str, cwd: Path, env: Optional[Dict[str, str]] = None, timeout: float = 120) -> Outcome:
    full_env = dict(os.environ)
    full_env.pop("PRE_COMMIT", None)
    full_env.pop("MIGRATE_TPU_TEST_CRASH", None)
    full_env.pop("MIGRATE_TPU_FILE_TIMEOUT", None)
    full_env.update(env or {})
    done = subprocess.run(
        [sys.executable, "-m", "migrate_tpu", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        timeout=timeout,
    )
    return Outcome(done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace"))


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def snapshot(root: Path) -> Dict[str, bytes]:
    """Every regular file under ``root`` (links not followed) and its bytes.

    The result cache (``.migrate-tpu-cache``) is the tool's own folder, not the user's code.
    """
    files = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != CACHE_FOLDER]
        for name in names:
            path = Path(folder, name)
            if not path.is_symlink() and path.is_file():
                files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files


def temp_files(root: Path) -> list:
    return [str(p) for p in root.rglob("*") if p.name.endswith(TEMP_SUFFIX)]


@pytest.fixture
def tree(tmp_path):
    """A project folder holding the good files; tests add one bad kind beside them."""
    root = tmp_path / "project"
    for name in GOOD_NAMES:
        write(root / name, GOOD)
    return root


def assert_good_migrated(root: Path, names: Iterable[str] = GOOD_NAMES) -> None:
    for name in names:
        assert (root / name).read_text(encoding="utf-8") == MIGRATED, f"{name} was not migrated"


def assert_clean_run(outcome: Outcome, root: Path) -> None:
    assert "Traceback" not in outcome.stderr, outcome.stderr
    assert "Traceback" not in outcome.stdout
    assert temp_files(root) == []
