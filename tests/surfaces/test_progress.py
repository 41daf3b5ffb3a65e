"""The progress bar appears on a terminal only; the closing summary always."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import clean_env

TRAIN = "import tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy()\n"


@pytest.fixture
def tree(tmp_path):
    for index in range(30):
        text = TRAIN if index % 3 == 0 else f"value = {index}\n"
        (tmp_path / "pkg").mkdir(exist_ok=True)
        (tmp_path / "pkg" / f"m{index:02}.py").write_text(text, "utf-8")
    (tmp_path / "pkg" / "bad.py").write_text("import tensorflow as tf\ndef broken(:\n    tf.distribute.experimental.TPUStrategy()\n", "utf-8")
    return tmp_path


def _run_on_terminal(args, cwd, env=None):
    """Run the CLI with stderr on a pseudo-terminal; return (status, stderr bytes)."""
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "migrate_tpu", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=slave, env=clean_env({"TERM": "xterm", **(env or {})})
        )
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.stdout.read()
        status = process.wait(timeout=120)
    finally:
        os.close(master)
    return status, b"".join(chunks)


def test_bar_on_a_terminal(tree):
    status, err = _run_on_terminal(["check", "pkg"], tree)
    assert status == 2
    assert b"\r[" in err and b"/31 files" in err
    # The bar is cleared before the summary, which is plain text.
    assert b"31 files scanned (10 parsed, 20 skipped by the prefilter), 10 would change, 10 findings" in err


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_no_bar_with_no_progress_or_in_ci(tree):
    for args, env in ((["check", "--no-progress", "pkg"], None), (["check", "pkg"], {"CI": "true"})):
        _, err = _run_on_terminal(args, tree, env)
        assert b"\r" not in err.replace(b"\r\n", b"")
        assert b"31 files scanned" in err


def test_no_bar_in_pipes_and_the_summary(run_cli, tree):
    result = run_cli("fix", "pkg")
    assert "\r" not in result.stderr
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert "pkg/bad.py:2: error: cannot parse" in result.stderr
    assert lines[-2:] == [
        "31 files scanned (10 parsed, 20 skipped by the prefilter), 10 changed, 10 fixes applied, 0 findings remaining, 1 error.",
        "By rule: TPU103 10",
    ]


def test_no_bar_for_a_few_files(tree):
    status, err = _run_on_terminal(["check", "pkg/m00.py", "pkg/m03.py"], tree)
    assert status == 1  # both files have a finding, and the run finished
    assert b"2 files scanned" in err
    assert b"\r[" not in err
