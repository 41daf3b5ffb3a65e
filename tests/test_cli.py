"""The command line contract, through real subprocesses."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

TF21 = b"""import tensorflow as tf
step = tf.function(lambda v: v * 2)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
out = strategy.experimental_run_v2(step, args=(x,))
"""

MANUAL = b"""import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
"""


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_version_imports_neither_tensorflow_nor_libcst():
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "migrate_tpu", "--version"], capture_output=True, text=True)
    assert result.returncode == 0
    assert "migrate-tpu, version" in result.stdout
    imported = [line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line]
    assert imported, "importtime printed nothing"
    assert not [m for m in imported if m.split(".")[0] in ("tensorflow", "libcst")]


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_fix_on_a_tree_does_not_import_tensorflow(cli, tmp_path):
    write(tmp_path / "a.py", TF21)
    result = cli("fix", "a.py", env={"PYTHONPATH": str(tmp_path / "no-tf-here")})
    assert result.returncode in (0, 1)
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, runpy; sys.argv=['migrate-tpu','check','a.py']\n"
         "try:\n    runpy.run_module('migrate_tpu', run_name='__main__')\nexcept SystemExit:\n    pass\n"
         "print('tensorflow' in sys.modules)"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert probe.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_diff_exit_codes(cli, tmp_path):
    write(tmp_path / "old.py", TF21)
    write(tmp_path / "clean.py", b"print('hello')\n")
    assert cli("diff", "clean.py").returncode == 0
    changed = cli("diff", "old.py")
    assert changed.returncode == 1
    assert b"--- a/old.py" in changed.stdout and b"+++ b/old.py" in changed.stdout
    assert (tmp_path / "old.py").read_bytes() == TF21, "diff must not write"
    write(tmp_path / "broken.py", b"import tensorflow as tf\ns = tf.distribute.experimental.TPUStrategy(r)\ndef broken(:\n")
    assert cli("diff", "old.py", "broken.py").returncode == 2


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_fix_exit_codes_and_summary(cli, tmp_path):
    write(tmp_path / "old.py", TF21)
    done = cli("fix", "old.py")
    assert done.returncode == 0, done.stderr
    assert b"tf.distribute.TPUStrategy(resolver)" in (tmp_path / "old.py").read_bytes()
    assert b"1 changed" in done.stderr
    write(tmp_path / "manual.py", MANUAL)
    remaining = cli("fix", "manual.py")
    assert remaining.returncode == 1
    assert b"manual.py:3:12: TPU202" in remaining.stderr
    assert (tmp_path / "manual.py").read_bytes() == MANUAL


@pytest.mark.slow
def test_check_text_and_json(cli, tmp_path):
    write(tmp_path / "old.py", TF21)
    text = cli("check", "old.py")
    assert text.returncode == 1
    lines = text.stdout.decode().splitlines()
    assert "old.py:3:12: TPU103 [*]" in lines[0]
    assert any(line.startswith("old.py:4:16: TPU101 [*]") for line in lines)
    as_json = cli("check", "old.py", "--format", "json")
    report = json.loads(as_json.stdout)
    rules = {f["rule"] for f in report["findings"]}
    assert {"TPU101", "TPU103"} <= rules
    first = next(f for f in report["findings"] if f["rule"] == "TPU101")
    assert (first["path"], first["line"], first["column"], first["safety"]) == ("old.py", 4, 16, "safe")
    assert first["edits"] and first["edits"][0]["content"] == "strategy.run"
    assert cli("check", "old.py", "--select", "TPU2").returncode == 0


@pytest.mark.slow
def test_select_ignore_and_unknown_rule(cli, tmp_path):
    write(tmp_path / "old.py", TF21)
    only_run = cli("fix", "-", "--select", "TPU101", input=TF21)
    assert b"strategy.run(step" in only_run.stdout
    assert b"experimental.TPUStrategy" in only_run.stdout
    ignored = cli("fix", "-", "--ignore", "TPU1", input=TF21)
    assert ignored.stdout == TF21
    bad = cli("check", "old.py", "--select", "XYZ9")
    assert bad.returncode == 2
    assert b"no rule matches" in bad.stderr and b"Traceback" not in bad.stderr


@pytest.mark.slow
def test_fix_stdin_to_stdout(cli):
    result = cli("fix", "-", input=TF21)
    assert result.returncode == 0
    assert result.stdout == TF21.replace(b"experimental.TPUStrategy", b"TPUStrategy").replace(b"experimental_run_v2", b"run")
    broken = cli("fix", "-", input=b"import tensorflow as tf\ndef f(:\n    strategy.experimental_run_v2(g)\n")
    assert broken.returncode == 2
    assert broken.stdout == b"import tensorflow as tf\ndef f(:\n    strategy.experimental_run_v2(g)\n"
    assert b"<stdin>:2: error: cannot parse:" in broken.stderr


@pytest.mark.slow
def test_unsafe_fixes_flag(cli):
    source = b"""import tensorflow as tf

