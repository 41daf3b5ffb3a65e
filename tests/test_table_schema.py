"""The rule catalogue's loader is strict: a key it does not know, or a value of the wrong type,
stops it with one line naming the file, the rule and the key; and every key is the name of the
field it fills."""

from dataclasses import fields

import pytest

from migrate_tpu.codemod.foundation import table_schema
from migrate_tpu.codemod.rules.catalogue import load
from migrate_tpu.codemod.stages.prefilter import Evidence
from migrate_tpu.codemod.rules.tables.entries import Entry
from migrate_tpu.codemod.rules.tables.loading import load_tables
from migrate_tpu.codemod.rules.catalogue import all_rules
from migrate_tpu.codemod.framework.rule import Example, Expected


def test_every_key_is_the_name_of_the_field_it_fills():
    assert set(table_schema.ENTRY) == {f.name for f in fields(Entry)}
    assert set(table_schema.EXAMPLE) == {f.name for f in fields(Example)}
    assert set(table_schema.EXPECTED) == {f.name for f in fields(Expected)}
    assert set(table_schema.EVIDENCE) == {f.name for f in fields(Evidence)}
    load()
    table_rules = [rule for rule in all_rules() if rule.__name__.startswith("Table_")]
    assert table_rules
    scalars = [key for key in table_schema.RULE if key not in table_schema.RULE_ARRAYS]
    for rule in table_rules:
        assert all(hasattr(rule, key) for key in scalars), rule.id


GOOD_RULE = '''
release = "2.4"

[[rule]]
id = "TPU999"
name = "test-rule"
title = "A test rule"
kind = "symbol"

[[rule.symbol]]
old = "tensorflow.old.Thing"
new = "tensorflow.Thing"

[[rule.example]]
before = "x = 1"
expected = [{ safety = "safe", line = 1, column = 1 }]
'''


@pytest.mark.parametrize(
    "change, message",
    [
        (('new = "tensorflow.Thing"', 'new = "tensorflow.Thing"\ntype_cheks = "TPU104"'),
         "rules.toml: [[rule]] TPU999: unknown key 'type_cheks' in [[rule.symbol]] (did you mean 'type_checks'?)"),
        (('new = "tensorflow.Thing"', 'new = "tensorflow.Thing"\nisinstance = "TPU104"'),
         "rules.toml: [[rule]] TPU999: unknown key 'isinstance' in [[rule.symbol]] (did you mean 'type_checks'?)"),
        (('new = "tensorflow.Thing"', 'new = "tensorflow.Thing"\nwhatever = 1'),
         "rules.toml: [[rule]] TPU999: unknown key 'whatever' in [[rule.symbol]] (known: old, new, since, removed, source, "
         "relation, calls, type_checks, keywords, manual_if_keywords, max_positional, manual_message, prefix, message, difference)"),
        (("[[rule.example]]", "[[rule.exampel]]"),
         "rules.toml: [[rule]] TPU999: unknown key 'exampel' in [[rule]] (did you mean 'example'?)"),
        (('kind = "symbol"', 'kind = "symbol"\nsaftey = "safe"'),
         "rules.toml: [[rule]] TPU999: unknown key 'saftey' in [[rule]] (did you mean 'safety'?)"),
        (("column = 1 }", "column = 1, mesage = 'x' }"),
         "rules.toml: [[rule]] TPU999: unknown key 'mesage' in an `expected` finding (did you mean 'message'?)"),
        (('new = "tensorflow.Thing"', 'new = "tensorflow.Thing"\nprefix = "yes"'),
         "rules.toml: [[rule]] TPU999: 'prefix' in [[rule.symbol]] must be true or false, not str"),
        (("line = 1", 'line = "1"'),
         "rules.toml: [[rule]] TPU999: 'line' in an `expected` finding must be a whole number, not str"),
        (('new = "tensorflow.Thing"', 'new = "tensorflow.Thing"\nmanual_if_keywords = "x"'),
         "rules.toml: [[rule]] TPU999: 'manual_if_keywords' in [[rule.symbol]] must be a list of strings, not str"),
        (('id = "TPU999"\n', ""), "rules.toml: [[rule]] number 1: [[rule]] lacks 'id'"),
        (('release = "2.4"', 'relase = "2.4"'), "rules.toml: unknown key 'relase' in the file (did you mean 'release'?)"),
    ],
)
def test_a_table_that_says_something_unknown_is_refused_in_one_line(tmp_path, change, message):
    old, new = change
    assert old in GOOD_RULE
    (tmp_path / "rules.toml").write_text(GOOD_RULE.replace(old, new, 1))
    with pytest.raises(table_schema.TableError) as raised:
        load_tables(tmp_path)
    assert str(raised.value) == f"{tmp_path / 'rules.toml'}: {message.split(': ', 1)[1]}"
    assert "\n" not in str(raised.value)


