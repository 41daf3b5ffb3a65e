"""Issue #6, part 1: bad input beside good input, in one run over a tree.

Each test puts one kind of bad (or awkward) file beside good TF 2.1 files and
runs the real CLI over the whole tree. The bad file must be named with a
one-line reason and left byte-identical; the good files must be migrated; no
traceback and no temporary file may be left behind.
"""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from tests.reliability.conftest import (
    GOOD,
    MIGRATED,
    assert_clean_run,
    assert_good_migrated,
    migrate_tpu,
    snapshot,
    write,
)

TF_LINES = "import tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy(resolver)\n"


def run_fix(root, *extra, env=None):
    return migrate_tpu("fix", "--no-progress", ".", *extra, cwd=root, env=env) if _has_no_progress() else migrate_tpu("fix", ".", *extra, cwd=root, env=env)


_NO_PROGRESS = None


def _has_no_progress() -> bool:
    global _NO_PROGRESS
    if _NO_PROGRESS is None:
        import subprocess

        help_text = subprocess.run([sys.executable, "-m", "migrate_tpu", "fix", "--help"], capture_output=True, text=True).stdout
        _NO_PROGRESS = "--no-progress" in help_text
    return _NO_PROGRESS


def assert_named_error(outcome, name: str, reason: str) -> None:
    lines = outcome.lines_naming(name)
    assert lines, f"{name} is not named:\n{outcome.stderr}"
    assert any("error" in line and reason in line for line in lines), f"{name}: expected {reason!r} in {lines}"


def assert_bad_file_untouched(root, name: str, before: bytes) -> None:
    assert (root / name).read_bytes() == before, f"{name} was modified"


# -- files that are errors: named, untouched, exit status 2 ----------------------------

ERROR_KINDS = {
    "syntax_error": (TF_LINES + "def broken(:\n    pass\n").encode(),
    "python2": (TF_LINES + 'print "training on", strategy\nexec "x = 1"\ntry:\n    pass\nexcept ValueError, error:\n    pass\n').encode(),
    "latin1_without_coding_line": b"# r\xe9sum\xe9 of the model\n" + TF_LINES.encode(),
    "unknown_coding_line": b"# -*- coding: no-such-codec -*-\n" + TF_LINES.encode(),
    "coding_line_that_lies": b"# -*- coding: ascii -*-\n# caf\xc3\xa9\n" + TF_LINES.encode(),
    "binary_with_tf_names": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + TF_LINES.encode() + bytes(range(256)),
    "utf16_source": "\ufeff".encode("utf-16-le") + TF_LINES.encode("utf-16-le"),
    "nul_byte_in_source": TF_LINES.encode() + b"x = 1\x00\n",
}
REASONS = {
    "syntax_error": "cannot parse",
    "python2": "cannot parse",
    "latin1_without_coding_line": "cannot decode byte 0xe9",
    "unknown_coding_line": "no-such-codec",
    "coding_line_that_lies": "cannot decode",
    "binary_with_tf_names": "binary file",
    "utf16_source": "binary file",
    "nul_byte_in_source": "binary file",
}


@pytest.mark.parametrize("kind", sorted(ERROR_KINDS))
@pytest.mark.slow
def test_bad_file_is_named_and_untouched(tree, kind):
    name = f"bad/{kind}.py"
    data = ERROR_KINDS[kind]
    write(tree / name, data)
    outcome = run_fix(tree)
    assert outcome.returncode == 2, outcome.stderr
    assert_named_error(outcome, name, REASONS[kind])
    assert len(outcome.lines_naming(name)[0].splitlines()) == 1
    assert_bad_file_untouched(tree, name, data)
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_random_binary_file_named_py(tree):
    data = bytes((i * 7919 + 13) % 256 for i in range(4096))  # no TF names, NUL bytes inside
    write(tree / "blob.py", data)
    outcome = run_fix(tree)
    assert outcome.returncode == 2
    assert_named_error(outcome, "blob.py", "binary file")
    assert_bad_file_untouched(tree, "blob.py", data)
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


