"""The composite action's check step, run by bash as a runner would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT, clean_env

TRAIN = "import tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy()\n"


def _action():
    return yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))


def _check_step():
    return next(step for step in _action()["runs"]["steps"] if step.get("id") == "check")


def test_action_shape():
    action = _action()
    assert action["runs"]["using"] == "composite"
    assert {"paths", "args", "version", "annotations", "summary", "sarif-file", "fail-on-findings"} <= set(action["inputs"])
    assert set(action["outputs"]) == {"exit-code", "markdown-file", "findings", "verify-exit-code"}
    assert {"verify", "verify-args"} <= set(action["inputs"])
    verify = next(step for step in action["runs"]["steps"] if step.get("id") == "verify")
    assert verify["if"] == "inputs.verify != ''"  # no verify step unless entry points are named
    # Inputs reach the scripts through the environment only, never spliced into them.
    for step in (_check_step(), verify):
        assert "${{" not in step["run"]
    assert all(step["shell"] == "bash" for step in action["runs"]["steps"] if "run" in step)


def _run_step(tmp_path, inputs):
    step = _check_step()
    script = tmp_path / "step.sh"
    script.write_text(step["run"], "utf-8")
    summary, output = tmp_path / "summary.md", tmp_path / "output.txt"
    env = {
        "MIGRATE_TPU_PATHS": ".",
        "MIGRATE_TPU_ARGS": "",
        "MIGRATE_TPU_ANNOTATIONS": "true",
        "MIGRATE_TPU_SUMMARY": "true",
        "MIGRATE_TPU_SARIF": "",
        "MIGRATE_TPU_FAIL": "true",
        "RUNNER_TEMP": str(tmp_path / "runner-temp"),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        **inputs,
    }
    completed = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=tmp_path / "repo",
        capture_output=True,
        text=True,
        env=clean_env(env),
        timeout=300,
    )
    outputs = dict(line.split("=", 1) for line in output.read_text("utf-8").splitlines()) if output.exists() else {}
    return completed, summary.read_text("utf-8") if summary.exists() else "", outputs


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "train.py").write_text(TRAIN, "utf-8")
    return tmp_path / "repo"


@pytest.mark.slow
def test_findings_fail_the_step_with_annotations_summary_and_sarif(tmp_path, repo):
    completed, summary, outputs = _run_step(tmp_path, {"MIGRATE_TPU_SARIF": "out.sarif", "MIGRATE_TPU_ARGS": "--target auto"})
    assert completed.returncode == 1, completed.stderr
    assert "::warning file=train.py,line=2,col=12,title=TPU103::" in completed.stdout
    assert summary.startswith("## migrate-tpu") and "+strategy = tf.distribute.TPUStrategy()" in summary
    assert outputs["exit-code"] == "1" and outputs["findings"] == "1"
    assert Path(outputs["markdown-file"]).read_text("utf-8") == summary
    assert json.loads((repo / "out.sarif").read_text("utf-8"))["runs"][0]["results"][0]["ruleId"] == "TPU103"
    assert (repo / "train.py").read_text("utf-8") == TRAIN


@pytest.mark.slow
def test_preview_only_passes(tmp_path, repo):
    completed, summary, outputs = _run_step(tmp_path, {"MIGRATE_TPU_FAIL": "false", "MIGRATE_TPU_ANNOTATIONS": "false"})
    assert completed.returncode == 0, completed.stderr
    assert "::warning" not in completed.stdout
    assert outputs["exit-code"] == "1"


@pytest.mark.slow
def test_errors_always_fail(tmp_path, repo):
    (repo / "bad.py").write_text("import tensorflow as tf\ndef f(:\n    tf.distribute.experimental.TPUStrategy()\n", "utf-8")
    completed, _, outputs = _run_step(tmp_path, {"MIGRATE_TPU_FAIL": "false"})
    assert completed.returncode == 2
    assert outputs["exit-code"] == "2"
    assert "::error file=bad.py,line=2,title=migrate-tpu::cannot parse" in completed.stdout


@pytest.mark.slow  # the action's step run as CI runs it, like the tests beside it
def test_clean_repository(tmp_path, repo):
    (repo / "train.py").write_text("print('hello')\n", "utf-8")
    completed, summary, outputs = _run_step(tmp_path, {})
    assert completed.returncode == 0
    assert set(outputs) == {"exit-code", "markdown-file", "findings"}
    assert outputs["exit-code"] == "0" and outputs["findings"] == "0"
    assert Path(outputs["markdown-file"]).read_text("utf-8") == summary
    assert "Nothing to migrate: 1 file scanned." in summary
