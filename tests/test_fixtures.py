"""Fixture trees under ``tests/fixtures/<case>/``: ``before/`` migrates to ``after/``.

For every case, through the real CLI in a subprocess:
- ``fix`` turns a copy of ``before/`` into exactly ``after/`` (bytes), and
  files absent from ``after/`` must stay byte-identical;
- every output file parses, and a second ``fix`` changes nothing;
- ``diff`` on a fresh copy, applied with ``patch -p1`` and with ``git apply``,
  gives the same bytes as ``fix``.
A ``case.toml`` may hold ``args = [...]`` (extra CLI flags).
"""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

FIXTURES = Path(__file__).parent / "fixtures"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "before").is_dir())


def _files(root: Path):
    return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())


def _args(case: str):
    config = FIXTURES / case / "case.toml"
    if config.exists():
        return tomllib.loads(config.read_text())["args"]
    return []


def _expected(case: str, relative: Path) -> bytes:
    after = FIXTURES / case / "after" / relative
    source = after if after.exists() else FIXTURES / case / "before" / relative
    return source.read_bytes()


def _run(args, cwd):
    return subprocess.run([sys.executable, "-m", "migrate_tpu", *args], cwd=cwd, capture_output=True)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.slow
def test_fix_matches_expected(case, tmp_path):
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / case / "before", work)
    result = _run(["fix", ".", *_args(case)], work)
    assert result.returncode in (0, 1), result.stderr.decode()
    assert b"Traceback" not in result.stderr
    for relative in _files(FIXTURES / case / "before"):
        produced = (work / relative).read_bytes()
        assert produced == _expected(case, relative), f"{case}/{relative}"
        if relative.suffix == ".py":
            ast.parse(produced)
    # Idempotent: a second run finds nothing more to fix.
    again = _run(["diff", ".", *_args(case)], work)
    assert again.returncode in (0,), again.stdout.decode() + again.stderr.decode()
    assert again.stdout == b""


@pytest.mark.parametrize("tool", ["patch", "git"])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.slow
def test_diff_applies_to_what_fix_writes(case, tool, tmp_path):
    work = tmp_path / "tree"
    shutil.copytree(FIXTURES / case / "before", work)
    shown = _run(["diff", ".", *_args(case)], work)
    assert shown.returncode in (0, 1), shown.stderr.decode()
    changed = any(_expected(case, r) != (FIXTURES / case / "before" / r).read_bytes() for r in _files(FIXTURES / case / "before"))
    assert shown.returncode == (1 if changed else 0)
    if not shown.stdout:
        assert not changed
        return
    if tool == "patch":
        applied = subprocess.run(["patch", "-p1", "--quiet", "--binary"], input=shown.stdout, cwd=work, capture_output=True)
    else:
        subprocess.run(["git", "init", "-q", "."], cwd=work, check=True)
        applied = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], input=shown.stdout, cwd=work, capture_output=True)
    assert applied.returncode == 0, applied.stdout.decode() + applied.stderr.decode()
    for relative in _files(FIXTURES / case / "before"):
        assert (work / relative).read_bytes() == _expected(case, relative), f"{case}/{relative}"
