"""Every rule's own examples, run through the real codemod (Fixit's VALID/INVALID).

Each example states what it expects: no finding (code the rule must leave
alone), findings without a fix (manual work: the code stays), or a fix with its
output. The test asserts the findings' rule ids and counts, the output, that it
parses and that a second run changes nothing. Where and how each finding is reported
(position, message, safety, suggestion) is pinned for every example, those that state
none included, by its rule's snapshot of `check` output (``test_rule_snapshots.py``).
"""

import ast
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from migrate_tpu.codemod.migration.api import Options, migrate
from migrate_tpu.codemod.migration.migrator import TPUMigrator
from migrate_tpu.codemod.stages import syntax_stage
from migrate_tpu.codemod.rules.catalogue import all_rules, select_rules

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
    count = len(example.expected) if example.expected else example.findings
    if example.after is not None:
        return "fix", count
    if count:
        return "manual", count
    return "none", 0


def check_expected(rule, example, options) -> None:
    """Each finding as the example states it: rule, safety, line, column, message."""
    before = example.before.lstrip("\n")
    reports = migrate(before, replace(options, mode="check")).reports
    found = [
        (r.rule, r.safety, r.line, r.column, r.message if e.message is not None else None)
        for r, e in zip(reports, example.expected)
    ]
    stated = [(e.rule or rule.id, e.safety, e.line, e.column, e.message) for e in example.expected]
    assert found == stated and len(reports) == len(stated), (
        f"{rule.id}: expected {stated}, reported {[(r.rule, r.safety, r.line, r.column, r.message) for r in reports]}"
    )


def check_example(rule, example, rules_selected=None):
    """Run one example; raise AssertionError when it does not do what it states."""
    before = example.before.lstrip("\n")
    options = _options(rule, example) if rules_selected is None else Options(
        select=rules_selected, target=example.target, unsafe_fixes=example.unsafe_fixes
    )
    outcome = migrate(before, options)
    kind, count = expected_findings(example)
    ids = [r.rule for r in outcome.reports]
    if example.expected:
        check_expected(rule, example, options)
    if example.unsafe_fixes:
        # Without --unsafe-fixes the unsafe fixes stay suggestions: a fix that became safe fails here.
        safe_only = migrate(before, replace(options, unsafe_fixes=False))
        expected_code = before if example.safe_after is None else example.safe_after.lstrip("\n")
        assert safe_only.code == expected_code, f"{rule.id}: plain fix applied what must be unsafe"
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
    for example in rule.examples:
        if example.expected and example.findings is not None:
            assert example.findings == len(example.expected), f"{rule.id}: `findings` and `expected` disagree"
        assert all(e.safety in ("safe", "unsafe", "manual") for e in example.expected)
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


# -- the framework itself: a misstated example fails, and the safety pins of the mutation audit --------


def _example_of(rule_id):
    from migrate_tpu.codemod.rules.catalogue import get_rule

    return get_rule(rule_id)


@pytest.mark.parametrize(
    "change",
    [
        {"safety": "unsafe"},
        {"line": 2},
        {"column": 1},
        {"message": "`lr=` is deprecated"},
        {"rule": "TPU101"},
    ],
    ids=["safety", "line", "column", "message", "rule"],
)
def test_an_example_that_misstates_its_finding_fails(change):
    from migrate_tpu.codemod.framework.rule import Expected, tf_example

    rule = _example_of("TPU405")
    stated = {"safety": "safe", "line": 1, "column": 13,
              "message": "`lr=` is a deprecated alias of `learning_rate=`; Keras 2.11 and later optimizers ignore it"}
    right = tf_example(
        before="optimizer = tf.keras.optimizers.SGD(lr=0.1)\n",
        after="optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)\n",
        expected=(Expected(**stated),),
    )
    check_example(rule, right)
    wrong = replace(right, expected=(replace(right.expected[0], **change),))
    with pytest.raises(AssertionError):
        check_example(rule, wrong)


def test_an_example_stated_unsafe_whose_fix_plain_fix_applies_fails():
    from migrate_tpu.codemod.framework.rule import tf_example

    rule = _example_of("TPU405")
    safe_fix = tf_example(
        before="optimizer = tf.keras.optimizers.SGD(lr=0.1)\n",
        after="optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)\n",
        unsafe_fixes=True,
    )
    with pytest.raises(AssertionError, match="plain fix applied what must be unsafe"):
        check_example(rule, safe_fix)


POD_STRATEGY = (
    "import tensorflow as tf\n\n"
    "class PodStrategy(tf.distribute.experimental.TPUStrategy):\n"
    "    def __init__(self, resolver, device_assignment=None):\n"
    "        super(PodStrategy, self).__init__(resolver, device_assignment=device_assignment)\n"
)


def test_plain_fix_never_rebases_a_tpu_strategy_subclass():
    """Mutation survivor of the audit: the base-class rename made safe. The constructor differs
    (`device_assignment=` became `experimental_device_assignment=`): unsafe, so plain `fix` keeps it."""
    outcome = migrate(POD_STRATEGY, Options(mode="fix"))
    assert outcome.code == POD_STRATEGY
    assert [(r.rule, r.line, r.safety, r.applied) for r in outcome.reports] == [("TPU103", 3, "unsafe", False)]
    fixed = migrate(POD_STRATEGY, Options(mode="fix", unsafe_fixes=True)).code
    assert "class PodStrategy(tf.distribute.TPUStrategy):" in fixed and "experimental_device_assignment=device_assignment" in fixed


def test_plain_fix_never_rewrites_make_numpy_dataset_on_an_unknown_receiver():
    """Mutation survivor of the audit: the unknown receiver (maybe a `tf.compat.v1` strategy, which
    keeps the method) made safe. Plain `fix` must leave the call."""
    source = "import tensorflow as tf\n\nstrategy = make_tpu_strategy()\nds = strategy.experimental_make_numpy_dataset(x)\n"
    outcome = migrate(source, Options(mode="fix"))
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety, r.applied) for r in outcome.reports] == [("TPU105", 4, "unsafe", False)]


SECTIONS = ["What it does", "Why", "Example", "Use instead", "Fix safety"]


@pytest.mark.parametrize("rule", all_rules(), ids=lambda rule: rule.id)
def test_explain_gives_every_rule_the_same_five_sections(rule):
    """`migrate-tpu explain` for any rule, manual ones included: the five sections in order,
    none empty, and how to keep a line or a file as it is (a manual finding blocks a
    pre-commit hook until it is dealt with or marked)."""
    import re

    docs = rule.docs()
    headings = re.findall(r"^## (.+)$", docs, re.M)
    assert [h for h in headings if h in SECTIONS] == SECTIONS, headings
    for section in SECTIONS:
        body = docs.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
        assert body.strip(), f"{rule.id}: empty {section}"
    assert f"# migrate-tpu: ignore[{rule.id}]" in docs
    assert "per-file-ignores" in docs
