"""A mutation pass: one-line changes to the code that a test must catch, each run against the
tests that guard it; prints which mutants survive (no test failed).

Each mutant is (group, file, the exact text to change, what it becomes, the tests to run).
The pass works in a copy of the repository (a temporary folder; the package is imported from
there), never on the working tree, so that other work in the tree is neither broken by a
mutant nor overwritten by the restore. Usage:

    python benchmarks/mutation_pass.py [--only GROUP[,GROUP...]] [--list] [--no-baseline] [--rev COMMIT] [--fast]

(``--rev``: a commit, through ``git archive``, instead of the working tree as it is;
``--fast``: only the fast tier's tests of the named files, ``-m "not slow"``.)

Before anything runs, every mutant's text must be in its file exactly once: the pass names
each one that is not (the code moved: update the mutant) and exits 2;
``tests/test_mutation_pass.py`` checks the same in the fast tier. Then the tests of the
chosen mutants run once unmutated (the baseline: a test that fails already would "kill"
every mutant), then each mutant, with ``pytest -x``: a mutant is killed when a test fails,
and survives when they all pass (a run whose tests are all skipped survives too). Exit 0
when every mutant was killed, 1 when one survived, 2 when the pass could not run.

Groups: comparator (verify's verdict, no TensorFlow), safety (fix safety levels), notebooks
(cell offsets, the cell's trailing newline), moved_calls (the run's record of moved APIs, with a
stand-in for TensorFlow) and reductions (the TF 2.1 surface's reduce).

``--only comparator,safety,notebooks,moved_calls --fast`` (``NO_TENSORFLOW``, killed by the fast tier
alone) is what the slow test runs (tests/test_mutation_pass.py, a few minutes on 2 cores); the
groups that start TensorFlow take minutes a mutant.

Pods: the order of the emulated pod's input workers (``strategies._one_input_worker_per_host``),
reversed whole or with each host's cores swapped, gives the same program on TF 2.21 (replica r
still gets host r // cores-per-host's pipeline, asked inside the replica: TensorFlow pairs a
pipeline with the cores by the devices), so those mutants are equivalent and not listed;
tests/roundtrip/test_pod_one_client.py asserts the pairing itself.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
# One process (`-n 0`: no pytest-xdist workers, which pyproject.toml's addopts start): `-x` stops at
# the first test that kills the mutant, and starting workers would cost more than a mutant's tests.
# Without Hypothesis' pytest plugin: its terminal summary imports Hypothesis in every session (0.65 s
# of a comparator mutant's 1.2 s); a test module that uses Hypothesis still imports and runs it, and
# a mutant needs the exit status, not the plugin's statistics or failing-example patches.
PYTEST = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-n", "0"]


class Mutant(NamedTuple):
    group: str
    file: str
    old: str
    new: str
    tests: Tuple[str, ...]


COMPARE = "migrate_tpu/verify/judge/compare.py"
ARRAYS = "migrate_tpu/verify/values/arrays.py"
COMPARE_TESTS = ("tests/verify/test_array_tolerances.py", "tests/verify/test_compare.py", "tests/verify/test_changes_and_blame.py")

MUTANTS: List[Mutant] = [
    # the tolerance
    Mutant("comparator", ARRAYS, "return abs(a - b) <= atol + rtol * abs(b)", "return abs(a - b) <= 2 * atol + rtol * abs(b)", COMPARE_TESTS),
    Mutant("comparator", ARRAYS, "return abs(a - b) <= atol + rtol * abs(b)", "return abs(a - b) <= atol + 2 * rtol * abs(b)", COMPARE_TESTS),
    Mutant("comparator", ARRAYS, "    if rtol == 0 and atol == 0:\n        return a == b\n",
           "    if rtol == 0 and atol == 0:\n        return abs(a - b) < 1e-6\n", COMPARE_TESTS),
    Mutant("comparator", ARRAYS, "        return math.isnan(a) and math.isnan(b)", "        return True", COMPARE_TESTS),
    # the tolerance x100 on stored arrays (those compared chunk by chunk with numpy)
    Mutant("comparator", ARRAYS, "        return bool(numpy.all(numpy.abs(x - y) <= atol + rtol * numpy.abs(y)))",
           "        return bool(numpy.all(numpy.abs(x - y) <= 100 * (atol + rtol * numpy.abs(y))))", COMPARE_TESTS),
    # the original's difference from itself (verify's A/A run) taken as zero: every value judged at the
    # plain tolerance, as if the original reproduced its bits
    Mutant("comparator", "migrate_tpu/verify/values/tolerance.py",
           "        return self.rtol, max(self.atol, NOISE_MARGIN * difference), NOISE_MARGIN * self._relative",
           "        return self.rtol, self.atol, 0.0", ("tests/verify/test_repeatability.py",) + COMPARE_TESTS),
    # an original whose A/A pair parts in its steps or its exception re-judged as rounding: the migration's
    # divergence called `same` by one-thread runs
    Mutant("comparator", "migrate_tpu/verify/judge/repeatability.py",
           "    if itself.verdict == SAME or (itself.first_divergence or {}).get(\"kind\") in NOT_ROUNDING:",
           "    if itself.verdict == SAME:", ("tests/verify/test_repeatability.py",)),
    # the A/A spread pairing events past the point where the two runs part: an invented spread drops a value
    Mutant("comparator", "migrate_tpu/verify/judge/spread.py", "                break  # the runs part ways: what follows is not one value twice",
           "                continue  # the runs part ways: what follows is not one value twice", ("tests/verify/test_repeatability.py",)),
    # blame's suspects-first returning every suspect, not a 1-minimal set of them
    Mutant("comparator", "migrate_tpu/verify/blame/blame.py", "                return ddmin(suspects, fails)  # (one suspect: itself, with no run)",
           "                return suspects", ("tests/verify/test_suspects.py", "tests/verify/test_changes_and_blame.py")),
    # the TPU Node's note on any one of its error's words, not all of them: an ordinary py_function error called the Node's
    Mutant("comparator", "migrate_tpu/runtime/tpu/tpu_machine.py", "        if all(word in text for word in words):",
           "        if any(word in text for word in words):",
           ("tests/verify/test_compare.py", "tests/runtime/test_tpu_machine.py", "tests/verify/test_advice.py")),
    # a `same` without its power: `--rtol` or `--atol` alone (the other None) taken for no tolerance; where
    # the control fails, the run with the mistake asked of the migrated program's interpreter (which cannot
    # run the original); an explicit `--rtol 0 --atol 0` stating nothing
    Mutant("comparator", "migrate_tpu/verify/command/session.py", "    if any(within):", "    if all(within):",
           ("tests/verify/test_power_on_every_path.py",)),
    Mutant("comparator", "migrate_tpu/verify/command/session.py",
           "        return Judgement(_state_power(verdict, before, _on_its_own(rerun), judged, within, power))",
           "        return Judgement(_state_power(verdict, before, rerun, judged, within, power))", ("tests/verify/test_power_on_every_path.py",)),
    Mutant("comparator", "migrate_tpu/verify/command/session.py", "    verdict = exact_power(verdict)\n    return seeded_power(",
           "    return seeded_power(", ("tests/verify/test_power_on_every_path.py",)),
    # a value's tolerance hanging on how it was stored: an int array kept in the record compared within rtol
    Mutant("comparator", COMPARE, "    if not is_real(before[\"dtype\"]):", "    if False:", ("tests/verify/test_array_tolerances.py",)),
    # the default tolerance across releases
    Mutant("comparator", "migrate_tpu/verify/values/verdict.py", "DEFAULT_RTOL = 1e-5", "DEFAULT_RTOL = 1e-4", COMPARE_TESTS),
    # tracing
    Mutant("comparator", COMPARE, "        grew = before_count is not None and count > before_count", "        grew = False", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "    if warm_after > warm_before:\n", "    if False:\n", COMPARE_TESTS),
    # matching variables
    Mutant("comparator", COMPARE, "            if b is not None and a is not None:\n                matched.append((label, b, a))",
           "            if b is not None and a is not None and index == 0:\n                matched.append((label, b, a))", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "        if entry[\"why\"] != BOOKKEEPING_REASON:\n", "        if False:\n", COMPARE_TESTS),
    # values and structure
    Mutant("comparator", COMPARE, "    if before.get(\"sha1\") is not None and before.get(\"sha1\") == after.get(\"sha1\"):",
           "    if before.get(\"sha1\") is not None:", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "for b, a in itertools.zip_longest(numbers(before), numbers(after)))",
           "for b, a in itertools.islice(zip(numbers(before), numbers(after)), 64))", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "    if before_failure is not None and not _steps_done(b):", "    if before_failure is not None:", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "    if divergence is None and (before_failure or after_failure) and before_failure != after_failure:",
           "    if divergence is None and after_failure and before_failure != after_failure:", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "    if seen and max(seen) < 2:", "    if seen and max(seen) < 1:", COMPARE_TESTS),
    Mutant("comparator", "migrate_tpu/verify/values/printed.py",
           "        line = re.sub(r\"(?<![\\w.])\" + re.escape(version) + r\"(?![\\w.])\", _VERSION_MARK, line)",
           "        line = line", COMPARE_TESTS),
    # coverage
    Mutant("comparator", "migrate_tpu/verify/values/changes.py", "    return any(line in seen for line in hunk.watch)", "    return bool(seen)", COMPARE_TESTS),
    # the TF 2.1 surface's reduce with an axis: a replica's Python number returned as a tensor
    Mutant("reductions", "migrate_tpu/runtime/tpu/strategies.py", "        return tf.nest.map_structure(_as_tensor, fn(*args, **kwargs))",
           "        return fn(*args, **kwargs)", ("tests/runtime/test_emulation.py::test_reduce_and_tensorflows_own_cross_replica_ops",)),
]

RULES = "migrate_tpu/codemod/rules/structural/"
# The rule snapshots first: they state each finding's safety (and `-x` stops at the first failure).
SAFETY_TESTS = ("tests/test_rule_snapshots.py", "tests/test_rule_examples.py", "tests/test_fixtures.py", "tests/test_eager_run.py",
                "tests/test_optimizer_lr.py", "tests/test_real_code_cases.py", "tests/test_fix_layout.py")
MUTANTS += [
    # a fix that may change behaviour made safe (applied by plain `fix`)
    Mutant("safety", RULES + "compile_arguments.py", "            safety=None if sure else Safety.UNSAFE,", "            safety=None,", SAFETY_TESTS),
    Mutant("safety", RULES + "numpy_dataset.py", "                safety=Safety.UNSAFE if traced or unknown else Safety.SAFE,",
           "                safety=Safety.UNSAFE if traced else Safety.SAFE,", SAFETY_TESTS),
    Mutant("safety", RULES + "optimizer_learning_rate.py", "changes=change, safety=Safety.UNSAFE, fix_title=title)",
           "changes=change, safety=Safety.SAFE, fix_title=title)", SAFETY_TESTS),
    Mutant("safety", RULES + "eager_run/fixes.py", "        safety = Safety.UNSAFE if note else Safety.SAFE", "        safety = Safety.SAFE", SAFETY_TESTS),
    Mutant("safety", RULES + "eager_run/hoisting.py", "        safety = Safety.UNSAFE if reasons or per_call else Safety.SAFE",
           "        safety = Safety.UNSAFE if reasons else Safety.SAFE", SAFETY_TESTS),
    Mutant("safety", RULES + "eager_run/hoisting.py", "            safety=Safety.UNSAFE if reasons or per_call else Safety.SAFE,",
           "            safety=Safety.UNSAFE if per_call else Safety.SAFE,", SAFETY_TESTS),
    Mutant("safety", RULES + "eager_run/hoisting.py", "        safety = Safety.UNSAFE if reasons else Safety.SAFE", "        safety = Safety.SAFE",
           SAFETY_TESTS),
]

NOTEBOOK = "migrate_tpu/engine/notebook.py"
NOTEBOOK_TESTS = ("tests/surfaces/test_notebook_bytes.py", "tests/surfaces/test_notebook_places.py", "tests/surfaces/test_notebook.py",
                  "tests/surfaces/test_notebook_properties.py", "tests/surfaces/test_reports.py", "tests/test_fixtures.py", "tests/surfaces/test_patch.py")
MUTANTS += [
    # a finding's place in its cell: the cell's first line taken off its lines and its edits'
    Mutant("notebooks", NOTEBOOK, "        line=report.line - offset if report.line else report.line,",
           "        line=report.line - offset + 1 if report.line else report.line,", NOTEBOOK_TESTS),
    Mutant("notebooks", NOTEBOOK, "        end_line=report.end_line - offset if report.end_line else report.end_line,",
           "        end_line=report.end_line if report.end_line else report.end_line,", NOTEBOOK_TESTS),
    Mutant("notebooks", NOTEBOOK, "            edit[\"line\"] = edit_line - offset", "            edit[\"line\"] = edit_line", NOTEBOOK_TESTS),
    Mutant("notebooks", NOTEBOOK, "        as_read = (line - offset, column, end_line - offset, end_column)",
           "        as_read = (line, column, end_line - offset, end_column)", NOTEBOOK_TESTS),
    # a cell's trailing newline dropped by the notebook writer (killed by test_notebook_bytes.py)
    Mutant("notebooks", NOTEBOOK, "        if not program.trailing_newline[number] and text.endswith(\"\\n\"):\n",
           "        if text.endswith(\"\\n\"):\n", NOTEBOOK_TESTS),
]

MUTANTS += [
    # compat.v1's experimental_make_numpy_dataset (kept by TensorFlow, left alone by TPU105) recorded as a moved API
    Mutant("moved_calls", "migrate_tpu/runtime/surfaces/moved_calls.py", "_KEPT_BY_COMPAT_V1 = frozenset([\"experimental_make_numpy_dataset\"])",
           "_KEPT_BY_COMPAT_V1 = frozenset()", ("tests/runtime/test_moved_calls.py",)),
]

# The groups that need no TensorFlow: what tests/test_mutation_pass.py's slow test runs.
NO_TENSORFLOW = ("comparator", "safety", "notebooks", "moved_calls")


def describe(number: int, mutant: Mutant) -> str:
    """``#N group file: the first line of its text``: how the pass names a mutant."""
    return f"#{number} {mutant.group} {mutant.file}: {mutant.old.strip().splitlines()[0][:70]}"


