"""The hooks in .pre-commit-hooks.yaml, run by the real pre-commit.

The hook repository is a snapshot of this working tree committed to a
temporary git repository, so the test sees the manifest and the package as
they are now. pre-commit installs a hook into an environment of its own (pip,
the slow part) once per repository and revision in its store: the tests that
run a `.pre-commit-config.yaml` share one store (``PRE_COMMIT_HOME``), as a
user's machine does, so the hook at the snapshot's commit is installed once for
them all (and once more for the documented snippet's ``rev: main``).
`pre-commit try-repo`, the way docs/ci.md gives to try a hook first, always
installs into a store of its own: one test runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES, ROOT, clean_env

PRE_COMMIT = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which("pre-commit")
pytestmark = pytest.mark.skipif(PRE_COMMIT is None or shutil.which("git") is None, reason="needs pre-commit and git")

TRAIN = """\
import tensorflow as tf

strategy = tf.distribute.experimental.TPUStrategy()


@tf.function
def step(batch):
    return strategy.experimental_run_v2(lambda x: x * 2, args=(batch,))
"""


def _git(*args, cwd):
    env = clean_env({"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, repo / name)
    for folder in ("migrate_tpu", "rules"):
        shutil.copytree(ROOT / folder, repo / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", "snapshot", cwd=repo)
    _git("branch", "-M", "main", cwd=repo)  # the branch the documented snippet names
    return repo


def _user_repo(path: Path, files: dict) -> Path:
    path.mkdir()
    _git("init", "-q", cwd=path)
    for name, content in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, "utf-8")
    _git("add", "-A", cwd=path)
    _git("commit", "-q", "-m", "TF 2.1 code", cwd=path)
    return path


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory):
    """pre-commit's store (its clones and hook environments), shared by this module's tests."""
    return tmp_path_factory.mktemp("pre-commit-home")


def _try_repo(hook_repo: Path, user_repo: Path, hook: str):
    return subprocess.run(
        [PRE_COMMIT, "try-repo", str(hook_repo), hook, "--all-files", "--color", "never"],
        cwd=user_repo,
        capture_output=True,
        text=True,
        env=clean_env({"PRE_COMMIT_HOME": str(user_repo.parent / "pre-commit-home")}),
        timeout=600,
    )


def _configured(hook_repo: Path, hook: str) -> str:
    """A `.pre-commit-config.yaml` with ``hook`` of the hook repository at its commit (what
    try-repo writes for itself)."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hook_repo, capture_output=True, text=True, check=True).stdout.strip()
    return f"repos:\n- repo: {hook_repo}\n  rev: {head}\n  hooks:\n  - id: {hook}\n"


def _run_hooks(user_repo: Path, home: Path):
    """`pre-commit run --all-files` in ``user_repo`` (its committed config), with the store ``home``."""
    return subprocess.run(
        [PRE_COMMIT, "run", "--all-files", "--color", "never"],
        cwd=user_repo,
        capture_output=True,
        text=True,
        env=clean_env({"PRE_COMMIT_HOME": str(home)}),
        timeout=600,
    )


@pytest.mark.slow
def test_fix_hook_fails_and_fixes_then_passes(hook_repo, pre_commit_home, tmp_path):
    notebook = (FIXTURES / "jupyter_layout.ipynb").read_bytes()
    user = _user_repo(tmp_path / "user", {"train.py": TRAIN, "notebooks/demo.ipynb": notebook, "README.md": "# TF 2.1 TPU\n",
                                          ".pre-commit-config.yaml": _configured(hook_repo, "migrate-tpu")})
    first = _run_hooks(user, pre_commit_home)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "files were modified by this hook" in first.stdout
    assert "Fixed train.py (2 fixes)" in first.stdout
    fixed = (user / "train.py").read_text("utf-8")
    assert "tf.distribute.TPUStrategy()" in fixed and "strategy.run(" in fixed
    cells = json.loads((user / "notebooks" / "demo.ipynb").read_text("utf-8"))["cells"]
    assert "".join(cells[1]["source"]).endswith("strategy = tf.distribute.TPUStrategy()\n")

    second = _run_hooks(user, pre_commit_home)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Passed" in second.stdout


