"""Every rule's `check` output on its own examples, pinned (ruff's diagnostics snapshots).

``tests/rule_snapshots/<ID>.txt`` holds, for each example of the rule, what ``migrate-tpu
check --select <ID>`` prints for it (with the example's ``--target`` and ``--unsafe-fixes``):
``path:line:col: ID [*] message`` lines and their ``help:`` lines, rendered by the engine's
own text reporter, as ``<ID>/<example number>.py``. An example that states its findings
(``Expected``) is checked by ``test_rule_examples.py`` too; the snapshot pins every
example, the fixed ones and those that find nothing included, so a changed message,
position, safety or suggestion fails here.

When a change is meant, regenerate the files and read their diff before committing it::

    MIGRATE_TPU_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest -q tests/test_rule_snapshots.py
"""

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
from migrate_tpu.engine.report import write_text_findings

SNAPSHOTS = Path(__file__).resolve().parent / "rule_snapshots"
UPDATE = "MIGRATE_TPU_UPDATE_SNAPSHOTS"
REGENERATE = f"{UPDATE}=1 .venv/bin/python -m pytest -q tests/test_rule_snapshots.py"


def _settings(example) -> str:
    return f"--target {example.target}" + (" --unsafe-fixes" if example.unsafe_fixes else "")


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
        out = io.StringIO()
        write_text_findings([FileResult(path=f"{rule.id}/{index}.py", reports=reports)], out)
        lines += ["", f"# example {index} ({_settings(example)})" + ("" if reports else ": no findings")]
        lines += out.getvalue().splitlines()
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
        ("TPU202", {"suggestion": "TPUClusterResolver(tpu=None)"}),
    ],
    ids=["message", "line", "column", "safety", "suggestion"],
)
def test_a_change_of_what_check_prints_changes_the_snapshot(rule_id, change):
    """Each thing a finding prints is in the snapshot: a codemod that reports it otherwise
    renders another text, which the comparison above refuses."""
    rule = next(rule for rule in all_rules() if rule.id == rule_id)

    def changed(source, options):
        outcome = migrate(source, options)
        return replace(outcome, reports=[replace(report, **change) for report in outcome.reports])

    assert render(rule, changed) != render(rule)