def problem(mutant: Mutant, root: Path = REPO) -> Optional[str]:
    """Why ``mutant`` cannot be applied to the files under ``root`` (None: it can): its text
    must be in its file exactly once, and change something."""
    path = root / mutant.file
    if not path.is_file():
        return "no such file"
    found = path.read_text("utf-8").count(mutant.old)
    if found != 1:
        return f"its text is there {found} times, not once (the code moved: update the mutant)"
    if mutant.old == mutant.new:
        return "it changes nothing"
    return None


def misplaced(mutants: Sequence[Mutant], root: Path = REPO) -> List[str]:
    """Each mutant that cannot be applied, named (numbered as in ``mutants``), and why."""
    problems = []
    for number, mutant in enumerate(mutants, 1):
        why = problem(mutant, root)
        if why is not None:
            problems.append(f"{describe(number, mutant)}: {why}")
    return problems


# What the copy leaves out: version control, the venv (linked instead), caches.
_NOT_COPIED = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", ".migrate-tpu-cache", ".mypy_cache", ".ruff_cache",
                                     ".pytest_cache", ".hypothesis")


def copy_repository(into: Path, rev: Optional[str] = None) -> Path:
    """The working tree, or the commit ``rev`` (``git archive``), copied into ``into``/repo (the
    venv linked, not copied)."""
    copy = into / "repo"
    if rev is None:
        shutil.copytree(REPO, copy, ignore=_NOT_COPIED, symlinks=True)
    else:
        copy.mkdir()
        archive = subprocess.run(["git", "archive", "--format=tar", rev], cwd=REPO, stdout=subprocess.PIPE, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(copy)], input=archive, check=True)
    if (REPO / ".venv").exists():
        (copy / ".venv").symlink_to(REPO / ".venv")
    return copy


