"""`diff` is a patch: real `git apply` and real `patch -p1` of its output give what `fix` writes.

On a tree with .py files and notebooks, run from a subfolder of a repository
with a file named outside the current folder, and with a file outside the
repository altogether.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES, TRAIN, clean_env

MIXED = "import tensorflow as tf\r\nstrategy = tf.distribute.experimental.TPUStrategy()\r\n"
CLEAN = "print('nothing to do')\n"


def _tree(root: Path) -> None:
    """repo/ (a git repository) with sub/ as the working folder, and outside/ beside it."""
    repo = root / "repo"
    (repo / "sub" / "pkg").mkdir(parents=True)
    (repo / "sub" / "train.py").write_text(TRAIN, "utf-8")
    (repo / "sub" / "pkg" / "crlf.py").write_bytes(MIXED.encode())
    (repo / "sub" / "clean.py").write_text(CLEAN, "utf-8")
    shutil.copyfile(FIXTURES / "tpu_colab.ipynb", repo / "sub" / "colab.ipynb")
    shutil.copyfile(FIXTURES / "jupyter_layout.ipynb", repo / "sub" / "pkg" / "layout.ipynb")
    (repo / "top.py").write_text(TRAIN, "utf-8")  # in the repository, outside the working folder
    (root / "outside").mkdir()
    (root / "outside" / "far.py").write_text(TRAIN, "utf-8")  # outside the repository
    subprocess.run(["git", "init", "-q", str(repo)], check=True)


def _diff(*args, cwd: Path) -> subprocess.CompletedProcess:
    """`migrate-tpu diff`, stdout as bytes (text mode would turn CRLF into LF)."""
    return subprocess.run([sys.executable, "-m", "migrate_tpu", "diff", *args], cwd=cwd, capture_output=True, env=clean_env())


def _snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and not {".git", ".migrate-tpu-cache"} & set(p.parts)}


def _apply(tool: str, patch: bytes, where: Path) -> subprocess.CompletedProcess:
    if tool == "patch":
        return subprocess.run(["patch", "-p1", "--batch", "--forward", "--binary"], input=patch, cwd=where, capture_output=True)
    return subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], input=patch, cwd=where, capture_output=True)


@pytest.fixture
def trees(tmp_path, run_cli):
    """Two copies of the same tree: one fixed by `fix`, one left for the patch."""
    fixed, patched = tmp_path / "fixed", tmp_path / "patched"
    for root in (fixed, patched):
        _tree(root)
    done = run_cli("fix", ".", "../top.py", cwd=fixed / "repo" / "sub")
    assert done.returncode == 1, done.stderr  # TPU202 remains for manual work
    return fixed, patched


@pytest.mark.parametrize("tool", ["git", "patch"])
@pytest.mark.slow
def test_patch_from_a_subfolder_equals_fix(run_cli, trees, tool):
    fixed, patched = trees
    shown = _diff(".", "../top.py", cwd=patched / "repo" / "sub")
    assert shown.returncode == 1, shown.stderr
    patch = shown.stdout
    # Paths are relative to the repository's top folder, never with `..`.
    headers = re.findall(rb"^\+\+\+ b/(.*)$", patch, re.M)
    assert sorted(headers) == [b"sub/colab.ipynb", b"sub/pkg/crlf.py", b"sub/pkg/layout.ipynb", b"sub/train.py", b"top.py"]
    assert b"/../" not in patch and b"a/.." not in patch
    assert f"paths in the patch are relative to {(patched / 'repo').resolve()}" in shown.stderr.decode()
    # Each file's change names its rules, on a line both tools skip.
    assert re.findall(rb"^# migrate-tpu: (.*)\n--- a/sub/train.py$", patch, re.M) == [b"TPU101, TPU103"]
    # And each hunk names its own, after the header's closing @@ (a section heading to both tools).
    hunks = re.findall(rb"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@(.*)$", patch, re.M)
    assert len(hunks) >= 7 and all(re.fullmatch(rb" TPU\d{3}(, TPU\d{3})*", h) for h in hunks), hunks
    applied = _apply(tool, patch, patched / "repo")
    assert applied.returncode == 0, applied.stdout.decode() + applied.stderr.decode()
    assert _snapshot(patched) == _snapshot(fixed)


@pytest.mark.parametrize("tool", ["git", "patch"])
@pytest.mark.slow
def test_a_file_outside_the_repository(run_cli, tmp_path, tool):
    fixed, patched = tmp_path / "fixed", tmp_path / "patched"
    for root in (fixed, patched):
        _tree(root)
    run_cli("fix", "../outside/far.py", "sub/colab.ipynb", cwd=fixed / "repo")  # from the repository's top
    shown = _diff("../outside/far.py", "sub/colab.ipynb", cwd=patched / "repo")
    patch = shown.stdout
    assert sorted(re.findall(rb"^\+\+\+ b/(.*)$", patch, re.M)) == [b"outside/far.py", b"repo/sub/colab.ipynb"]
    assert f"relative to {patched.resolve()}" in shown.stderr.decode()
    # Only one of the two trees is patched; the other half of it stays as it was.
    assert _snapshot(patched) != _snapshot(fixed)
    applied = _apply(tool, patch, patched)
    assert applied.returncode == 0, applied.stdout.decode() + applied.stderr.decode()
    assert _snapshot(patched) == _snapshot(fixed)


@pytest.mark.slow
def test_notebook_patch_touches_only_changed_source_lines(run_cli, tmp_path):
    shutil.copyfile(FIXTURES / "tpu_colab.ipynb", tmp_path / "colab.ipynb")
    shown = run_cli("diff", "colab.ipynb")
    changed = [line for line in shown.stdout.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    # Two source lines change (a class moved, a method renamed): each is one JSON string line.
    assert len(changed) == 4, changed
    assert all(line[1:].lstrip().startswith('"') for line in changed), changed
    cells = run_cli("diff", "--notebook-diff", "cells", "colab.ipynb")
    assert "+++ b/colab.ipynb:cell 4" in cells.stdout


def test_output_file_holds_the_patch(run_cli, tmp_path):
    (tmp_path / "train.py").write_text(TRAIN, "utf-8")
    shown = run_cli("diff", "train.py")
    written = run_cli("diff", "--output-file", "out.patch", "train.py")
    assert written.returncode == 1 and written.stdout == ""
    assert (tmp_path / "out.patch").read_text("utf-8") == shown.stdout
    assert (tmp_path / "train.py").read_text("utf-8") == TRAIN


@pytest.mark.parametrize("tool", ["git", "patch"])
@pytest.mark.slow
def test_names_with_spaces_quotes_and_non_ascii(run_cli, tmp_path, tool):
    # `patch` ends an unquoted name at its first space unless a tab follows it, as git writes it;
    # a quote or backslash needs git's C quoting. Both tools must find the same file as `fix`.
    names = ["my project/train step.py", 'say "hi".py', "back\\slash.py", "café.ipynb"]
    fixed, patched = tmp_path / "fixed", tmp_path / "patched"
    for root in (fixed, patched):
        for name in names:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            if name.endswith(".ipynb"):
                shutil.copyfile(FIXTURES / "tpu_colab.ipynb", root / name)
            else:
                (root / name).write_text(TRAIN, "utf-8")
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    run_cli("fix", *names, cwd=fixed)
    shown = _diff(*names, cwd=patched)
    assert shown.returncode == 1, shown.stderr
    assert b"+++ b/my project/train step.py\t\n" in shown.stdout
    assert b'+++ "b/say \\"hi\\".py"\n' in shown.stdout
    assert _snapshot(patched) != _snapshot(fixed)
    applied = _apply(tool, shown.stdout, patched)
    assert applied.returncode == 0, applied.stdout.decode() + applied.stderr.decode()
    assert _snapshot(patched) == _snapshot(fixed)


HUNKS = """\
import tensorflow as tf

