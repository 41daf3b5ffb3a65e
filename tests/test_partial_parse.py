"""LibCST parses only the top-level statements the rules may need (``codemod/partial_parse.py``).

Each test states which statements are left out of the parse, and that the migration of
the text without them (its findings, their places, the code, the edits) is the
migration of the whole module, on real LibCST.
"""

from dataclasses import asdict, replace

import pytest

from migrate_tpu.codemod.migration import api

from migrate_tpu.codemod.stages import partial_parse, syntax_stage
from migrate_tpu.codemod.rules.catalogue import all_rules, select_rules
from migrate_tpu.codemod.foundation.options import Options

RULES = select_rules()

TF_PART = """\
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
strategy = tf.distribute.experimental.TPUStrategy(resolver)


def step_fn(x):
    return x * 2


for batch in range(3):
    strategy.experimental_run_v2(step_fn, args=(batch,))
"""

HELPERS = """\
def summarise(values, scale=5):
  total = 0.0
  for index, value in enumerate(values):
    total += value * scale
  return {"total": total, "count": len(values)}


class Settings(object):
  \"\"\"Plain settings.\"\"\"

  def __init__(self, rate=0.1):
    self.rate = rate
"""


RELEASED = (
    "import tensorflow as tf\nfrom tensorflow.distribute import experimental as dist_exp\n\n"
    "s = dist_exp.MultiWorkerMirroredStrategy()\n\n\ndef helper():\n    return dist_exp.other\n"
)


def _partial(source):
    return partial_parse.leave_out(source, syntax_stage.parse(source), RULES)


def _hidden_names(source):
    """The names of the top-level statements left out of the parse, in order."""
    tree = syntax_stage.parse(source)
    partial = partial_parse.leave_out(source, tree, RULES)
    if partial is None:
        return []
    kept = {id(node) for node in partial.tree.body}
    return [node.name for node in tree.body if id(node) not in kept]


def _outcome(source, options, monkeypatch=None, whole=False):
    if whole:
        monkeypatch.setattr(partial_parse, "leave_out", lambda *args: None)
    try:
        outcome = api.migrate(source, options)
    finally:
        if whole:
            monkeypatch.undo()
    return outcome.code, [asdict(report) for report in outcome.reports]


def test_unrelated_helpers_are_left_out_and_put_back():
    source = HELPERS + "\n\n" + TF_PART
    partial = _partial(source)
    assert _hidden_names(source) == ["summarise", "Settings"]
    text_lines, source_lines = partial.text.split("\n"), source.split("\n")
    assert len(text_lines) == len(source_lines)  # every line keeps its number
    hidden = set(range(0, 12))  # the helpers' lines (0-based)
    assert [t for i, t in enumerate(text_lines) if i not in hidden] == [s for i, s in enumerate(source_lines) if i not in hidden]
    assert "summarise" not in partial.text and "def summarise(" in partial.hidden_text
    assert partial.restore(partial.text) == source
    # The placeholder of the first indented block keeps its indent: LibCST's default indent.
    assert "\n  \"\"\"" + partial_parse.MARKER in partial.text


@pytest.mark.parametrize(
    "helper, why",
    [
        ("def helper():\n    return strategy.experimental_run_v2\n", "holds evidence"),
        ("def helper(x):\n    return x\n\n\nstrategy.run(helper)\n", "named by parsed code"),
        ("def helper():\n    return strategy\n", "names a module-level binding"),
        ("def helper():\n    return step_fn(1)\n", "names a def of the parsed part"),
        ("def helper(thing):\n    def step_fn():\n        pass\n    return thing\n", "defines a name the parsed part defines"),
        ("def tf():\n    return 1\n", "a name a fix may import"),
        ("def helper():\n    global counter\n    counter = 1\n", "global"),
        ("def helper():\n    return 1 + \\\n        2\n", "backslash continuation"),
        ("from tensorflow.keras.mixed_precision import experimental as prec\n\n\ndef helper():\n    return prec.Whatever\n", "an import a rule rewrites"),
    ],
)
def test_what_stays_parsed(helper, why):
    source = TF_PART + "\n\n" + helper
    assert _hidden_names(source) == [], why


@pytest.mark.parametrize(
    "helper",
    [
        "import numpy as np\n\n\ndef helper(x):\n    return np.asarray(x)\n",  # an import no rule rewrites
        "def helper(x):\n    return tf.constant(x)\n",
        "class Model(object):\n    def describe(self):\n        return 'plain'\n",
    ],
)
def test_code_that_names_only_what_no_rule_rewrites_is_left_out(helper):
    source = TF_PART + "\n\n" + helper
    assert _hidden_names(source) in (["helper"], ["Model"])


