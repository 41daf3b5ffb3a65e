"""Every rule's own examples, run through the real codemod (Fixit's VALID/INVALID).

Each example states what it expects: no finding (code the rule must leave
alone), findings without a fix (manual work: the code stays), or a fix with its
output. The test asserts the findings' rule ids and counts, the output, that it
parses and that a second run changes nothing.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from migrate_tpu.codemod.api import Options, migrate
from migrate_tpu.codemod.migrator import TPUMigrator
from migrate_tpu.codemod import syntax_stage
from migrate_tpu.codemod.rule import all_rules, select_rules

ROOT = Path(__file__).resolve().parent.parent

CASES = [
    pytest.param(rule, index, example, id=f"{rule.id}-{index}")
    for rule in all_rules()
    for index, example in enumerate(rule.examples)
]


def _options(rule, example, **changes):
    return Options(select=(rule.id,), target=example.target, unsafe_fixes=example.unsafe_fixes, **changes)


def expected_findings(example) -> str:
    """'none', 'manual' or 'fix', and how many findings (None: at least one)."""
    if example.after is not None:
        return "fix", example.findings
    if example.findings:
        return "manual", example.findings
    return "none", 0


def check_example(rule, example, rules_selected=None):
    """Run one example; raise AssertionError when it does not do what it states."""
    before = example.before.lstrip("\n")
    options = _options(rule, example) if rules_selected is None else Options(
        select=rules_selected, target=example.target, unsafe_fixes=example.unsafe_fixes
    )
    outcome = migrate(before, options)
    kind, count = expected_findings(example)
    ids = [r.rule for r in outcome.reports]
    assert set(ids) <= {rule.id}, ids
    if kind == "none":
        assert ids == [], f"{rule.id} must leave this alone, reported {ids}"
        assert outcome.code == before
        return
    if count is None:
        assert ids, f"{rule.id} reported nothing"
    else:
        assert len(ids) == count, f"{rule.id}: expected {count} findings, got {len(ids)}"
    if kind == "manual":
        assert outcome.code == before
        assert not any(r.applied for r in outcome.reports)
        return
    after = example.after.lstrip("\n")
    assert outcome.code == after
    ast.parse(outcome.code)
    assert migrate(outcome.code, options).code == outcome.code


@pytest.mark.parametrize("rule, index, example", CASES)
def test_example(rule, index, example):
    check_example(rule, example)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.id)
def test_rule_is_documented_and_exemplified(rule):
    assert rule.id.startswith("TPU") and rule.title and rule.what.strip() and rule.why.strip()
    assert rule.evidence, f"{rule.id} declares no evidence: the prefilter would skip every file"
    kinds = {expected_findings(e)[0] for e in rule.examples}
    # Every rule shows what it reports: a fix, or (manual rules) a finding.
    assert kinds & {"fix", "manual"}, f"{rule.id} has no example that fires"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.id)
def test_disabling_the_rule_fails_its_examples(rule):
    """With the rule ignored, some example of it must fail: the suite notices a lost rule."""
    firing = [e for e in rule.examples if expected_findings(e)[0] != "none"]
    assert firing
    others = tuple(r.id for r in all_rules() if r.id != rule.id)
    failures = 0
    for example in firing:
        try:
            check_example(rule, example, rules_selected=others or ("NONE",))
        except AssertionError:
            failures += 1
    assert failures == len(firing)


@pytest.mark.parametrize("rule, index, example", CASES)
def test_prefilter_lets_every_firing_example_through(rule, index, example):
    """The prefilter of a run that enables the rule must let its examples through."""
    if expected_findings(example)[0] == "none":
        pytest.skip("nothing to find")
    before = example.before.lstrip("\n").encode()
    assert TPUMigrator(_options(rule, example)).needs_work(before)
    assert TPUMigrator(Options(target=example.target)).needs_work(before)
    # and its second stage (the standard parser, before LibCST) with the rule alone and with all
    for select in ((rule.id,), ()):
        assert syntax_stage.may_fire(before.decode(), select_rules(select, (), example.target))[0]


def test_generated_files_are_current():
    """docs/rules.md, the README's rule table and the evidence table follow the rules."""
    script = ROOT / "scripts" / "document-rules"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_published_rule_ids_stay():
    """Users' configurations and suppressions name rule ids: none may disappear or change."""
    published = {
        "TPU101", "TPU102", "TPU103", "TPU104", "TPU105", "TPU106", "TPU107", "TPU108", "TPU109",
        "TPU201", "TPU202", "TPU203", "TPU204", "TPU205", "TPU301",
        "TPU401", "TPU402", "TPU403", "TPU404", "TPU405", "TPU406", "TPU407", "TPU501", "TPU502",
    }  # fmt: skip
    assert published <= {rule.id for rule in all_rules()}
