"""The mutation pass (benchmarks/mutation_pass.py): each mutant's text is where it says, and,
in the slow tier, the tests kill every mutant of the groups that need no TensorFlow.

A mutant whose text has moved cannot be applied; the pass refuses to run then, and the fast
test here names it, so that a refactoring updates its mutants in the same change.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "mutation_pass.py"


def _load():
    spec = importlib.util.spec_from_file_location("mutation_pass", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mutation_pass", module)
    spec.loader.exec_module(module)
    return module


mutation_pass = _load()
NUMBERED = list(enumerate(mutation_pass.MUTANTS, 1))


@pytest.mark.parametrize("number, mutant", NUMBERED, ids=[f"{number}-{mutant.group}" for number, mutant in NUMBERED])
def test_each_mutant_text_is_in_its_file_exactly_once(number, mutant):
    why = mutation_pass.problem(mutant)
    assert why is None, f"mutant {mutation_pass.describe(number, mutant)}: {why}"


def test_each_mutant_names_tests_that_exist():
    for number, mutant in NUMBERED:
        for test in mutant.tests:
            assert (REPO / test.split("::")[0]).is_file(), f"mutant {mutation_pass.describe(number, mutant)}: no test file {test}"


def test_a_moved_text_is_named_with_its_mutant(tmp_path):
    (tmp_path / "module.py").write_text("x = 1\nx = 1\ny = 2\n")
    Mutant = mutation_pass.Mutant
    mutants = [
        Mutant("g", "module.py", "y = 2", "y = 3", ()),
        Mutant("g", "module.py", "z = 2", "z = 3", ()),
        Mutant("g", "module.py", "x = 1", "x = 2", ()),
        Mutant("g", "gone.py", "y = 2", "y = 3", ()),
        Mutant("g", "module.py", "y = 2", "y = 2", ()),
    ]
    assert mutation_pass.misplaced(mutants, tmp_path) == [
        "#2 g module.py: z = 2: its text is there 0 times, not once (the code moved: update the mutant)",
        "#3 g module.py: x = 1: its text is there 2 times, not once (the code moved: update the mutant)",
        "#4 g gone.py: y = 2: no such file",
        "#5 g module.py: y = 2: it changes nothing",
    ]


def test_the_groups_without_tensorflow_are_groups():
    groups = {mutant.group for mutant in mutation_pass.MUTANTS}
    assert set(mutation_pass.NO_TENSORFLOW) <= groups


@pytest.mark.slow
def test_the_tests_kill_every_mutant_that_needs_no_tensorflow():
    """The pass for real, in a copy of the repository, over the groups without TensorFlow, each
    mutant against the fast tier's tests of its files (a few minutes on 2 cores); a mutant
    that survives is named."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--only", ",".join(mutation_pass.NO_TENSORFLOW), "--fast"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout
