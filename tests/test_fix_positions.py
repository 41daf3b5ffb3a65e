"""After ``fix``, what is left is reported where it is in the file as written.

A fix that collapses a version guard, adds an import or drops one moves every
line below it; a finding left unfixed must name its line in the fixed file (the
file the user opens), not the line it had before. ``check`` and ``diff`` report
on the file as it is on disk, unchanged.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from migrate_tpu.codemod.migration.api import Options, migrate
from migrate_tpu.codemod.rules.catalogue import all_rules

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

# A manual finding (TPU408: an internal module with no drop-in path) below fixes
# that change the number of lines above it.
INTERNAL = "from tensorflow.python.keras.mixed_precision.experimental import policy\n"
CASES = {
    "a version guard collapses (5 lines become 1)": (
        "import tensorflow as tf\n"
        "if tf.__version__ < '2.4':\n    x = 1\n    y = 2\n    z = 3\nelse:\n    x = 2\n" + INTERNAL
    ),
    "a line is added above (a tf.function decorator)": (
        "import tensorflow as tf\n"
        "strategy = tf.distribute.experimental.TPUStrategy(resolver)\n\n\n"
        "def step(x):\n    return x * 2\n\n\n"
        "strategy.experimental_run_v2(step, args=(1,))\n" + INTERNAL
    ),
    "an import is dropped above": (
        "import tensorflow as tf\n"
        "from tensorflow.keras.mixed_precision import experimental as prec\n"
        "prec.set_policy('mixed_bfloat16')\n" + INTERNAL
    ),
}


def _remaining(outcome):
    return [r for r in outcome.reports if not r.applied]


@pytest.mark.parametrize("source", list(CASES.values()), ids=list(CASES))
def test_a_finding_left_by_fix_names_its_line_in_the_fixed_file(source):
    original_line = source.splitlines().index(INTERNAL.rstrip("\n")) + 1
    fixed = migrate(source, Options(mode="fix"))
    assert fixed.code != source
    [left] = _remaining(fixed)
    assert left.rule == "TPU408"
    assert fixed.code.splitlines()[left.line - 1] == INTERNAL.rstrip("\n")
    assert left.line != original_line  # the fix moved it: the old number would be wrong
    # check and diff describe the file as it is, unchanged
    for mode in ("check", "diff"):
        [same] = [r for r in migrate(source, Options(mode=mode)).reports if r.rule == "TPU408"]
        assert same.line == original_line


def _sources():
    """Every rule example's input and every fixture file: code with fixes and manual findings."""
    found = []
    for rule in all_rules():
        for index, example in enumerate(rule.examples):
            found.append(pytest.param(example.before.lstrip("\n"), example.target, id=f"{rule.id}-{index}"))
    for path in sorted(FIXTURES.glob("*/before/**/*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # the unicode case's latin-1 file: the engine decodes it, not this test
            continue
        found.append(pytest.param(text, "2.4", id=str(path.relative_to(FIXTURES))))
    return found


@pytest.mark.parametrize("source,target", _sources())
def test_check_on_the_fixed_file_finds_what_fix_left_at_the_same_place(source, target):
    """Whatever ``fix`` leaves, a ``check`` of its output finds at the line and column fix named."""
    fixed = migrate(source, Options(mode="fix", target=target, unsafe_fixes=True))
    left = {(r.rule, r.line, r.column) for r in _remaining(fixed)}
    if fixed.code == source or not left:
        return
    again = {(r.rule, r.line, r.column) for r in migrate(fixed.code, Options(mode="check", target=target)).reports}
    assert left <= again, sorted(left - again)


def test_the_cli_prints_the_line_of_the_fixed_file(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(CASES["a version guard collapses (5 lines become 1)"])
    done = subprocess.run(
        [sys.executable, "-m", "migrate_tpu", "fix", str(path)], cwd=str(tmp_path), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, universal_newlines=True,
    )
    line = path.read_text().splitlines().index(INTERNAL.rstrip("\n")) + 1
    assert line == 3
    assert f"train.py:{line}:1: TPU408" in done.stdout, done.stdout
