"""Every rule's own before/after examples, run through the real codemod.

An example with an ``after`` must migrate to exactly that text (and migrate no
further on a second run); one without must stay byte-identical.
"""

import ast

import pytest

from migrate_tpu.codemod.api import Options, migrate
from migrate_tpu.codemod.migrator import TPUMigrator
from migrate_tpu.codemod.rule import all_rules

CASES = [
    pytest.param(rule, index, example, id=f"{rule.id}-{index}")
    for rule in all_rules()
    for index, example in enumerate(rule.examples)
]


def _options(rule, example):
    return Options(select=(rule.id,), target=example.target, unsafe_fixes=example.unsafe_fixes)


@pytest.mark.parametrize("rule, index, example", CASES)
def test_example(rule, index, example):
    before = example.before.lstrip("\n")
    outcome = migrate(before, _options(rule, example))
    if example.after is None:
        assert outcome.code == before
        assert all(not r.applied for r in outcome.reports)
    else:
        after = example.after.lstrip("\n")
        assert outcome.code == after
        ast.parse(outcome.code)
        assert migrate(outcome.code, _options(rule, example)).code == outcome.code


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.id)
def test_rule_is_documented_and_exemplified(rule):
    assert rule.id.startswith("TPU") and rule.title and rule.what.strip() and rule.why.strip()
    assert rule.examples, f"{rule.id} has no example"
    assert any(e.after is not None for e in rule.examples) or rule.safety.value == "manual"
    docs = rule.docs()
    for section in ("## What it does", "## Why", "## Example", "## Fix safety"):
        assert section in docs


@pytest.mark.parametrize("rule, index, example", CASES)
def test_prefilter_lets_every_example_through(rule, index, example):
    """A rule's examples must never be skipped by the textual prefilter."""
    before = example.before.lstrip("\n")
    if example.after is None and not migrate(before, _options(rule, example)).reports:
        pytest.skip("negative example")
    assert TPUMigrator().needs_work(before.encode())


def test_rule_ids_are_unique_and_stable():
    ids = [rule.id for rule in all_rules()]
    assert len(ids) == len(set(ids))
    assert {"TPU101", "TPU102", "TPU103", "TPU104", "TPU105", "TPU106", "TPU201", "TPU301", "TPU401", "TPU402", "TPU403", "TPU501"} <= set(ids)


def test_rule_docs_page_is_current():
    """docs/rules.md is generated from the rules; it must not drift from them."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "scripts" / "document-rules"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