@pytest.mark.slow
def test_check_hook_fails_and_changes_nothing(hook_repo, tmp_path):
    # as docs/ci.md tries a hook before configuring it
    user = _user_repo(tmp_path / "user", {"train.py": TRAIN})
    result = _try_repo(hook_repo, user, "migrate-tpu-check")
    assert result.returncode == 1
    assert "train.py:3:12: TPU103 [*]" in result.stdout
    assert "files were modified" not in result.stdout
    assert (user / "train.py").read_text("utf-8") == TRAIN


@pytest.mark.slow
def test_no_matching_files_is_a_success(hook_repo, pre_commit_home, tmp_path):
    user = _user_repo(tmp_path / "user", {"README.md": "nothing to see\n", "data.csv": "a,b\n",
                                          ".pre-commit-config.yaml": _configured(hook_repo, "migrate-tpu")})
    result = _run_hooks(user, pre_commit_home)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(no files to check)Skipped" in result.stdout


def test_hook_called_with_no_files_succeeds(run_cli):
    # pre-commit may still start a hook with an empty file list (always_run).
    result = run_cli("fix", env={"PRE_COMMIT": "1"})
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    assert run_cli("fix").returncode == 2  # outside pre-commit: a usage error


def test_no_process_pool_under_pre_commit(tmp_path):
    # Settings the composition root derives, in-process: no pool under
    # pre-commit or for a small batch of named files; the default (one per
    # core) for folders.
    from migrate_tpu.compose import settings_for
    from migrate_tpu.settings import CommandLine

    files = []
    for index in range(10):
        path = tmp_path / f"m{index}.py"
        path.write_text(TRAIN, "utf-8")
        files.append(str(path))

    def jobs(paths, **typed):
        return settings_for(tuple(paths), CommandLine(**typed), isolated=True)[0].jobs

    old = os.environ.pop("PRE_COMMIT", None)
    try:
        assert jobs(files) == 1
        assert jobs([str(tmp_path)]) == 0
        assert jobs([str(tmp_path)], jobs=3) == 3
        os.environ["PRE_COMMIT"] = "1"
        assert jobs([str(tmp_path)]) == 1
    finally:
        os.environ.pop("PRE_COMMIT", None)
        if old is not None:
            os.environ["PRE_COMMIT"] = old


def _documented_config(hook_repo: Path) -> str:
    """The `.pre-commit-config.yaml` of docs/ci.md, its repository address replaced by the
    local hook repository (what a user does with the URL they clone from)."""
    text = (ROOT / "docs" / "ci.md").read_text("utf-8")
    start = text.index("# .pre-commit-config.yaml")
    block = text[start : text.index("```", start)]
    assert "rev: main" in block and "id: migrate-tpu" in block, block
    return "\n".join(
        line.replace("https://github.com/OWNER/migrate-tpu", str(hook_repo)) for line in block.splitlines()
    ) + "\n"


@pytest.mark.slow
def test_the_documented_snippet_runs_as_pasted_and_pins_a_commit(hook_repo, pre_commit_home, tmp_path):
    user = _user_repo(tmp_path / "user", {"train.py": TRAIN, ".pre-commit-config.yaml": _documented_config(hook_repo)})
    env = clean_env({"PRE_COMMIT_HOME": str(pre_commit_home)})

    def pre_commit(*args):
        return subprocess.run([PRE_COMMIT, *args], cwd=user, capture_output=True, text=True, env=env, timeout=600)

    first = pre_commit("run", "--all-files", "--color", "never")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "Fixed train.py (2 fixes)" in first.stdout
    # The pinning the docs describe: the branch becomes the commit it points at.
    frozen = pre_commit("autoupdate", "--freeze")
    assert frozen.returncode == 0, frozen.stdout + frozen.stderr
    head = subprocess.run(["git", "rev-parse", "main"], cwd=hook_repo, capture_output=True, text=True, check=True).stdout.strip()
    assert f"rev: {head}" in (user / ".pre-commit-config.yaml").read_text("utf-8")
    second = pre_commit("run", "--all-files", "--color", "never")
    assert second.returncode == 0, second.stdout + second.stderr
