"""Every rule's `check` output on its own examples, pinned (ruff's diagnostics snapshots).

``tests/rule_snapshots/<ID>.txt`` holds, for each example of the rule, what ``migrate-tpu
check --select <ID>`` prints for it (with the example's ``--target`` and ``--unsafe-fixes``):
``path:line:col: ID [*] message`` lines and their ``help:`` lines, rendered by the engine's
own text reporter, as ``<ID>/<example number>.py``. Under each finding, its fix as these
settings treat it, stated in words (``check`` prints ``[*]`` both for a safe fix and for an
unsafe one that ``--unsafe-fixes`` applies)::

      = Safe fix, applied: <fix title>
      = Unsafe fix, applied (--unsafe-fixes): <fix title>
      = Unsafe fix, not applied (needs --unsafe-fixes): <fix title>
      = Manual: no fix

and under an example's findings, what ``fix`` makes of the example with the same settings, as
a unified diff (findings carry no complete edit of their own: a fix that adds a statement
has none), or that it changes nothing; where a fix is held back for ``--unsafe-fixes``, also
the diff with it. An example that states its findings (``Expected``) is checked by
``test_rule_examples.py`` too; the snapshot pins every example, the fixed ones and those that
find nothing included, so a changed message, position, safety, suggestion or fixed code
fails here.

When a change is meant, regenerate the files and read their diff before committing it::

    MIGRATE_TPU_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest -q tests/test_rule_snapshots.py
"""

import difflib
import io
import os
from dataclasses import replace
from pathlib import Path
from typing import Callable, List

import pytest

from migrate_tpu.codemod.migration.api import Options, migrate
from migrate_tpu.codemod.rules.catalogue import all_rules
from migrate_tpu.engine.file_finding import FileFinding
from migrate_tpu.engine.pipeline import FileResult
from migrate_tpu.engine.report import finding_line, write_text_findings

SNAPSHOTS = Path(__file__).resolve().parent / "rule_snapshots"
UPDATE = "MIGRATE_TPU_UPDATE_SNAPSHOTS"
REGENERATE = f"{UPDATE}=1 .venv/bin/python -m pytest -q tests/test_rule_snapshots.py"


def _settings(example) -> str:
    return f"--target {example.target}" + (" --unsafe-fixes" if example.unsafe_fixes else "")


def applicability(report) -> str:
    """A finding's fix in words, as the settings it ran with treat it."""
    if report.safety == "manual" and not report.applied:
        return "Manual: no fix"
    kind = f"{report.safety.capitalize()} fix"
    if report.applied:
        state = "applied (--unsafe-fixes)" if report.safety == "unsafe" else "applied"
    else:
        state = "not applied (needs --unsafe-fixes)" if report.safety == "unsafe" else "not applied"
    return f"{kind}, {state}" + (f": {report.fix_title}" if report.fix_title else "")


def fixed_diff(before: str, after: str) -> List[str]:
    """``after`` against ``before`` as the lines of a unified diff, one line of context."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    lines = []
    for line in difflib.unified_diff(old, new, n=1):
        if line.startswith(("---", "+++")):
            continue
        lines.append(line.rstrip("\n") if line.endswith("\n") else line + "  (no newline at the end)")
    return lines or ["(only the newlines change)"]


def render(rule, run: Callable = migrate) -> str:
    """The snapshot of ``rule``: its examples' `check` output, in order (``run``: the codemod)."""
    lines: List[str] = [
        f"# `migrate-tpu check --select {rule.id}` on each example of {rule.id} (tests/test_rule_snapshots.py)",
        f"# regenerate: {REGENERATE}",
    ]
    for index, example in enumerate(rule.examples):
        before = example.before.lstrip("\n")
        options = Options(select=(rule.id,), target=example.target, unsafe_fixes=example.unsafe_fixes, mode="check")
        reports = [FileFinding.of(report) for report in run(before, options).reports]
        lines += ["", f"# example {index} ({_settings(example)})" + ("" if reports else ": no findings")]
        for report in reports:
            out = io.StringIO()
            write_text_findings([FileResult(path=f"{rule.id}/{index}.py", reports=[report])], out)
            lines += out.getvalue().splitlines()
            lines.append("  = " + applicability(report))
        after = run(before, replace(options, mode="fix")).code
        if after != before:
            lines.append("# fixed:")
            lines += fixed_diff(before, after)
        elif reports:
            lines.append("# fixed: no change")
        if any(report.safety == "unsafe" and not report.applied for report in reports):
            unsafe = run(before, replace(options, mode="fix", unsafe_fixes=True)).code
            lines.append("# fixed with --unsafe-fixes:")
            lines += fixed_diff(before, unsafe) if unsafe != before else ["(no change)"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda rule: rule.id)
