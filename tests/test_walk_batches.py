"""The catalogue tables are walked together (``TableRule.batch_hooks``): one shared hook per
node type asks first what each table's own hook asks first. The findings must be those of
every table walked with its own hooks, on every rule example and every fixture."""

from pathlib import Path

import libcst as cst
import pytest

from migrate_tpu.codemod.analysis.walk import Analysis
from migrate_tpu.codemod.rules.catalogue import all_rules, select_rules
from migrate_tpu.codemod.migration.checking import run_rules
from migrate_tpu.codemod.rules.tables.table_rule import TableRule

ROOT = Path(__file__).resolve().parent.parent


def _sources():
    for rule in all_rules():
        for example in rule.examples:
            yield f"{rule.id} example", example.before
    for path in sorted((ROOT / "tests" / "fixtures").rglob("*.py")):
        try:
            yield str(path), path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a fixture of undecodable bytes: no findings to compare


def _findings(source: str, target: str, batched: bool):
    module = cst.parse_module(source)
    rules = [rule_class() for rule_class in select_rules((), (), target)]
    if not batched:
        for rule in rules:
            if isinstance(rule, TableRule):
                rule.batch_hooks = None  # each table walked with its own hooks, as before batches
    analysis = Analysis(module, rules)
    analysis.target = target
    found = run_rules(analysis)
    return sorted((f.rule_id, module.code_for_node(f.node), f.message, f.safety.value, len(f.changes)) for f in found), analysis


@pytest.mark.slow
def test_tables_walked_together_find_what_each_finds_alone():
    compared = with_findings = 0
    for name, source in _sources():
        for target in ("2.4", "latest"):
            try:
                batched, analysis = _findings(source, target, True)
            except cst.ParserSyntaxError:
                continue
            alone, _ = _findings(source, target, False)
            assert batched == alone, name
            compared += 1
            with_findings += bool(batched)
    assert compared > 100 and with_findings > 50, (compared, with_findings)


def test_one_shared_hook_per_node_type_for_all_tables():
    tables = [rule_class() for rule_class in select_rules((), (), "2.4") if issubclass(rule_class, TableRule)]
    assert len(tables) > 5
    analysis = Analysis(cst.parse_module("x = 1\n"), tables)
    assert {node_type.__name__: len(hooks) for node_type, hooks in analysis._dispatch.items()}["Name"] == 1
    assert all(len(hooks) == 1 for hooks in analysis._dispatch.values())


def test_a_shared_name_hook_sees_names_imported_during_the_walk():
    """``Policy`` is known to be the moved symbol only once its import is walked: the shared
    name hook must pass the later use to the table that imported it."""
    source = "from tensorflow.keras.mixed_precision.experimental import Policy\np = Policy('mixed_bfloat16')\n"
    _, analysis = _findings(source, "2.4", True)
    seen = [node.value for rule in analysis.rules if isinstance(rule, TableRule) for node, *_ in rule._names]
    assert seen == ["Policy"]
