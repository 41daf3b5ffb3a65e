"""Every catalogue entry in every reference position: fixed or reported, never silent.

Generated from the catalogue (``rules/*.toml``): each moved symbol is placed in
each position a reference can take (call, attribute, base class, isinstance and
issubclass with tuples, annotations with Optional/Union and in strings, alias,
default argument, decorator, from-import, the v2 API reached through a
``compat.v1`` alias; for methods also unknown receivers and getattr/hasattr
strings). With every rule enabled the line must carry a finding or change, the
output must parse, a second run must change nothing, and the prefilter must let
the file through. ``tf.compat.v1.*`` spellings are left alone.
"""

import ast
from typing import List, Tuple

import pytest

from migrate_tpu.codemod.foundation import references

from migrate_tpu.codemod.stages import syntax_stage
from migrate_tpu.codemod.migration.api import Options, migrate
from migrate_tpu.codemod.migration.migrator import TPUMigrator
from migrate_tpu.codemod.rules.tables.table_rule import TableRule
from migrate_tpu.codemod.rules.catalogue import all_rules, select_rules

HEADER = "import tensorflow as tf\nfrom typing import Optional, Union\n\n"
COMPAT_V1_HEADER = "import tensorflow.compat.v1 as tf\nfrom typing import Optional, Union\n\n"

# position -> template; ``{ref}`` is where the symbol goes (on the line checked).
SYMBOL_TEMPLATES = {
    references.CALL: "value = {ref}(argument)\n",
    references.ATTRIBUTE: "name = {ref}.__name__\n",
    references.BASE: "class Custom({ref}):\n    pass\n",
    references.TYPE_CHECK: "ok = isinstance(value, {ref})\n",
    "issubclass tuple": "ok = issubclass(kind, (int, {ref}))\n",
    references.ANNOTATION: "def use(value: {ref}) -> None:\n    pass\n",
    "return annotation": "def make() -> {ref}:\n    pass\n",
    "Optional annotation": "def maybe(value: Optional[{ref}] = None):\n    pass\n",
    "Union alias": "Either = Union[int, {ref}]\n",
    references.STRING: 'def later(value: "{ref}"):\n    pass\n',
    references.ALIAS: "Kind = {ref}\n",
    references.DEFAULT: "def build(kind={ref}):\n    return kind\n",
    references.DECORATOR: "@{ref}\ndef decorated():\n    pass\n",
}

METHOD_TEMPLATES = {
    "call, unknown receiver": "strategy = make_strategy()\nresult = strategy.{name}(step)\n",
    "attribute reference": "strategy = make_strategy()\nbound = strategy.{name}\n",
    "getattr string": 'strategy = make_strategy()\nbound = getattr(strategy, "{name}")\n',
    "hasattr string": 'strategy = make_strategy()\nknown = hasattr(strategy, "{name}")\n',
}


def _target(rule) -> str:
    return "2.4" if "2.4" in rule.targets else "latest"


def _short(name: str) -> str:
    return "tf" + name[len("tensorflow") :]


def _entries() -> List[Tuple[type, object]]:
    return [(rule, entry) for rule in all_rules() if issubclass(rule, TableRule) for entry in rule.entries]


def _line_of(code: str, marker: str) -> int:
    for number, line in enumerate(code.splitlines(), 1):
        if marker in line:
            return number
    raise AssertionError(f"{marker!r} not in code")