strategy = tf.distribute.experimental.TPUStrategy(resolver)
{gap}
def step(x):
    return x


out = strategy.experimental_run_v2(step, args=(1,))
{gap}
from tensorflow.keras.mixed_precision import experimental as mixed
mixed.set_policy("mixed_bfloat16")
"""


@pytest.mark.slow  # the CLI twice, then git or patch
@pytest.mark.parametrize("tool", ["git", "patch"])
def test_each_hunk_names_the_rules_behind_it(run_cli, tmp_path, tool):
    gap = "\n".join(f"x{i} = {i}" for i in range(12))
    for name in ("fixed", "patched"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.py").write_text(HUNKS.format(gap=gap), "utf-8")
    shown = _diff("train.py", cwd=tmp_path / "patched")
    headings = re.findall(rb"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$", shown.stdout, re.M)
    # the constructor, the run call with the function it decorates, the mixed precision call and its import
    assert headings == [b"TPU103", b"TPU101, TPU301", b"TPU402"], shown.stdout.decode()
    assert run_cli("fix", "train.py", cwd=tmp_path / "fixed").returncode == 0
    applied = _apply(tool, shown.stdout, tmp_path / "patched")
    assert applied.returncode == 0, applied.stdout.decode() + applied.stderr.decode()
    assert _snapshot(tmp_path / "patched") == _snapshot(tmp_path / "fixed")