def test_the_good_table_passes_the_check():
    import tomllib

    table_schema.check_document(tomllib.loads(GOOD_RULE), "rules.toml")


def test_a_tables_evidence_carries_every_field_into_the_rule(tmp_path, monkeypatch):
    from migrate_tpu.codemod.framework import rule as rule_module

    # The loader registers what it builds; keep the test rule out of the real catalogue.
    monkeypatch.setattr(rule_module, "_REGISTRY", dict(rule_module._REGISTRY))
    table = GOOD_RULE + '\n[[rule.evidence]]\nliteral = "Thing"\ncode_only = true\ntargets = ["latest"]\n'
    (tmp_path / "rules.toml").write_text(table.replace('id = "TPU999"', 'id = "TPU998"').replace("test-rule", "test-rule-998"))
    (created,) = load_tables(tmp_path)
    declared = [e for e in created.evidence if e.literal == "Thing" and e.code_only]
    assert [e.targets for e in declared] == [("latest",)]
    assert declared[0].counts_for("latest") and not declared[0].counts_for("2.4")


def test_an_examples_code_may_be_a_python_file_beside_the_tables(tmp_path, monkeypatch):
    from migrate_tpu.codemod.framework import rule as rule_module

    monkeypatch.setattr(rule_module, "_REGISTRY", dict(rule_module._REGISTRY))
    (tmp_path / "examples").mkdir()
    before = 'def f():\n    """A docstring, as written."""\n    return tf.old.Thing\n'
    (tmp_path / "examples" / "TPU997_0.py").write_bytes(before.encode("utf-8"))
    table = GOOD_RULE.replace('id = "TPU999"', 'id = "TPU997"').replace("test-rule", "test-rule-997")
    table = table.replace('before = "x = 1"', 'before = { file = "examples/TPU997_0.py" }\nafter = "y = 2"')
    (tmp_path / "rules.toml").write_text(table)
    (created,) = load_tables(tmp_path)
    assert [(e.before, e.after) for e in created.examples] == [(before, "y = 2")]


@pytest.mark.parametrize("before, message", [
    ('{ file = "examples/missing.py" }', "an example's file 'examples/missing.py' cannot be read: No such file or directory"),
    ('{ file = "examples/x.txt" }', "'before' in [[rule.example]] must be a string, or a table { file = ... } naming a .py file "
                                    "under the tables' folder, not dict"),
    ('{ path = "examples/x.py" }', "'before' in [[rule.example]] must be a string, or a table { file = ... } naming a .py file "
                                   "under the tables' folder, not dict"),
])
def test_an_examples_file_that_is_not_there_or_not_python_is_refused_in_one_line(tmp_path, before, message):
    (tmp_path / "rules.toml").write_text(GOOD_RULE.replace('before = "x = 1"', f"before = {before}"))
    with pytest.raises(table_schema.TableError) as raised:
        load_tables(tmp_path)
    assert str(raised.value) == f"{tmp_path / 'rules.toml'}: [[rule]] TPU999: {message}"