strategy = tf.distribute.TPUStrategy(resolver)


def step(x):
    print(x)
    return x


strategy.run(step, args=(1.0,))
"""
    safe_only = cli("fix", "-", input=source)
    assert safe_only.returncode == 1
    assert safe_only.stdout == source
    assert b"TPU301 [unsafe fix]" in safe_only.stderr
    unsafe = cli("fix", "-", "--unsafe-fixes", input=source)
    assert unsafe.returncode == 0
    assert b"@tf.function\ndef step(x):" in unsafe.stdout


def test_suppression_comment(cli):
    source = TF21.replace(b"(step, args=(x,))", b"(step, args=(x,))  # migrate-tpu: ignore[TPU101]")
    result = cli("fix", "-", input=source)
    assert b"experimental_run_v2" in result.stdout
    assert b"tf.distribute.TPUStrategy(resolver)" in result.stdout


@pytest.mark.slow
def test_rules_and_explain(cli):
    listing = cli("rules")
    assert listing.returncode == 0
    assert b"TPU301" in listing.stdout and b"TPU101" in listing.stdout
    docs = cli("explain", "TPU103")
    assert docs.returncode == 0
    for section in (b"## What it does", b"## Why", b"## Example", b"## Use instead", b"## Fix safety"):
        assert section in docs.stdout
    assert cli("explain", "TPU999").returncode == 2


@pytest.mark.slow
def test_examples_fix_is_idempotent_and_diff_matches(cli, tmp_path):
    tree = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", tree)
    shown = cli("diff", "examples")
    assert shown.returncode == 1
    applied = subprocess.run(["patch", "-p1", "--quiet"], input=shown.stdout, cwd=tmp_path, capture_output=True)
    assert applied.returncode == 0, applied.stderr
    patched = {p: p.read_bytes() for p in sorted(tree.rglob("*.py"))}
    shutil.rmtree(tree)
    shutil.copytree(ROOT / "examples", tree)
    first = cli("fix", "examples")
    assert first.returncode == 1  # manual findings remain in tools/device_layout.py
    fixed = {p: p.read_bytes() for p in sorted(tree.rglob("*.py"))}
    assert fixed == patched
    second = cli("fix", "examples")
    assert {p: p.read_bytes() for p in sorted(tree.rglob("*.py"))} == fixed
    assert b"0 changed" in second.stderr


def test_stdin_survives_a_parser_crash(cli):
    """Source so deeply nested that the parser itself crashes costs that input only."""
    source = b"import tensorflow as tf\nstrategy.experimental_run_v2(f)\ny = " + b"[" * 5000 + b"1" + b"]" * 5000 + b"\n"
    result = cli("fix", "-", input=source)
    assert result.returncode == 2
    assert result.stdout == source  # the input comes back unchanged
    assert b"<stdin>: error:" in result.stderr and b"Traceback" not in result.stderr


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_check_and_diff_default_to_the_current_folder_fix_needs_paths(cli, tmp_path):
    write(tmp_path / "pkg" / "old.py", TF21)
    checked = cli("check")
    assert checked.returncode == 1
    assert b"pkg/old.py:3:12: TPU103 [*]" in checked.stdout
    shown = cli("diff")
    assert shown.returncode == 1 and b"+++ b/pkg/old.py" in shown.stdout
    refused = cli("fix")
    assert refused.returncode == 2 and b"Missing argument 'PATHS...'" in refused.stderr
    assert (tmp_path / "pkg" / "old.py").read_bytes() == TF21
    # pre-commit may call a hook with no file: nothing to do.
    assert cli("check", env={"PRE_COMMIT": "1"}).returncode == 0


@pytest.mark.slow
def test_exit_zero(cli, tmp_path):
    write(tmp_path / "old.py", TF21)
    write(tmp_path / "manual.py", MANUAL)
    assert cli("check", "--exit-zero", ".").returncode == 0
    assert cli("diff", "--exit-zero", "old.py").returncode == 0
    fixed = cli("fix", "--exit-zero", "manual.py")
    assert fixed.returncode == 0 and b"TPU202" in fixed.stderr
    # Errors still fail the run.
    write(tmp_path / "broken.py", b"import tensorflow as tf\ns = tf.distribute.experimental.TPUStrategy(r)\ndef broken(:\n")
    assert cli("check", "--exit-zero", "broken.py").returncode == 2


@pytest.mark.slow
def test_statistics_count_per_rule(cli, tmp_path):
    write(tmp_path / "a.py", TF21)
    write(tmp_path / "b.py", TF21 + MANUAL.split(b"\n", 1)[1])
    result = cli("check", "--statistics", ".")
    assert result.returncode == 1
    assert result.stdout.decode().splitlines() == [
        "2\tTPU101\t[*] experimental-run-v2",
        "2\tTPU103\t[*] experimental-tpu-strategy",
        "1\tTPU202\t[ ] tpu-cluster-resolver-empty-name",
    ]
    assert cli("check", "--statistics", "--format", "json", ".").returncode == 2


@pytest.mark.slow
def test_show_fixes(cli, tmp_path):
    write(tmp_path / "old.py", TF21)
    write(tmp_path / "manual.py", MANUAL)
    would = cli("check", "--show-fixes", ".")
    assert ("`migrate-tpu fix` would fix 2 findings:\n- old.py:\n"
            "    1 \u00d7 TPU101 (experimental-run-v2)\n    1 \u00d7 TPU103 (experimental-tpu-strategy)\n") in would.stderr.decode()
    fixed = cli("fix", "--show-fixes", ".")
    assert fixed.returncode == 1
    listing = fixed.stderr.decode().split("Fixed 2 findings:\n")[1].splitlines()[:4]
    # Only what was fixed: manual.py's TPU202 is a finding, not a fix.
    assert listing[:3] == ["- old.py:", "    1 \u00d7 TPU101 (experimental-run-v2)", "    1 \u00d7 TPU103 (experimental-tpu-strategy)"]
    assert not listing[3].startswith(("- ", "    "))


@pytest.mark.slow
def test_explain_by_id_or_name(cli):
    by_id = cli("explain", "TPU101")
    by_name = cli("explain", "experimental-run-v2")
    assert by_id.returncode == by_name.returncode == 0
    assert by_id.stdout == by_name.stdout and by_id.stdout.startswith(b"# TPU101")
    assert cli("explain", "tpu101").stdout == by_id.stdout
    unknown = cli("explain", "no-such-rule")
    assert unknown.returncode == 2 and b"no rule 'no-such-rule'" in unknown.stderr


@pytest.mark.slow
def test_exit_zero_from_stdin(cli):
    assert cli("check", "-", input=TF21).returncode == 1
    assert cli("check", "--exit-zero", "-", input=TF21).returncode == 0
    fixed = cli("fix", "--exit-zero", "-", input=MANUAL)
    assert fixed.returncode == 0 and fixed.stdout == MANUAL
    assert cli("diff", "--exit-zero", "-", input=b"import tensorflow as tf\ndef f(:\n    strategy.experimental_run_v2(g)\n").returncode == 2


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_what_the_prefilter_skips_is_what_the_docs_say(cli, tmp_path):
    """README and docs/reliability.md: importing TensorFlow alone does not make a file parsed, so
    its syntax error goes unreported (exit 0); naming an API a rule acts on does. The same holds
    for a notebook that breaks the nbformat schema (docs/notebooks.md)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`import tensorflow as tf` alone is not enough" in " ".join(readme.split())
    write(tmp_path / "quiet.py", b"import tensorflow as tf\nx = tf.constant(1)\nprint 'py2'\n")
    write(tmp_path / "quiet.ipynb", b'{"cells": [{"cell_type": "code", "metadata": {}, "source": "import tensorflow as tf"}],'
          b' "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    skipped = cli("check", "--isolated", "--no-cache", "quiet.py", "quiet.ipynb")
    assert skipped.returncode == 0, skipped.stderr
    assert b"2 files scanned (0 parsed, 2 skipped by the prefilter)" in skipped.stderr
    write(tmp_path / "loud.py", b"import tensorflow as tf\nprint 'py2'\nstrategy.experimental_run_v2(f)\n")
    write(tmp_path / "loud.ipynb", (tmp_path / "quiet.ipynb").read_bytes().replace(b"import tensorflow as tf", b"s.experimental_run_v2(f)"))
    loud = cli("check", "--isolated", "--no-cache", "loud.py", "loud.ipynb")
    assert loud.returncode == 2
    assert b"loud.py:2: error: cannot parse" in loud.stderr
    assert b"loud.ipynb:cell 1: error: not a valid notebook" in loud.stderr


@pytest.mark.parametrize("command", [["rules"], ["check", "."], ["diff", "."]])
def test_a_reader_that_goes_away_ends_the_run_quietly(tmp_path, command):
    """`migrate-tpu check | head`: once the reader closes the pipe, the run stops with the
    status of a tool ended by SIGPIPE (141) and no traceback, as ruff or grep would."""
    (tmp_path / "train.py").write_text(
        "import tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy(r)\n"
        "out = strategy.experimental_run_v2(step)\n",
        "utf-8",
    )
    read_end, write_end = os.pipe()
    os.close(read_end)  # gone before the first line is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "migrate_tpu", *command], cwd=tmp_path, stdout=write_end, stderr=subprocess.PIPE, timeout=120
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141, done.stderr.decode()
    assert b"Traceback" not in done.stderr and b"internal error" not in done.stderr, done.stderr.decode()


@pytest.mark.parametrize("output_format", ["text", "json", "github", "sarif", "markdown"])
@pytest.mark.slow
def test_a_reader_that_goes_away_mid_report_ends_the_run_quietly(tmp_path, output_format):
    """`check | head` on a large report: the reader takes the first bytes and goes away while
    the report is still being written. A write cut short there returns the bytes taken
    instead of raising; the run must still end with 141 and print no summary."""
    for number in range(300):
        (tmp_path / f"train_{number:03}.py").write_text(
            "import tensorflow as tf\n" + "out = strategy.experimental_run_v2(step)\n" * 10, "utf-8"
        )
    process = subprocess.Popen(
        [sys.executable, "-m", "migrate_tpu", "check", "--no-progress", "--no-cache", "--format", output_format, "."],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        first = process.stdout.read(100)
        process.stdout.close()  # the report is far larger than the pipe holds
        stderr = process.stderr.read()
        status = process.wait(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert first
    assert status == 141, stderr.decode()
    assert b"files scanned" not in stderr, stderr.decode()
    assert b"Traceback" not in stderr, stderr.decode()


@pytest.mark.slow
def test_manual_findings_say_how_to_get_past_them_and_the_advice_works(cli, tmp_path):
    """A manual finding fails check (and the pre-commit hook) until a person deals with it: the
    summary says how to keep a line or a file, and following either instruction clears it."""
    source = "import tensorflow as tf\nresolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')\n"
    write(tmp_path / "train.py", source.encode())
    result = cli("check", "--isolated", "--no-cache", "train.py")
    assert result.returncode == 1
    hint = [line for line in result.stderr.decode().splitlines() if "needs a person" in line]
    assert hint == [
        "1 finding needs a person (TPU202): `migrate-tpu explain TPU202` says what to write instead; "
        "to keep a line as it is, end it with `# migrate-tpu: ignore[TPU202]`; for a whole file, "
        "list the rule under [tool.migrate-tpu.per-file-ignores] in pyproject.toml."
    ]
    # A safe fix alone gets no such line.
    write(tmp_path / "safe.py", b"import tensorflow as tf\ns = tf.distribute.experimental.TPUStrategy(r)\n")
    assert b"needs a person" not in cli("check", "--isolated", "--no-cache", "safe.py").stderr

    marked = source.replace("tpu='')\n", "tpu='')  # migrate-tpu: ignore[TPU202]\n")
    write(tmp_path / "train.py", marked.encode())
    assert cli("check", "--no-cache", "train.py").returncode == 0

    write(tmp_path / "train.py", source.encode())
    write(tmp_path / "pyproject.toml", b'[tool.migrate-tpu.per-file-ignores]\n"train.py" = ["TPU202"]\n')
    assert cli("check", "--no-cache", "train.py").returncode == 0


def test_a_path_that_does_not_exist_is_an_error_not_a_scanned_file(cli, tmp_path):
    write(tmp_path / "train.py", b"import tensorflow as tf\ns = tf.distribute.experimental.TPUStrategy(r)\n")
    result = cli("check", "--isolated", "--no-cache", "nope.py", "train.py")
    assert result.returncode == 2
    stderr = result.stderr.decode()
    assert "nope.py: error: no such file or directory" in stderr
    assert "train.py:2:5: TPU103" in result.stdout.decode()  # the other path is still checked
    assert "1 file scanned (1 parsed" in stderr and "1 error." in stderr, stderr
    alone = cli("check", "--isolated", "--no-cache", "--format", "json", "nope.py")
    assert alone.returncode == 2
    assert json.loads(alone.stdout)["summary"]["files"] == 0