def _cases():
    for rule, entry in _entries():
        if rule.kind == "method":
            for position, template in METHOD_TEMPLATES.items():
                code = "import tensorflow as tf\n\n" + template.format(name=entry.last)
                yield pytest.param(rule, code, entry.last, id=f"{rule.id}-{entry.last}-{position}")
            continue
        if entry.prefix:
            module, _, last = entry.old.rpartition(".")
            header = f"from {module} import {last}\nfrom typing import Optional, Union\n\n"
            reference = f"{last}.DistributedDataset"
        else:
            header, reference = HEADER, _short(entry.old)
        for position, template in SYMBOL_TEMPLATES.items():
            code = header + template.format(ref=reference)
            yield pytest.param(rule, code, reference, id=f"{rule.id}-{entry.last}-{position}")
        if entry.prefix:
            continue
        parent_reference = _short(entry.old.rpartition(".")[0])
        code = HEADER + f'found = getattr({parent_reference}, "{entry.last}", None)\n'
        yield pytest.param(rule, code, "found = ", id=f"{rule.id}-{entry.last}-getattr string")
        # The same positions with the v2 API reached through a compat.v1 alias.
        compat_reference = "tf.compat.v2" + entry.old[len("tensorflow") :]
        for position, template in SYMBOL_TEMPLATES.items():
            code = COMPAT_V1_HEADER + template.format(ref=compat_reference)
            yield pytest.param(rule, code, compat_reference, id=f"{rule.id}-{entry.last}-{position}-via compat.v1")
        module, _, last = entry.old.rpartition(".")
        for position, use in (("from-import, called", f"{last}(argument)"), ("from-import, type check", f"isinstance(value, {last})")):
            code = f"from {module} import {last}\n\nresult = {use}\n"
            # The import follows the use, or the use is fixed in place: either line counts.
            yield pytest.param(rule, code, ("from ", "result = "), id=f"{rule.id}-{entry.last}-{position}")
        compat = "import tensorflow.compat.v1 as tf\n\nvalue = tf.compat.v2" + entry.old[len("tensorflow") :] + "(argument)\n"
        yield pytest.param(rule, compat, "tf.compat.v2", id=f"{rule.id}-{entry.last}-compat.v2 through compat.v1")
        # The symbol's module imported (``from tensorflow.distribute import experimental as dx``).
        parent, _, module_name = module.rpartition(".")
        for position, use in (("module alias, called", f"dx.{last}(argument)"), ("module alias, type check", f"isinstance(value, dx.{last})")):
            for header in (f"from {parent} import {module_name} as dx\n", f"import {module} as dx\n"):
                code = f"{header}\nresult = {use}\n"
                yield pytest.param(rule, code, "result = ", id=f"{rule.id}-{entry.last}-{position}-{header.split()[0]}")
        v2 = "import tensorflow.compat.v2 as tf\n\nvalue = tf" + entry.old[len("tensorflow") :] + "(argument)\n"
        yield pytest.param(rule, v2, "value = ", id=f"{rule.id}-{entry.last}-compat.v2 import")


@pytest.mark.parametrize("rule, code, marker", list(_cases()))
def test_every_position_is_fixed_or_reported(rule, code, marker):
    options = Options(target=_target(rule))
    lines = [_line_of(code, m) for m in (marker if isinstance(marker, tuple) else (marker,))]
    assert TPUMigrator(options).needs_work(code.encode()), "the prefilter skipped it"
    assert syntax_stage.may_fire(code, select_rules((), (), options.target))[0], "the second stage skipped it"
    outcome = migrate(code, options)
    output_lines = outcome.code.splitlines()
    handled = [
        line
        for line in lines
        if any(r.line <= line <= max(r.end_line, r.line) for r in outcome.reports) or code.splitlines()[line - 1] not in output_lines
    ]
    assert handled, f"silent: nothing on line(s) {lines}\n{code}"
    ast.parse(outcome.code)
    assert migrate(outcome.code, options).code == outcome.code, "a second run changes the code again"


@pytest.mark.parametrize(
    "rule, entry",
    [pytest.param(r, e, id=f"{r.id}-{e.last}") for r, e in _entries() if r.kind != "method" and not e.prefix and not e.old.startswith("tensorflow.python")],
)
def test_compat_v1_spelling_is_left_alone(rule, entry):
    code = "import tensorflow as tf\n\nvalue = tf.compat.v1" + entry.old[len("tensorflow") :] + "(argument)\n"
    outcome = migrate(code, Options(target=_target(rule)))
    assert outcome.code == code
    assert [r.rule for r in outcome.reports if r.rule == rule.id] == []


def test_isinstance_of_the_experimental_loss_scale_optimizer_follows_the_constructor():
    """After TPU403 builds the stable class, the check must accept it (the experimental class subclasses it on 2.4.1)."""
    code = (
        "import tensorflow as tf\n\n"
        "opt = tf.keras.mixed_precision.experimental.LossScaleOptimizer(opt, 'dynamic')\n"
        "if isinstance(opt, tf.keras.mixed_precision.experimental.LossScaleOptimizer):\n"
        "    pass\n"
    )
    assert migrate(code, Options()).code == (
        "import tensorflow as tf\n\n"
        "opt = tf.keras.mixed_precision.LossScaleOptimizer(opt)\n"
        "if isinstance(opt, tf.keras.mixed_precision.LossScaleOptimizer):\n"
        "    pass\n"
    )


def test_v2_api_through_a_compat_v1_alias_keeps_its_spelling():
    code = 'import tensorflow.compat.v1 as tf\n\ntf.compat.v2.keras.mixed_precision.experimental.set_policy("mixed_bfloat16")\n'
    assert migrate(code, Options()).code == (
        'import tensorflow.compat.v1 as tf\n\ntf.compat.v2.keras.mixed_precision.set_global_policy("mixed_bfloat16")\n'
    )


def test_the_registry_refuses_a_second_rule_with_an_existing_id():
    from migrate_tpu.codemod.framework.rule import Rule, register

    class Duplicate(Rule):
        id = all_rules()[0].id

    with pytest.raises(ValueError):
        register(Duplicate)