def test_evidence_that_counts_only_as_code_does_not_count_inside_a_string():
    plain = "class Settings(object):\n    def describe(self):\n        return 'lr=%s' % self.rate\n"
    assert _hidden_names(TF_PART + "\n\n" + plain) == ["Settings"]
    # A string's words are no names (``batch`` is bound by the parsed loop), an f-string's fields are code.
    worded = "def describe(rate):\n    return 'one batch at lr=%s' % rate\n"
    assert _hidden_names(TF_PART + "\n\n" + worded) == ["describe"]
    field = "def describe(opt):\n    return f'{opt.compile(x)}'\n"
    assert _hidden_names(TF_PART + "\n\n" + field) == []
    named = "def describe(x):\n    return x + batch\n"
    assert _hidden_names(TF_PART + "\n\n" + named) == []


def test_a_file_with_an_assignment_expression_is_parsed_whole():
    assert _partial(HELPERS + "\n\n" + TF_PART + "\nif (n := 3):\n    pass\n") is None


@pytest.mark.parametrize("mode", ["check", "fix", "diff"])
@pytest.mark.parametrize(
    "source",
    [
        HELPERS + "\n\n" + TF_PART,
        TF_PART + "\n\n" + HELPERS,
        # A fix stops using ``dist_exp`` (TPU106); a hidden helper still names it: the import stays.
        RELEASED,
        # The hoisted tf.function takes a name no hidden code uses either (``step_fn_2``).
        "import tensorflow as tf\n\n\ndef step_fn():\n    return 1\n\n\n"
        "for i in range(3):\n    strategy = tf.distribute.TPUStrategy(r)\n    strategy.run(lambda x: x, args=(i,))\n",
        # Columns in bytes (``ast``) and in characters (the text) part on non-ASCII lines.
        "# Größe: ünïcode\n" + HELPERS.replace("Plain settings.", "Einstellungen, größer: lr=%s")
        + "\n\nname = 'café'; " + TF_PART.replace("import tensorflow as tf\n", "import tensorflow as tf  # é\n"),
    ],
    ids=["helpers-first", "helpers-last", "released-import", "fresh-name", "non-ascii"],
)
def test_partial_and_whole_migrations_agree(source, mode, monkeypatch):
    partial = _partial(source)
    assert partial is not None
    options = Options(mode=mode, want_edits=True, unsafe_fixes=True)
    assert _outcome(source, options) == _outcome(source, options, monkeypatch, whole=True)
    # The partial text itself migrates and its placeholders come back (no quiet fallback).
    outcome = api._migrate_parsed(partial.text, partial.tree, options, RULES, hidden_text=partial.hidden_text)
    assert partial.restore(outcome.code) == api.migrate(source, options).code


def test_a_released_import_a_hidden_helper_names_stays():
    assert _hidden_names(RELEASED) == ["helper"]
    code = api.migrate(RELEASED, Options(mode="fix")).code
    assert "from tensorflow.distribute import experimental as dist_exp\n" in code
    assert "s = tf.distribute.MultiWorkerMirroredStrategy()" in code
    # Without the helper, the import goes.
    alone = RELEASED[: RELEASED.index("\n\n\ndef helper")] + "\n"
    assert "dist_exp" not in api.migrate(alone, Options(mode="fix")).code


def test_the_hoisted_name_avoids_a_hidden_def():
    source = (
        "import tensorflow as tf\n\n\ndef step_fn():\n    return 1\n\n\n"
        "for i in range(3):\n    strategy = tf.distribute.TPUStrategy(r)\n    strategy.run(lambda x: x, args=(i,))\n"
    )
    assert _hidden_names(source) == ["step_fn"]
    code = api.migrate(source, Options(mode="fix", unsafe_fixes=True)).code
    assert "step_fn_2 = tf.function(" in code, code


# Every rule's examples, each with unrelated helpers above and below it: the migration
# with the helpers left out of the parse is the migration of the whole module.
EXAMPLES = [
    pytest.param(rule, index, example, id=f"{rule.id}-{index}")
    for rule in all_rules()
    for index, example in enumerate(rule.examples)
]


@pytest.mark.parametrize("rule, index, example", EXAMPLES)
def test_every_rule_example_migrates_the_same_with_helpers_left_out(rule, index, example, monkeypatch):
    body = example.before.lstrip("\n")
    source = "def _unrelated_top(values):\n  return sorted(values)\n\n\n" + body + "\n\nclass _UnrelatedBottom:\n    size = 3\n"
    options = Options(select=(rule.id,), target=example.target, unsafe_fixes=example.unsafe_fixes, want_edits=True)
    chosen = select_rules((rule.id,), (), example.target)
    if partial_parse.leave_out(source, syntax_stage.parse(source), chosen) is None:
        pytest.skip("the example leaves nothing out (it names the helpers, or declares `:=`)")
    for mode in ("check", "fix", "diff"):
        moded = replace(options, mode=mode)
        assert _outcome(source, moded) == _outcome(source, moded, monkeypatch, whole=True), mode
