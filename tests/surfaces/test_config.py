"""[tool.migrate-tpu] settings, per-line ignore comments and --target auto."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from migrate_tpu.codemod.foundation.targets import TENSORFLOW_PACKAGES, target_for_requirement
from migrate_tpu.engine.config import Requirement, find_requirement, requirement_in_line

TRAIN = """\
import tensorflow as tf
strategy = tf.distribute.experimental.TPUStrategy()
out = strategy.experimental_run_v2(tf.function(lambda x: x), args=(1,))
"""

UNSAFE = """\
import tensorflow as tf
from mylib import step
strategy = tf.distribute.TPUStrategy()
strategy.run(step, args=(1,))
"""


def _write(folder: Path, files: dict) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), "utf-8")


def _rules(result) -> set:
    return {(f["path"], f["rule"]) for f in json.loads(result.stdout)["findings"]}


@pytest.mark.slow
def test_ignore_and_select_from_pyproject(run_cli, tmp_path):
    _write(tmp_path, {"pyproject.toml": '[tool.migrate-tpu]\nignore = ["TPU101"]\n', "train.py": TRAIN})
    assert _rules(run_cli("check", "--format", "json", ".")) == {("train.py", "TPU103")}
    # A --select on the command line starts a new selection.
    assert _rules(run_cli("check", "--format", "json", "--select", "TPU101", ".")) == {("train.py", "TPU101")}
    # --isolated ignores the file.
    assert _rules(run_cli("check", "--format", "json", "--isolated", ".")) == {("train.py", "TPU101"), ("train.py", "TPU103")}


@pytest.mark.slow
def test_nearest_pyproject_is_searched_from_the_path(run_cli, tmp_path):
    _write(
        tmp_path,
        {
            "pyproject.toml": '[tool.migrate-tpu]\nignore = ["TPU103"]\n',
            "sub/pyproject.toml": '[project]\nname = "sub"\n\n[tool.migrate-tpu]\nselect = ["TPU103"]\n',
            "sub/train.py": TRAIN,
        },
    )
    assert _rules(run_cli("check", "--format", "json", "sub")) == {("sub/train.py", "TPU103")}
    assert _rules(run_cli("check", "--format", "json", ".", cwd=tmp_path / "sub")) == {("train.py", "TPU103")}
    assert _rules(run_cli("check", "--format", "json", ".")) == {("sub/train.py", "TPU101")}


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_exclude_and_force_exclude(run_cli, tmp_path):
    _write(tmp_path, {"pyproject.toml": '[tool.migrate-tpu]\nexclude = ["legacy/*", "scratch_*.py"]\n',
                      "legacy/old.py": TRAIN, "scratch_1.py": TRAIN, "train.py": TRAIN})
    assert {path for path, _ in _rules(run_cli("check", "--format", "json", "."))} == {"train.py"}
    # Named on the command line, a file is taken, unless --force-exclude (pre-commit).
    assert {path for path, _ in _rules(run_cli("check", "--format", "json", "legacy/old.py", "train.py"))} == {"legacy/old.py", "train.py"}
    result = run_cli("check", "--format", "json", "--force-exclude", "legacy/old.py", "scratch_1.py", "train.py")
    assert {path for path, _ in _rules(result)} == {"train.py"}


def test_per_file_ignores(run_cli, tmp_path):
    _write(
        tmp_path,
        {
            "pyproject.toml": '[tool.migrate-tpu]\n[tool.migrate-tpu.per-file-ignores]\n"legacy/*" = ["TPU103"]\n"*.ipynb" = ["TPU1"]\n',
            "legacy/old.py": TRAIN,
            "train.py": TRAIN,
        },
    )
    result = run_cli("fix", ".")
    assert result.returncode == 0, result.stderr
    old = (tmp_path / "legacy" / "old.py").read_text("utf-8")
    assert "experimental.TPUStrategy" in old and "strategy.run(" in old
    assert "experimental" not in (tmp_path / "train.py").read_text("utf-8")


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_unsafe_fixes_from_config_and_overridden(run_cli, tmp_path):
    _write(tmp_path, {"pyproject.toml": "[tool.migrate-tpu]\nunsafe-fixes = true\n", "a.py": UNSAFE})
    assert "strategy.run(tf.function(step)" in run_cli("diff", "a.py").stdout
    assert run_cli("diff", "--no-unsafe-fixes", "a.py").stdout == ""


@pytest.mark.parametrize(
    "table, message",
    [
        ('colour = "blue"', "unknown setting"),
        ('select = ["NOPE9"]', "no rule matches 'NOPE9'"),
        ("unsafe-fixes = 1", "must be true or false"),
        ('target = "2.9"', "target must be one of"),
        ("[tool.migrate-tpu.per-file-ignores]\n'x' = 3", "list of rule ids"),
    ],
)
def test_bad_settings_are_clear_errors(run_cli, tmp_path, table, message):
    _write(tmp_path, {"pyproject.toml": f"[tool.migrate-tpu]\n{table}\n", "train.py": TRAIN})
    result = run_cli("check", ".")
    assert result.returncode == 2
    assert message in result.stderr
    assert result.stdout == ""


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_ignore_comments_leave_statements_alone(run_cli, tmp_path):
    source = (
        "import tensorflow as tf\n"
        "strategy = tf.distribute.experimental.TPUStrategy()  # migrate-tpu: ignore\n"
        "a = strategy.experimental_run_v2(tf.function(abs), args=(1,))  # migrate-tpu: ignore[TPU101]\n"
        "b = strategy.experimental_run_v2(tf.function(abs), args=(1,))  # migrate-tpu: ignore[TPU103]\n"
        "c = strategy.experimental_run_v2(\n"
        "    tf.function(abs), args=(1,))  # migrate-tpu: ignore[TPU1]\n"
    )
    (tmp_path / "a.py").write_text(source, "utf-8")
    check = run_cli("check", "--format", "json", "a.py")
    assert [(f["rule"], f["line"]) for f in json.loads(check.stdout)["findings"]] == [("TPU101", 4)]
    run_cli("fix", "a.py")
    fixed = (tmp_path / "a.py").read_text("utf-8")
    assert fixed == source.replace("b = strategy.experimental_run_v2", "b = strategy.run")


# -- --target auto ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "files, target, note",
    [
        ({"requirements.txt": "numpy\ntensorflow==2.4.1  # pinned\n"}, "2.4", "'tensorflow==2.4.1  # pinned' in requirements.txt: TensorFlow 2.4"),
        ({"pyproject.toml": '[project]\nname = "x"\ndependencies = ["tensorflow-cpu>=2.6,<3"]\n'}, "latest", "TensorFlow 2.6, migrating to the latest API"),
        ({"requirements-dev.txt": "tensorflow-datasets==4.0\ntensorflow~=2.1.0\n"}, "2.4", "allows TensorFlow 2.1; migrating to 2.4"),
        ({"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.8"\ntensorflow = "^2.5"\n'}, "latest", "TensorFlow 2.5"),
        ({}, "2.4", "no tensorflow requirement found"),
    ],
)
def test_target_auto(run_cli, tmp_path, files, target, note):
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()  # the search stops at the repository root
    _write(project, files)
    (project / "train.py").write_text(TRAIN, "utf-8")
    result = run_cli("check", "--target", "auto", "project")
    assert result.returncode == 1
    assert note in result.stderr
    found = find_requirement(project / "train.py", TENSORFLOW_PACKAGES)
    assert target_for_requirement(found and found.requirement, found and found.source, found and found.lower)[0] == target


def test_target_auto_from_config(run_cli, tmp_path):
    _write(tmp_path, {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["tensorflow==2.4.1"]\n\n[tool.migrate-tpu]\ntarget = "auto"\n',
                      "train.py": TRAIN})
    result = run_cli("check", ".")
    assert "--target auto: 'tensorflow==2.4.1' in pyproject.toml: TensorFlow 2.4, migrating to 2.4" in result.stderr


@pytest.mark.parametrize(
    "line, lower",
    [
        ("tensorflow==2.1.0", (2, 1)),
        ("tensorflow-gpu >=2.3, <2.5", (2, 3)),
        ("tensorflow[and-cuda]==2.15.*", (2, 15)),
        ("tensorflow; python_version < '3.9'", None),
        ("tensorflow_cpu===2.4.1", (2, 4)),
    ],
)
def test_requirement_lines(line, lower):
    found = requirement_in_line(line, "requirements.txt", TENSORFLOW_PACKAGES)
    assert isinstance(found, Requirement) and found.lower == lower


@pytest.mark.parametrize("line", ["tensorflow-datasets==4.0", "tensorflow_hub>=0.9", "# tensorflow==2.1", "tf-keras"])
def test_other_packages_are_not_tensorflow(line):
    assert requirement_in_line(line, "requirements.txt", TENSORFLOW_PACKAGES) is None