def test_fifo_named_py_does_not_hang(tree):
    os.mkfifo(tree / "pipe.py")
    outcome = run_fix(tree)
    assert outcome.returncode == 2
    assert_named_error(outcome, "pipe.py", "not a regular file")
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


@pytest.mark.slow
def test_read_only_file(tree):
    data = GOOD.encode()
    path = write(tree / "frozen.py", data)
    os.chmod(path, 0o444)
    outcome = run_fix(tree)
    assert outcome.returncode == 2
    assert_named_error(outcome, "frozen.py", "read-only")
    assert_bad_file_untouched(tree, "frozen.py", data)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)
    # Reading is enough for check and diff: no error there.
    assert migrate_tpu("check", "frozen.py", cwd=tree).returncode == 1


def _finding_lines(text: str, name: str):
    """The ``path:line:col: ID`` heads of the findings naming ``name``, in order."""
    import re

    return sorted(match.group(0) for match in re.finditer(rf"^{re.escape(name)}:(cell \d+:)?\d+:\d+: TPU\d+", text, re.M))


FROZEN_NOTEBOOK = json.dumps(
    {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# frozen\n"]},
            {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["import tensorflow as tf\n", "x = 1\n"]},
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": None,
                "outputs": [],
                "source": [
                    "strategy = tf.distribute.experimental.TPUStrategy(resolver)\n",
                    "loss = strategy.experimental_run_v2(step, args=(x,))",
                ],
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 4,
    },
    indent=1,
)


@pytest.mark.parametrize(
    "name, data",
    [("frozen.py", TF_LINES + "x = 1\nloss = strategy.experimental_run_v2(step, args=(x,))\n"), ("frozen.ipynb", FROZEN_NOTEBOOK)],
)
@pytest.mark.slow
def test_a_file_that_cannot_be_written_reports_its_findings_where_they_are(tree, name, data):
    # Nothing was applied, so every finding sits where `check` puts it, in the file
    # as it is: not at line 0 (an applied fix) nor where the fixed code would have it.
    path = write(tree / name, data.encode())
    os.chmod(path, 0o444)
    outcome = migrate_tpu("fix", "--no-progress", name, cwd=tree)
    assert outcome.returncode == 2
    assert_named_error(outcome, name, "read-only")
    checked = migrate_tpu("check", "--no-progress", name, cwd=tree)
    expected = _finding_lines(checked.stdout, name)
    assert len(expected) == 3, checked.stdout
    assert _finding_lines(outcome.stdout + outcome.stderr, name) == expected


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root may read any file")
def test_unreadable_file(tree):
    data = GOOD.encode()
    path = write(tree / "secret.py", data)
    os.chmod(path, 0)
    try:
        outcome = run_fix(tree)
        assert outcome.returncode == 2
        assert_named_error(outcome, "secret.py", "cannot read")
        assert_good_migrated(tree)
        assert_clean_run(outcome, tree)
    finally:
        os.chmod(path, 0o644)
    assert path.read_bytes() == data


# -- deeply nested and very large files -------------------------------------------------


NESTING_REASONS = ("too deeply nested", "crashed (SIGSEGV)", "gave up after")
DEEP_BRACKETS = TF_LINES + "y = " + "[" * 5000 + "1" + "]" * 5000 + "\n"


def assert_named_for_nesting(outcome, name: str) -> None:
    lines = outcome.lines_naming(name)
    assert any(": error: " in line and any(reason in line for reason in NESTING_REASONS) for line in lines), outcome.stderr


def test_deeply_nested_brackets(tree):
    # 5,000 nested lists: the parser either reports the depth, overflows its
    # stack (the worker dies: only this file is lost) or runs out of time.
    data = DEEP_BRACKETS.encode()
    write(tree / "nested.py", data)
    outcome = run_fix(tree, env={"MIGRATE_TPU_FILE_TIMEOUT": "10"})
    assert outcome.returncode == 2
    assert_named_for_nesting(outcome, "nested.py")
    assert_bad_file_untouched(tree, "nested.py", data)
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


