"""Helpers for the surface tests: the real CLI in a subprocess, fixture paths."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
ENVS = Path(os.environ.get("MIGRATE_TPU_ENVS", Path.home() / ".cache" / "migrate-tpu" / "envs"))

# A TF 2.1 training script with safe fixes (TPU101, TPU103) and manual work (TPU202), for
# the report and patch tests.
TRAIN = """\
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
strategy = tf.distribute.experimental.TPUStrategy(resolver)


@tf.function
def step(batch):
    return strategy.experimental_run_v2(lambda x: x * 2, args=(batch,))
"""


def clean_env(extra=None):
    env = dict(os.environ)
    for name in ("PRE_COMMIT", "GITHUB_ACTIONS", "CI"):
        env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update(extra or {})
    return env


@pytest.fixture
def run_cli(tmp_path):
    """``run_cli("check", path, cwd=..., env=...)``: the real CLI, output as text."""

    def run(*args, input=None, cwd=None, env=None):
        return subprocess.run(
            [sys.executable, "-m", "migrate_tpu", *map(str, args)],
            input=input,
            capture_output=True,
            text=True,
            encoding="utf-8",
            cwd=cwd or tmp_path,
            env=clean_env(env),
        )

    return run


@pytest.fixture
def fixture_copy(tmp_path):
    """Copy a fixture file into the test's folder and return the copy's path."""

    def copy(name: str, folder: Path = None) -> Path:
        target = (folder or tmp_path) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURES / name, target)
        return target

    return copy
