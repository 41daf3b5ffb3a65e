"""A mutation pass: one-line changes to the code that a test must catch, each run against the
tests that guard it; prints which mutants survive (no test failed).

Each mutant is (file, the exact text to change, what it becomes, the tests to run). The file
is restored after each run, whatever happens. Usage:

    python benchmarks/mutation_pass.py [--only GROUP] [--list]

Groups: comparator (verify's verdict, no TensorFlow), reductions (the TF 2.1 surface's reduce),
safety (fix safety levels), notebooks (cell offsets). The groups that start TensorFlow take
minutes each.

Pods: the order of the emulated pod's input workers (``strategies._one_input_worker_per_host``),
reversed whole or with each host's cores swapped, gives the same program on TF 2.21 (replica r
still gets host r // cores-per-host's pipeline, asked inside the replica: TensorFlow pairs a
pipeline with the cores by the devices), so those mutants are equivalent and not listed;
tests/roundtrip/test_pod_one_client.py asserts the pairing itself.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import List, NamedTuple, Tuple

REPO = Path(__file__).resolve().parent.parent
PYTEST = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]


class Mutant(NamedTuple):
    group: str
    file: str
    old: str
    new: str
    tests: Tuple[str, ...]


COMPARE = "migrate_tpu/verify/compare.py"
COMPARE_TESTS = ("tests/verify/test_compare.py", "tests/verify/test_changes_and_blame.py")

MUTANTS: List[Mutant] = [
    # the tolerance
    Mutant("comparator", COMPARE, "return abs(a - b) <= atol + rtol * abs(b)", "return abs(a - b) <= 2 * atol + rtol * abs(b)", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "return abs(a - b) <= atol + rtol * abs(b)", "return abs(a - b) <= atol + 2 * rtol * abs(b)", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "    if rtol == 0 and atol == 0:\n        return a == b\n", "    if rtol == 0 and atol == 0:\n        return abs(a - b) < 1e-6\n",
           COMPARE_TESTS),
    Mutant("comparator", COMPARE, "        return math.isnan(a) and math.isnan(b)", "        return True", COMPARE_TESTS),
    # the default tolerance across releases
    Mutant("comparator", "migrate_tpu/verify/verdict.py", "DEFAULT_RTOL = 1e-5", "DEFAULT_RTOL = 1e-4", COMPARE_TESTS),
    # tracing
    Mutant("comparator", COMPARE, "        grew = before_count is not None and count > before_count", "        grew = False", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "    if warm_after > warm_before:\n", "    if False:\n", COMPARE_TESTS),
    # matching variables
    Mutant("comparator", COMPARE, "            if b is not None and a is not None:\n                matched.append((label, b, a))",
           "            if b is not None and a is not None and index == 0:\n                matched.append((label, b, a))", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "        if entry[\"why\"] != BOOKKEEPING_REASON:\n", "        if False:\n", COMPARE_TESTS),
    # values and structure
    Mutant("comparator", COMPARE, "        if before.get(\"sha1\") is not None and before.get(\"sha1\") == after.get(\"sha1\"):",
           "        if before.get(\"sha1\") is not None:", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "        for b, a in itertools.zip_longest(_numbers(before), _numbers(after)):",
           "        for b, a in itertools.islice(zip(_numbers(before), _numbers(after)), 64):", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "    if before_failure is not None and not _steps_done(b):", "    if before_failure is not None:", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "    if divergence is None and (before_failure or after_failure) and before_failure != after_failure:",
           "    if divergence is None and after_failure and before_failure != after_failure:", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "    if seen and max(seen) < 2:", "    if seen and max(seen) < 1:", COMPARE_TESTS),
    Mutant("comparator", COMPARE, "        line = re.sub(r\"(?<![\\w.])\" + re.escape(version) + r\"(?![\\w.])\", _VERSION_MARK, line)",
           "        line = line", COMPARE_TESTS),
    # coverage
    Mutant("comparator", "migrate_tpu/verify/changes.py", "    return any(line in seen for line in hunk.watch)", "    return bool(seen)", COMPARE_TESTS),
    # the TF 2.1 surface's reduce with an axis: a replica's Python number returned as a tensor
    Mutant("reductions", "migrate_tpu/runtime/strategies.py", "        return tf.nest.map_structure(_as_tensor, fn(*args, **kwargs))",
           "        return fn(*args, **kwargs)", ("tests/runtime/test_emulation.py::test_reduce_and_tensorflows_own_cross_replica_ops",)),
]

RULES = "migrate_tpu/codemod/rules/structural/"
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
    Mutant("safety", RULES + "eager_run/hoisting.py", "        safety = Safety.UNSAFE if reasons else Safety.SAFE", "        safety = Safety.SAFE", SAFETY_TESTS),
]

NOTEBOOK = "migrate_tpu/engine/notebook.py"
NOTEBOOK_TESTS = ("tests/surfaces/test_notebook_places.py", "tests/surfaces/test_notebook.py", "tests/surfaces/test_notebook_properties.py",
                  "tests/surfaces/test_reports.py", "tests/test_fixtures.py", "tests/surfaces/test_patch.py")
MUTANTS += [
    # a finding's place in its cell: the cell's first line taken off its lines and its edits'
    Mutant("notebooks", NOTEBOOK, "        line=report.line - offset if report.line else report.line,",
           "        line=report.line - offset + 1 if report.line else report.line,", NOTEBOOK_TESTS),
    Mutant("notebooks", NOTEBOOK, "        end_line=report.end_line - offset if report.end_line else report.end_line,",
           "        end_line=report.end_line if report.end_line else report.end_line,", NOTEBOOK_TESTS),
    Mutant("notebooks", NOTEBOOK, "            edit[\"line\"] = edit_line - offset", "            edit[\"line\"] = edit_line", NOTEBOOK_TESTS),
    Mutant("notebooks", NOTEBOOK, "        as_read = (line - offset, column, end_line - offset, end_column)",
           "        as_read = (line, column, end_line - offset, end_column)", NOTEBOOK_TESTS),
]


def run(mutant: Mutant) -> Tuple[bool, float]:
    """(whether the mutant survived, seconds)."""
    path = REPO / mutant.file
    original = path.read_text("utf-8")
    if original.count(mutant.old) != 1:
        raise SystemExit(f"{mutant.file}: the text to mutate is not there exactly once:\n{mutant.old}")
    started = time.monotonic()
    try:
        path.write_text(original.replace(mutant.old, mutant.new), "utf-8")
        done = subprocess.run(PYTEST + list(mutant.tests), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        path.write_text(original, "utf-8")
    return done.returncode == 0, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="run one group")
    parser.add_argument("--list", action="store_true", help="list the mutants and run nothing")
    options = parser.parse_args()
    chosen = [m for m in MUTANTS if options.only in (None, m.group)]
    survivors = []
    for number, mutant in enumerate(chosen, 1):
        first_line = mutant.old.strip().splitlines()[0][:70]
        if options.list:
            print(f"{number:3} {mutant.group:11} {mutant.file}: {first_line}")
            continue
        survived, seconds = run(mutant)
        print(f"{number:3} {mutant.group:11} {'SURVIVED' if survived else 'killed  '} {seconds:5.1f}s {mutant.file}: {first_line}", flush=True)
        if survived:
            survivors.append(mutant)
    if not options.list:
        print(f"{len(chosen) - len(survivors)} of {len(chosen)} mutants killed; {len(survivors)} survived")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