@pytest.mark.slow
def test_nesting_that_overwhelms_the_parser_costs_only_its_file(tree):
    # 10,000 unary minus signs: LibCST's parser grinds for over a minute, then
    # overflows its stack. A time limit ends it; the run goes on.
    data = (TF_LINES + "y = " + "-" * 10000 + "1\n").encode()
    write(tree / "minus.py", data)
    # One worker: its first file (a good one) also pays for loading LibCST.
    outcome = run_fix(tree, "--jobs", "1", env={"MIGRATE_TPU_FILE_TIMEOUT": "3"})
    assert outcome.returncode == 2
    assert_named_error(outcome, "minus.py", "gave up after")
    assert "MIGRATE_TPU_FILE_TIMEOUT" in outcome.lines_naming("minus.py")[0]
    assert_bad_file_untouched(tree, "minus.py", data)
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


def test_deep_but_legal_nesting_is_migrated(tree):
    nested = "y = " + "(" * 150 + "strategy.experimental_run_v2(step, args=(x,))" + ")" * 150 + "\n"
    write(tree / "parens.py", GOOD + nested)
    outcome = run_fix(tree)
    assert outcome.returncode == 0, outcome.stderr
    assert (tree / "parens.py").read_text() == MIGRATED + nested.replace("experimental_run_v2", "run")
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_very_large_file_is_migrated(tree):
    # About 4 MB: the TF program followed by a long docstring of data.
    body = '"""' + "row;0.25;0.5;label\n" * 220_000 + '"""\n'
    write(tree / "large.py", GOOD + body)
    assert (tree / "large.py").stat().st_size > 4_000_000
    outcome = run_fix(tree)
    assert outcome.returncode == 0, outcome.stderr
    assert (tree / "large.py").read_text() == MIGRATED + body
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


@pytest.mark.slow
def test_very_large_file_over_the_time_limit_is_named(tree):
    # Several MB of statements take LibCST longer than the limit set here.
    body = "".join(f"VALUE_{i} = ({i}, {i * 0.5!r}, 'name_{i}')\n" for i in range(80_000))
    data = (GOOD + body).encode()
    write(tree / "huge.py", data)
    assert len(data) > 3_000_000
    outcome = run_fix(tree, "--jobs", "1", env={"MIGRATE_TPU_FILE_TIMEOUT": "2"})
    assert outcome.returncode == 2
    assert_named_error(outcome, "huge.py", "gave up after")
    assert_bad_file_untouched(tree, "huge.py", data)
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


# -- awkward but valid files: migrated, their bytes kept --------------------------------


def test_empty_file(tree):
    write(tree / "empty.py", b"")
    write(tree / "pkg" / "__init__.py", b"")
    outcome = run_fix(tree)
    assert outcome.returncode == 0, outcome.stderr
    assert (tree / "empty.py").read_bytes() == b""
    assert not outcome.lines_naming("empty.py")
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


def test_file_with_a_coding_line_keeps_its_encoding(tree):
    header = "# -*- coding: latin-1 -*-\n# Modèle entraîné sur TPU\n"
    write(tree / "latin.py", (header + GOOD).encode("latin-1"))
    outcome = run_fix(tree)
    assert outcome.returncode == 0, outcome.stderr
    assert (tree / "latin.py").read_bytes() == (header + MIGRATED).encode("latin-1")
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


def test_bom_file_keeps_its_bom(tree):
    write(tree / "bom.py", b"\xef\xbb\xbf" + GOOD.encode())
    outcome = run_fix(tree)
    assert outcome.returncode == 0, outcome.stderr
    assert (tree / "bom.py").read_bytes() == b"\xef\xbb\xbf" + MIGRATED.encode()
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