def _pytest(copy: Path, tests: Sequence[str], timeout: float, fast: bool = False) -> Tuple[Optional[int], str]:
    """(pytest's exit status, or None when it ran past ``timeout``; its output's tail), run in ``copy``;
    ``fast``: the fast tier's tests of those files only."""
    env: Dict[str, str] = dict(os.environ)
    env["PYTHONPATH"] = str(copy) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        done = subprocess.run(PYTEST + (["-m", "not slow"] if fast else []) + list(tests), cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, ""
    return done.returncode, done.stdout[-3000:]


def run(mutant: Mutant, copy: Path, timeout: float = 900, fast: bool = False) -> Tuple[bool, float]:
    """(whether the mutant survived, seconds); ``copy``'s file is restored whatever happens.
    A run past ``timeout`` counts as killed (the mutant made the tests hang)."""
    path = copy / mutant.file
    original = path.read_text("utf-8")
    if original.count(mutant.old) != 1:
        raise SystemExit(f"{mutant.file}: the text to mutate is not there exactly once:\n{mutant.old}")
    started = time.monotonic()
    try:
        path.write_text(original.replace(mutant.old, mutant.new), "utf-8")
        status, _ = _pytest(copy, mutant.tests, timeout, fast)
    finally:
        path.write_text(original, "utf-8")
    return status == 0, time.monotonic() - started


def main(arguments: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", default=None, help="run these groups (comma-separated)")
    parser.add_argument("--list", action="store_true", help="list the mutants and run nothing")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of the tests")
    parser.add_argument("--rev", default=None, help="mutate this commit (git archive) instead of the working tree")
    parser.add_argument("--fast", action="store_true", help="run only the fast tier's tests of each mutant's files (-m 'not slow')")
    options = parser.parse_args(arguments)
    groups = set(options.only.split(",")) if options.only else None
    unknown = sorted((groups or set()) - {mutant.group for mutant in MUTANTS})
    if unknown:
        print(f"no such group: {', '.join(unknown)}", file=sys.stderr)
        return 2
    chosen = [(number, mutant) for number, mutant in enumerate(MUTANTS, 1) if groups is None or mutant.group in groups]
    if options.list:
        for number, mutant in chosen:
            print(f"{number:3} {mutant.group:11} {mutant.file}: {mutant.old.strip().splitlines()[0][:70]}")
        return 0
    survivors = []
    with tempfile.TemporaryDirectory(prefix="migrate-tpu-mutants-") as folder:
        copy = copy_repository(Path(folder), options.rev)
        problems = misplaced(MUTANTS, copy)
        if problems:
            print("mutants whose text is not in their file exactly once:\n" + "\n".join(problems), file=sys.stderr)
            return 2
        if not options.no_baseline:
            tests = list(dict.fromkeys(test for _, mutant in chosen for test in mutant.tests))
            started = time.monotonic()
            status, output = _pytest(copy, tests, timeout=1800, fast=options.fast)
            if status != 0:
                print(f"the baseline fails (exit {status}): the tests fail without a mutant, so a mutant proves nothing\n{output}",
                      file=sys.stderr)
                return 2
            print(f"baseline: the tests pass unmutated ({time.monotonic() - started:.1f}s)", flush=True)
        for number, mutant in chosen:
            survived, seconds = run(mutant, copy, fast=options.fast)
            print(f"{number:3} {mutant.group:11} {'SURVIVED' if survived else 'killed  '} {seconds:5.1f}s {mutant.file}: "
                  f"{mutant.old.strip().splitlines()[0][:70]}", flush=True)
            if survived:
                survivors.append(describe(number, mutant))
    print(f"{len(chosen) - len(survivors)} of {len(chosen)} mutants killed; {len(survivors)} survived")
    for survivor in survivors:
        print(f"survived: {survivor}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
