"""The linters the ecosystem expects, run as CI runs the tests: ruff and mypy, configured in
pyproject.toml ([tool.ruff], [tool.mypy]), each must report nothing; and pylint for the one room
rule ruff lacks, a module's size ([tool.pylint]: at most 600 lines).

All three are in the ``test`` extra. Each runs as a subprocess of this interpreter (the venv's),
from the repository root so that it reads pyproject.toml; on a finding the test fails
with the tool's own report. mypy keeps its incremental cache in ``.mypy_cache/`` (ignored
by git): a warm run takes under a second, a cold one (a fresh clone, CI) 10 to 25 s on 2
cores by the load, so it is in the slow tier (the full suite runs it); ruff takes under a
second and stays in the fast tier.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

REPO = Path(__file__).resolve().parent.parent

# What ruff checks: the package and every other Python the repository runs.
RUFF_PATHS = ["migrate_tpu", "tests", "benchmarks", "scripts"]


def run_module(module: str, arguments: List[str]) -> subprocess.CompletedProcess:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed in this interpreter (it comes with `pip install -e '.[test]'`)")
    return subprocess.run(
        [sys.executable, "-m", module, *arguments],
        cwd=str(REPO),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=300,
    )


def test_ruff_finds_nothing():
    done = run_module("ruff", ["check", "--no-fix", *RUFF_PATHS])
    assert done.returncode == 0, f"ruff check {' '.join(RUFF_PATHS)} (exit {done.returncode}):\n{done.stdout}"


@pytest.mark.slow
def test_no_module_of_the_package_is_over_600_lines():
    # pylint with pyproject.toml's [tool.pylint]: too-many-lines alone (10 to 25 s on 2 cores)
    done = run_module("pylint", ["migrate_tpu"])
    assert done.returncode == 0, f"pylint migrate_tpu (exit {done.returncode}):\n{done.stdout}"


@pytest.mark.slow
def test_mypy_finds_nothing():
    # No paths on the command line: the files, flags and per-module rules are pyproject.toml's.
    done = run_module("mypy", [])
    assert done.returncode == 0, f"mypy (exit {done.returncode}):\n{done.stdout}"
    assert "Success: no issues found" in done.stdout, done.stdout
    # A module gone from the package but still named by an override is only a note to
    # mypy; here it fails, so that the overrides name modules that exist.
    assert "unused section" not in done.stdout, done.stdout