def test_file_without_trailing_newline_gets_none(tree):
    write(tree / "tail.py", GOOD.rstrip("\n"))
    write(tree / "crlf.py", GOOD.rstrip("\n").replace("\n", "\r\n"))
    outcome = run_fix(tree)
    assert outcome.returncode == 0, outcome.stderr
    assert (tree / "tail.py").read_bytes() == MIGRATED.rstrip("\n").encode()
    assert (tree / "crlf.py").read_bytes() == MIGRATED.rstrip("\n").replace("\n", "\r\n").encode()
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


# -- symbolic links: not followed while walking, each one named --------------------------


def test_symlink_loop(tree):
    os.symlink("loop_b.py", tree / "loop_a.py")
    os.symlink("loop_a.py", tree / "loop_b.py")
    os.symlink("..", tree / "pkg" / "up")  # a folder link back to an ancestor
    outcome = run_fix(tree)
    assert outcome.returncode == 0, outcome.stderr  # a link not followed is a note, not a failure
    for name in ("loop_a.py", "loop_b.py"):
        assert any("symbolic link loop" in line for line in outcome.lines_naming(name)), outcome.stderr
        assert os.readlink(tree / name) in ("loop_a.py", "loop_b.py")
    assert any("loop" in line for line in outcome.lines_naming("pkg/up")), outcome.stderr
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


def test_symlink_pointing_outside_the_tree_is_not_followed(tree, tmp_path):
    outside = write(tmp_path / "elsewhere" / "theirs.py", GOOD)
    write(tmp_path / "elsewhere" / "lib" / "more.py", GOOD)
    os.symlink(outside, tree / "theirs.py")
    os.symlink(tmp_path / "elsewhere" / "lib", tree / "lib")
    outcome = run_fix(tree)
    assert outcome.returncode == 0, outcome.stderr
    assert any("outside the tree" in line for line in outcome.lines_naming("theirs.py")), outcome.stderr
    assert any("outside the tree" in line for line in outcome.lines_naming("lib")), outcome.stderr
    assert outside.read_text() == GOOD
    assert (tmp_path / "elsewhere" / "lib" / "more.py").read_text() == GOOD
    assert (tree / "theirs.py").is_symlink()
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


def test_dangling_symlink_is_named(tree):
    os.symlink("gone.py", tree / "dangling.py")
    outcome = run_fix(tree)
    assert outcome.returncode == 0
    assert any("dangling symbolic link" in line for line in outcome.lines_naming("dangling.py"))
    assert_good_migrated(tree)


def test_symlink_named_on_the_command_line_is_followed(tree, tmp_path):
    outside = write(tmp_path / "elsewhere" / "theirs.py", GOOD)
    os.symlink(outside, tree / "theirs.py")
    outcome = migrate_tpu("fix", "theirs.py", cwd=tree)
    assert outcome.returncode == 0, outcome.stderr
    assert outside.read_text() == MIGRATED
    assert (tree / "theirs.py").is_symlink(), "the link itself must stay a link"
    os.symlink("nowhere.py", tree / "broken.py")
    outcome = migrate_tpu("fix", "broken.py", cwd=tree)
    assert outcome.returncode == 2
    assert_named_error(outcome, "broken.py", "dangling symbolic link")