def test_check_output_on_the_examples_matches_the_snapshot(rule):
    path = SNAPSHOTS / f"{rule.id}.txt"
    rendered = render(rule)
    if os.environ.get(UPDATE) == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(rendered, encoding="utf-8")
        return
    assert path.is_file(), f"{rule.id} has no snapshot: write it with `{REGENERATE}` and read it"
    assert rendered == path.read_text(encoding="utf-8"), (
        f"{rule.id}'s `check` output on its examples changed: if that is meant, run `{REGENERATE}` and read the diff"
    )


def test_every_snapshot_belongs_to_a_rule():
    """A rule renamed or gone leaves no snapshot behind (nothing would compare it)."""
    ids = {rule.id for rule in all_rules()}
    stale = sorted(path.name for path in SNAPSHOTS.glob("*.txt") if path.stem not in ids)
    if os.environ.get(UPDATE) == "1":
        for name in stale:
            (SNAPSHOTS / name).unlink()
        return
    assert not stale, f"snapshots of no rule: {stale}"


def test_every_example_appears_in_its_snapshot():
    """The snapshots hold each example's heading: an example added, or one gone, fails above."""
    for rule in all_rules():
        text = render(rule)
        assert [line for line in text.splitlines() if line.startswith("# example ")] == [
            f"# example {index} ({_settings(example)})" + ("" if f"\n{rule.id}/{index}.py:" in text else ": no findings")
            for index, example in enumerate(rule.examples)
        ]


@pytest.mark.parametrize(
    "rule_id, change",
    [
        ("TPU101", {"message": "`experimental_run_v2` is renamed"}),
        ("TPU101", {"line": 1}),
        ("TPU101", {"column": 1}),
        ("TPU101", {"safety": "unsafe", "applied": False}),
        ("TPU101", {"safety": "unsafe"}),
        ("TPU301", {"safety": "safe"}),
        ("TPU101", {"fix_title": "Rename it"}),
        ("TPU202", {"suggestion": "TPUClusterResolver(tpu=None)"}),
    ],
    ids=["message", "line", "column", "safety", "safety-only", "safety-unsafe-to-safe", "fix-title", "suggestion"],
)
def test_a_change_of_what_check_prints_changes_the_snapshot(rule_id, change):
    """Each thing a finding prints is in the snapshot: a codemod that reports it otherwise
    renders another text, which the comparison above refuses."""
    rule = next(rule for rule in all_rules() if rule.id == rule_id)

    def changed(source, options):
        outcome = migrate(source, options)
        return replace(outcome, reports=[replace(report, **change) for report in outcome.reports])

    assert render(rule, changed) != render(rule)


def _reports_of(rule_id: str, index: int):
    rule = next(rule for rule in all_rules() if rule.id == rule_id)
    example = rule.examples[index]
    options = Options(select=(rule.id,), target=example.target, unsafe_fixes=example.unsafe_fixes, mode="check")
    return rule, [FileFinding.of(report) for report in migrate(example.before.lstrip("\n"), options).reports]


def test_a_safety_flip_that_check_prints_alike_changes_the_snapshot():
    """TPU301's example 6 has an unsafe fix applied under --unsafe-fixes: `check` prints `[*]`
    for it as for a safe fix, so a rule that made it safe would print the same line; the
    snapshot states the safety and fails."""
    rule, reports = _reports_of("TPU301", 6)
    assert [(report.safety, report.applied) for report in reports] == [("unsafe", True)]
    made_safe = replace(reports[0], safety="safe")
    assert finding_line("TPU301/6.py", made_safe) == finding_line("TPU301/6.py", reports[0])
    assert applicability(made_safe) != applicability(reports[0])

    def flipped(source, options):
        outcome = migrate(source, options)
        return replace(outcome, reports=[replace(report, safety="safe") for report in outcome.reports])

    assert render(rule, flipped) != render(rule)


@pytest.mark.parametrize(
    "safety, applied, expected",
    [
        ("safe", True, "Safe fix, applied: Title"),
        ("safe", False, "Safe fix, not applied: Title"),
        ("unsafe", True, "Unsafe fix, applied (--unsafe-fixes): Title"),
        ("unsafe", False, "Unsafe fix, not applied (needs --unsafe-fixes): Title"),
        ("manual", False, "Manual: no fix"),
    ],
)
def test_applicability_in_words(safety, applied, expected):
    _, reports = _reports_of("TPU101", 0)
    assert applicability(replace(reports[0], safety=safety, applied=applied, fix_title="Title")) == expected


def test_a_change_of_the_fixed_code_changes_the_snapshot():
    """The fix itself is in the snapshot: a rule that fixed the example otherwise fails it."""
    rule = next(rule for rule in all_rules() if rule.id == "TPU101")

    def other_fix(source, options):
        outcome = migrate(source, options)
        return replace(outcome, code=outcome.code.replace("strategy.run", "strategy.run_v3"))

    assert render(rule, other_fix) != render(rule)