# -- everything at once ----------------------------------------------------------------


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_every_bad_kind_in_one_tree(tree, tmp_path):
    bad = dict(ERROR_KINDS)
    for kind, data in bad.items():
        write(tree / "bad" / f"{kind}.py", data)
    write(tree / "bad" / "nested.py", DEEP_BRACKETS)
    frozen = write(tree / "bad" / "frozen.py", GOOD)
    os.chmod(frozen, 0o444)
    os.symlink("loop_b.py", tree / "loop_a.py")
    os.symlink("loop_a.py", tree / "loop_b.py")
    os.symlink(write(tmp_path / "elsewhere.py", GOOD), tree / "outside.py")
    write(tree / "empty.py", b"")
    write(tree / "bom.py", b"\xef\xbb\xbf" + GOOD.encode())
    write(tree / "tail.py", GOOD.rstrip("\n"))
    write(tree / "no_tf_python2.py", 'print "not our business"\n')
    before = snapshot(tree)

    outcome = run_fix(tree, env={"MIGRATE_TPU_FILE_TIMEOUT": "10"})

    assert outcome.returncode == 2
    assert_clean_run(outcome, tree)
    for kind in bad:
        assert_named_error(outcome, f"bad/{kind}.py", REASONS[kind])
    assert_named_for_nesting(outcome, "bad/nested.py")
    assert_named_error(outcome, "bad/frozen.py", "read-only")
    for link in ("loop_a.py", "loop_b.py", "outside.py"):
        assert outcome.lines_naming(link), f"{link} not named"
    after = snapshot(tree)
    for name, data in before.items():
        if name.startswith("bad/") or name in ("empty.py", "no_tf_python2.py"):
            assert after[name] == data, f"{name} changed"
    assert_good_migrated(tree, [*("good_a.py", "pkg/good_b.py", "pkg/deep/good_c.py")])
    assert after["bom.py"] == b"\xef\xbb\xbf" + MIGRATED.encode()
    assert after["tail.py"] == MIGRATED.rstrip("\n").encode()
    assert (tmp_path / "elsewhere.py").read_text() == GOOD
    # Every error is one line, and the summary counts them all.
    errors = [line for line in outcome.stderr.splitlines() if ": error: " in line]
    assert len(errors) == len(bad) + 2


@pytest.mark.parametrize("command", ["check", "diff"])
def test_reading_commands_never_write_over_bad_trees(tree, command):
    for kind, data in ERROR_KINDS.items():
        write(tree / "bad" / f"{kind}.py", data)
    before = snapshot(tree)
    outcome = migrate_tpu(command, ".", cwd=tree)
    assert outcome.returncode == 2
    assert snapshot(tree) == before
    for kind in ERROR_KINDS:
        assert_named_error(outcome, f"bad/{kind}.py", REASONS[kind])
    assert_clean_run(outcome, tree)


# -- files the prefilter skips (no TensorFlow name): checked, not parsed ---------------
# docs/reliability.md, "Which files are read as Python", states exactly this.


@pytest.mark.parametrize(
    "name, data, reason",
    [
        ("latin1.py", "# café\nprint('no tensorflow here')\n".encode("latin-1"), "cannot decode byte 0xe9 as utf-8"),
        ("bad_codec.py", b"# -*- coding: no-such-codec -*-\nx = 1\n", "bad encoding declaration"),
        ("broken.ipynb", b'{"cells": [', "not a notebook: invalid JSON"),
        ("list.ipynb", b"[1, 2]", "not a notebook: the JSON is not an object"),
    ],
    ids=["undecodable", "unknown-codec", "notebook-json", "notebook-not-object"],
)
def test_a_skipped_file_that_is_not_text_is_still_an_error(tree, name, data, reason):
    write(tree / name, data)
    outcome = run_fix(tree)
    assert outcome.returncode == 2, outcome.stderr
    assert_named_error(outcome, name, reason)
    assert_bad_file_untouched(tree, name, data)
    assert_good_migrated(tree)
    assert_clean_run(outcome, tree)


def test_a_skipped_python_file_is_not_parsed_so_its_syntax_is_not_checked(tree):
    # Python 2 without any TensorFlow name: decodable text with nothing to
    # migrate. It is not parsed, so not reported; the summary counts it as skipped.
    data = b"print 'hello'\nexcept_ = 1\n"
    write(tree / "py2.py", data)
    outcome = run_fix(tree)
    assert outcome.returncode == 0, outcome.stderr
    assert outcome.lines_naming("py2.py") == []
    assert "4 files scanned (3 parsed, 1 skipped by the prefilter)" in outcome.stderr
    assert_bad_file_untouched(tree, "py2.py", data)
    assert_good_migrated(tree)
