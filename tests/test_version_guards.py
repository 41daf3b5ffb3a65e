"""Version guards: decided ones collapse (TPU601), the legacy branch of the others is left alone.

Each case states the findings it expects (rule ids, counts, whether applied)
and, where code changes, the exact output; every output parses and a second
``fix`` changes nothing.
"""

import ast
from collections import Counter

import pytest

from migrate_tpu.codemod.migration.api import Options, migrate
from migrate_tpu.codemod.rules.version_guards.values import evaluate

HEADER = "import tensorflow as tf\n\nstrategy = tf.distribute.TPUStrategy(resolver)\n"


def _fix(source, **options):
    options.setdefault("mode", "fix")
    outcome = migrate(source, Options(**options))
    ast.parse(outcome.code)
    again = migrate(outcome.code, Options(**options))
    assert again.code == outcome.code, "a second fix changed the code"
    return outcome


def _ids(reports, applied):
    return Counter(r.rule for r in reports if r.applied is applied)


COLLAPSING = [
    ('LooseVersion(tf.__version__) < LooseVersion("2.2")', "from distutils.version import LooseVersion\n"),
    ('version.parse(tf.__version__) < version.parse("2.2.0")', "from packaging import version\n"),
    ('tf.version.VERSION < "2.2"', ""),
    ('tf.__version__.startswith("2.1")', ""),
    ('int(tf.__version__.split(".")[1]) < 2', ""),
    ('tuple(map(int, tf.__version__.split(".")[:2])) < (2, 2)', ""),
    ("TF_2_1", 'TF_2_1 = tf.__version__[:3] == "2.1"\n'),
]


@pytest.mark.parametrize("test, prelude", COLLAPSING, ids=[t for t, _ in COLLAPSING])
def test_a_decided_guard_collapses_to_the_branch_the_target_takes(test, prelude):
    source = prelude + HEADER + (
        f"if {test}:\n"
        "    out = strategy.experimental_run_v2(step_fn, args=(x,))\n"
        "else:\n"
        "    out = strategy.run(step_fn, args=(x,))\n"
    )
    outcome = _fix(source)
    kept_prelude = prelude if prelude.startswith("TF_2_1") else ""
    assert outcome.code == kept_prelude + HEADER + "out = strategy.run(step_fn, args=(x,))\n"
    # The legacy branch's TPU101 and TPU301 go with the branch: only the collapse is reported.
    assert _ids(outcome.reports, True) == Counter({"TPU601": 1})
    assert _ids(outcome.reports, False) == Counter({"TPU301": 1})  # the kept run call, body not in view


def test_the_kept_branch_is_still_migrated():
    source = HEADER + (
        "def train(x):\n"
        '    if tf.__version__ >= "2.2":\n'
        "        out = strategy.experimental_run_v2(tf.function(step_fn), args=(x,))\n"
        "    return out\n"
    )
    outcome = _fix(source)
    assert outcome.code == HEADER + (
        "def train(x):\n"
        "    out = strategy.run(tf.function(step_fn), args=(x,))\n"
        "    return out\n"
    )
    assert _ids(outcome.reports, True) == Counter({"TPU601": 1, "TPU101": 1})


def test_false_without_else_leaves_pass_when_the_block_would_be_empty():
    source = HEADER + "def setup():\n" '    if tf.__version__ < "2.2":\n' "        strategy.experimental_run_v2(f)\n"
    assert _fix(source).code == HEADER + "def setup():\n    pass\n"
    source = HEADER + '# old versions\nif tf.__version__ < "2.2":\n    strategy.experimental_run_v2(f)\nx = 1\n'
    assert _fix(source).code == HEADER + "x = 1\n"


def test_an_elif_becomes_the_if():
    source = HEADER + (
        'if tf.__version__ < "2.2":\n'
        "    a = strategy.experimental_run_v2(f)\n"
        "elif use_run:\n"
        "    a = strategy.run(tf.function(f))\n"
        "else:\n"
        "    a = None\n"
    )
    outcome = _fix(source)
    assert outcome.code == HEADER + "if use_run:\n    a = strategy.run(tf.function(f))\nelse:\n    a = None\n"


def test_a_conditional_expression_collapses():
    source = HEADER + 'run = (strategy.experimental_run_v2 if tf.__version__ < "2.2" else strategy.run)\n'
    assert _fix(source).code == HEADER + "run = (strategy.run)\n"


def test_a_one_line_block_collapses():
    source = HEADER + 'if tf.__version__ >= "2.2": a = 1; b = 2\nelse: a = 0\n'
    assert _fix(source).code == HEADER + "a = 1; b = 2\n"


@pytest.mark.parametrize(
    "test, legacy_is_else",
    [
        ('hasattr(strategy, "run")', True),
        ('not hasattr(strategy, "run")', False),
        ('hasattr(strategy, "experimental_run_v2")', False),
        ('getattr(strategy, "run", None) is not None', True),
        ('getattr(strategy, "run", None) is None', False),
        # More spellings: truth of getattr, callable(getattr), dir(), and a feature test inside and/or.
        ('getattr(strategy, "run", None)', True),
        ('callable(getattr(strategy, "run", None))', True),
        ('"run" in dir(strategy)', True),
        ('"run" not in dir(strategy)', False),
        ('"experimental_run_v2" in dir(strategy)', False),
        ('use_tpu and hasattr(strategy, "run")', True),
        ('not use_tpu or not hasattr(strategy, "run")', False),
    ],
)
def test_a_feature_test_is_never_collapsed_and_its_legacy_branch_gets_notes(test, legacy_is_else):
    old, new = "strategy.experimental_run_v2(f)", "strategy.run(tf.function(f))"
    first, second = (new, old) if legacy_is_else else (old, new)
    source = HEADER + f"if {test}:\n    out = {first}\nelse:\n    out = {second}\n"
    outcome = _fix(source)
    assert outcome.code == source
    notes = [r for r in outcome.reports if not r.applied]
    legacy_line = 7 if legacy_is_else else 5
    assert Counter(r.rule for r in notes if r.line == legacy_line) == Counter({"TPU101": 1, "TPU301": 1})
    for note in notes:
        if note.line == legacy_line:
            assert note.safety == "manual"
            assert f"under the guard `if {test}`" in note.message
    assert not any(r.applied for r in outcome.reports if r.rule == "TPU101")


def test_a_try_except_attribute_error_fallback_is_left_alone():
    source = HEADER + (
        "try:\n"
        "    ds = strategy.distribute_datasets_from_function(fn)\n"
        "except AttributeError:\n"
        "    ds = strategy.experimental_distribute_datasets_from_function(fn)\n"
    )
    outcome = _fix(source)
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU102", 7, "manual")]
    assert "try/except AttributeError" in outcome.reports[0].message


def test_a_guard_the_target_does_not_decide_keeps_its_legacy_branch_with_a_note():
    # String comparison: "2.10.0" < "2.2", so releases after 2.5 disagree: no collapse.
    source = HEADER + 'if tf.__version__ < "2.2":\n    out = strategy.experimental_run_v2(f)\n'
    outcome = _fix(source, target="latest")
    assert outcome.code == source
    assert _ids(outcome.reports, False) == Counter({"TPU601": 1, "TPU101": 1, "TPU301": 1})
    assert all("under the guard" in r.message for r in outcome.reports if r.rule != "TPU601")
    # For 2.4 the same test is decided.
    assert _fix(source).code == HEADER


def test_a_guard_for_newer_releases_is_not_a_migration_guard():
    source = HEADER + 'if tf.__version__ >= "2.5":\n    p = tf.keras.mixed_precision.experimental.Policy("mixed_bfloat16")\n'
    outcome = _fix(source)
    assert "TPU601" not in _ids(outcome.reports, True)
    assert _ids(outcome.reports, True) == Counter({"TPU402": 1})


def test_a_test_that_reads_more_than_the_version_keeps_the_branch_only_older_releases_take():
    # On the target the test is False whatever `flag` is: the body serves TF < 2.2 only,
    # and `run` would break it there. It is not collapsed: the test reads more than the version.
    source = HEADER + 'if tf.__version__ < "2.2" and flag:\n    out = strategy.experimental_run_v2(tf.function(f))\n'
    outcome = _fix(source)
    assert outcome.code == source
    assert [(r.rule, r.safety) for r in outcome.reports] == [("TPU101", "manual")]
    assert "under the guard `if tf.__version__ < \"2.2\" and flag`" in outcome.reports[0].message
    # The branch the target takes is migrated as usual.
    source = HEADER + 'if tf.__version__ >= "2.2" or flag:\n    out = strategy.experimental_run_v2(tf.function(f))\n'
    outcome = _fix(source)
    assert _ids(outcome.reports, True) == Counter({"TPU101": 1})


GUARDS_NOT_EVALUATED = [
    # The version read through a comprehension and through unpacking: evaluated, decided.
    ('major, minor = [int(p) for p in tf.__version__.split(".")[:2]]\n', "(major, minor) < (2, 4)", "collapse"),
    ('MAJOR, MINOR, _ = tf.__version__.split(".", 2)\n', "int(MINOR) < 2", "collapse"),
    ('TF_VERSION = tuple(int(v) for v in tf.__version__.split(".")[:2])\n', "TF_VERSION < (2, 2)", "collapse"),
    # Read through code not modelled here: which branch is legacy is unknown, neither is rewritten.
    ("import re\n\ndef tf_minor():\n    return int(re.findall(r'\\d+', tf.__version__)[1])\n\n", "tf_minor() < 2", "both"),
    ('V = re.match(r"2\\.(\\d+)", tf.__version__)\n', "int(V.group(1)) < 2", "both"),
]


@pytest.mark.parametrize("prelude, test, expected", GUARDS_NOT_EVALUATED, ids=[t for _, t, _ in GUARDS_NOT_EVALUATED])
def test_a_guard_on_a_derived_version_is_never_rewritten_into_a_copy_of_its_other_branch(prelude, test, expected):
    source = HEADER + prelude + (
        f"if {test}:\n"
        "    out = strategy.experimental_run_v2(step_fn, args=(x,))\n"
        "else:\n"
        "    out = strategy.experimental_run_v2(step_fn, args=(x,))\n"
    )
    outcome = _fix(source)
    if expected == "collapse":
        assert outcome.code == HEADER + prelude + "out = strategy.run(step_fn, args=(x,))\n"
        assert _ids(outcome.reports, True) == Counter({"TPU601": 1, "TPU101": 1})  # the kept branch is migrated
    else:
        assert outcome.code == source
        assert all(r.safety == "manual" and "under the guard" in r.message for r in outcome.reports)
        assert _ids(outcome.reports, False)["TPU101"] == 2


def test_without_the_collapse_rule_the_legacy_branch_is_noted_not_rewritten():
    source = HEADER + 'if tf.__version__ < "2.2":\n    out = strategy.experimental_run_v2(tf.function(f))\n'
    outcome = _fix(source, ignore=("TPU601",))
    assert outcome.code == source
    assert [(r.rule, r.safety) for r in outcome.reports] == [("TPU101", "manual")]


def test_check_reports_the_collapse_and_not_the_code_it_removes():
    source = HEADER + 'if tf.__version__ < "2.2":\n    out = strategy.experimental_run_v2(tf.function(f))\n'
    outcome = migrate(source, Options(mode="check"))
    assert [(r.rule, r.safety) for r in outcome.reports] == [("TPU601", "safe")]


@pytest.mark.parametrize(
    "test, version, expected",
    [
        ('LooseVersion(tf.__version__) >= LooseVersion("2.4")', "2.4.1", True),
        ('LooseVersion(tf.__version__) >= "2.4.2"', "2.4.1", False),
        ('version.parse(tf.__version__) == version.parse("2.4")', "2.4.0", True),
        ('StrictVersion(tf.__version__) < StrictVersion("2.10")', "2.9.0", True),
        ('tf.__version__ < "2.10"', "2.9.0", False),  # a string comparison, as Python does it
        ('version.parse(tf.__version__).minor >= 4', "2.4.1", True),
    ],
)
def test_versions_compare_as_their_library_does(test, version, expected):
    import libcst as cst

    from migrate_tpu.codemod.analysis.walk import Analysis

    source = (
        "import tensorflow as tf\nfrom distutils.version import LooseVersion, StrictVersion\n"
        f"from packaging import version\nx = {test}\n"
    )
    module = cst.parse_module(source)
    analysis = Analysis(module, [])
    analysis.walk()
    test_node = module.body[-1].body[0].value
    assert evaluate(test_node, analysis.module_scope, version)[0] is expected


def test_an_early_exit_makes_the_following_statements_the_else():
    source = HEADER + (
        "def make(fn):\n"
        '    if hasattr(strategy, "distribute_datasets_from_function"):\n'
        "        return strategy.distribute_datasets_from_function(fn)\n"
        "    return strategy.experimental_distribute_datasets_from_function(fn)\n"
    )
    outcome = _fix(source)
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU102", 7, "manual")]


def test_an_early_exit_version_guard_collapses_only_when_its_body_is_legacy():
    legacy_body = HEADER + (
        "def step(x):\n"
        '    if tf.__version__ < "2.2":\n'
        "        return strategy.experimental_run_v2(f, args=(x,))\n"
        "    return strategy.run(f, args=(x,))\n"
    )
    assert _fix(legacy_body, select=("TPU101", "TPU601")).code == HEADER + "def step(x):\n    return strategy.run(f, args=(x,))\n"
    # The body always returns: the fallback after it never runs on the target and goes with the test.
    legacy_after = HEADER + (
        "def step(x):\n"
        '    if tf.__version__ >= "2.2":\n'
        "        return strategy.run(f, args=(x,))\n"
        "    print('TF 2.1')\n"
        "    return strategy.experimental_run_v2(f, args=(x,))\n"
    )
    outcome = _fix(legacy_after, select=("TPU101", "TPU601"))
    assert outcome.code == HEADER + "def step(x):\n    return strategy.run(f, args=(x,))\n"
    assert [(r.rule, r.applied) for r in outcome.reports] == [("TPU601", True)]
    # Without the collapse, the fallback is the legacy branch: noted, not rewritten.
    outcome = _fix(legacy_after, select=("TPU101",))
    assert outcome.code == legacy_after
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU101", 8, "manual")]


@pytest.mark.parametrize(
    "body, after",
    [
        # In a loop, `continue` leaves the rest of the iteration.
        (
            "for x in data:\n    if tf.__version__ >= '2.2':\n        out = strategy.run(f, args=(x,))\n        continue\n"
            "    out = strategy.experimental_run_v2(f, args=(x,))\nprint(out)\n",
            "for x in data:\n    out = strategy.run(f, args=(x,))\n    continue\nprint(out)\n",
        ),
        # An `elif` with no `else`: what follows the chain still runs when an earlier test holds.
        (
            "def step(x):\n    if use_cpu:\n        return f(x)\n    elif tf.__version__ >= '2.2':\n        return strategy.run(f, args=(x,))\n"
            "    return strategy.experimental_run_v2(f, args=(x,))\n",
            "def step(x):\n    if use_cpu:\n        return f(x)\n    else:\n        return strategy.run(f, args=(x,))\n"
            "    return strategy.run(f, args=(x,))\n",
        ),
    ],
    ids=["continue", "elif"],
)
def test_an_early_exit_collapse_removes_only_what_the_target_never_reaches(body, after):
    outcome = _fix(HEADER + body, select=("TPU101", "TPU601"))
    assert outcome.code == HEADER + after


@pytest.mark.parametrize(
    "after_return",
    [
        "    yield strategy.experimental_run_v2(f)\n",  # removing it would make a generator a function
        "    legacy = strategy.experimental_run_v2(f)\n    return legacy\n",  # its only binding: the scope of `legacy` would change
        "    global RUN\n    RUN = strategy.experimental_run_v2\n",
    ],
    ids=["yield", "only-binding", "global"],
)
def test_an_early_exit_is_not_collapsed_where_removing_dead_code_changes_the_function(after_return):
    source = HEADER + "def step():\n    if tf.__version__ >= '2.2':\n        return strategy.run(f)\n" + after_return
    outcome = _fix(source, select=("TPU101", "TPU601"))
    assert outcome.code == source
    assert {(r.rule, r.safety) for r in outcome.reports} == {("TPU101", "manual")}


def test_an_import_fallback_and_a_shim_are_left_alone_with_notes():
    source = (
        "import tensorflow as tf\n"
        "try:\n"
        "    from tensorflow.distribute import TPUStrategy\n"
        "except ImportError:\n"
        "    from tensorflow.distribute.experimental import TPUStrategy\n"
        "\n"
        'if not hasattr(tf.distribute.Strategy, "run"):\n'
        "    tf.distribute.Strategy.run = tf.distribute.Strategy.experimental_run_v2\n"
    )
    outcome = _fix(source)
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU103", 5, "manual"), ("TPU101", 8, "manual")]
    assert "try/except ImportError" in outcome.reports[0].message
    assert 'if not hasattr(tf.distribute.Strategy, "run")' in outcome.reports[1].message


def test_version_comparisons_agree_with_the_real_libraries():
    """The evaluator's LooseVersion/StrictVersion/packaging semantics, checked against the libraries themselves."""
    import itertools
    import warnings

    import libcst as cst

    from migrate_tpu.codemod.analysis.walk import Analysis

    packaging_version = pytest.importorskip("packaging.version")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        distutils_version = pytest.importorskip("distutils.version")
    versions = ["2.1.0", "2.2", "2.2.0", "2.4", "2.4.0", "2.4.1", "2.10.0", "2.21.0", "3.0"]
    parsers = {
        "LooseVersion": distutils_version.LooseVersion,
        "StrictVersion": distutils_version.StrictVersion,
        "version.parse": packaging_version.parse,
    }
    operators = ["<", "<=", ">", ">=", "==", "!="]
    module = cst.parse_module(
        "import tensorflow as tf\nfrom distutils.version import LooseVersion, StrictVersion\nfrom packaging import version\n"
    )
    analysis = Analysis(module, [])
    analysis.walk()
    checked = 0
    for (name, parse), tf_version, literal, op in itertools.product(parsers.items(), versions, versions, operators):
        test = cst.parse_expression(f'{name}(tf.__version__) {op} {name}("{literal}")')
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            expected = eval(f"a {op} b", {"a": parse(tf_version), "b": parse(literal)})
        assert evaluate(test, analysis.module_scope, tf_version)[0] is expected, (name, tf_version, op, literal)
        checked += 1
    assert checked == 3 * 9 * 9 * 6


@pytest.mark.parametrize(
    "chain, expected",
    [
        ('if use_tpu:\n    a = 1\nelif tf.__version__ >= "2.2":\n    a = 2\nelse:\n    a = 3\n', "if use_tpu:\n    a = 1\nelse:\n    a = 2\n"),
        ('if use_tpu:\n    a = 1\n# old\nelif tf.__version__ < "2.2":\n    a = 2\nelse:\n    a = 3\n', "if use_tpu:\n    a = 1\n# old\nelse:\n    a = 3\n"),
        ('if use_tpu:\n    a = 1\nelif tf.__version__ < "2.2":\n    a = 2\nelif other:\n    a = 3\n', "if use_tpu:\n    a = 1\nelif other:\n    a = 3\n"),
        ('if use_tpu:\n    a = 1\nelif tf.__version__ < "2.2":\n    a = 2\n', "if use_tpu:\n    a = 1\n"),
    ],
)
def test_a_decided_elif_collapses_within_its_chain(chain, expected):
    outcome = _fix(HEADER + chain)
    assert outcome.code == HEADER + expected
    assert _ids(outcome.reports, True) == Counter({"TPU601": 1})


# -- the spellings of issue 19: every one is a guard, and no rule rewrites its legacy branch ------------

ISSUE_19 = HEADER + (
    "@tf.function\n"
    "def step(x):\n"
    "    if tf.__version__.startswith('2.0'):\n"
    "        return strategy.experimental_run_v2(f, args=(x,))\n"
    "    return strategy.run(f, args=(x,))\n"
)


@pytest.mark.parametrize("target", ["2.4", "latest"])
def test_a_branch_only_releases_before_2_1_take_is_legacy_and_collapses(target):
    # False on TF 2.1 and on the target alike, True on 2.0: before, this was no guard at all and
    # TPU101 rewrote the 2.0 branch into a copy of the code after it.
    outcome = _fix(ISSUE_19, target=target)
    assert outcome.code == HEADER + "@tf.function\ndef step(x):\n    return strategy.run(f, args=(x,))\n"
    assert [(r.rule, r.safety, r.applied) for r in outcome.reports] == [("TPU601", "safe", True)]


def test_without_the_collapse_the_2_0_branch_is_noted_not_rewritten():
    outcome = _fix(ISSUE_19, ignore=("TPU601",))
    assert outcome.code == ISSUE_19
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU101", 7, "manual")]
    assert "under the guard `if tf.__version__.startswith('2.0')`" in outcome.reports[0].message


OLD_RUN, NEW_RUN = "strategy.experimental_run_v2(f, args=(x,))", "strategy.run(f, args=(x,))"
SPELLINGS = [
    # (prelude, test, whether the test is True on the legacy releases)
    ("", "tf.__version__.startswith('2.0')", True),
    ("", "tf.__version__.startswith('1.')", True),
    ("", "tf.__version__[:3] in ('2.0', '2.1')", True),
    ("", "tf.version.VERSION.startswith('2.1')", True),
    ("", "tuple(map(int, tf.__version__.split('.')[:2])) >= (2, 2)", False),
    ("", "int(tf.__version__.split('.')[1]) >= 2", False),
    ("", "tf.__version__.split('.')[:2] < ['2', '2']", True),
    ("major, minor = tf.version.VERSION.split('.')[:2]\n", "int(minor) < 2", True),
    ("", "tf.__version__ >= '2.2'", False),
    ("", "tf.version.VERSION < '2.2'", True),
    ("from tensorflow import version\n", "version.VERSION < '2.2'", True),
    ("from tensorflow import __version__ as tf_version\n", "tf_version.startswith('2.1')", True),
    ("from distutils.version import LooseVersion\n", "LooseVersion(tf.__version__) >= LooseVersion('2.2')", False),
    ("import distutils.version\n", "distutils.version.LooseVersion(tf.__version__) < '2.2'", True),
    ("from distutils.version import StrictVersion as SV\n", "SV(tf.__version__) < SV('2.2.0')", True),
    ("from packaging.version import Version\n", "Version(tf.__version__) >= Version('2.2')", False),
    ("import packaging.version\n", "packaging.version.parse(tf.__version__).release[:2] < (2, 2)", True),
    ("from pkg_resources import parse_version\n", "parse_version(tf.__version__) < parse_version('2.2')", True),
]


@pytest.mark.parametrize("prelude, test, legacy_when_true", SPELLINGS, ids=[t for _, t, _ in SPELLINGS])
@pytest.mark.parametrize("form", ["if-else", "early-return", "conditional-expression"])
def test_every_spelling_of_a_version_guard_collapses_to_the_target_branch(prelude, test, legacy_when_true, form):
    first, second = (OLD_RUN, NEW_RUN) if legacy_when_true else (NEW_RUN, OLD_RUN)
    body = {
        "if-else": f"    if {test}:\n        out = {first}\n    else:\n        out = {second}\n    return out\n",
        "early-return": f"    if {test}:\n        return {first}\n    return {second}\n",
        "conditional-expression": f"    return ({first} if {test} else {second})\n",
    }[form]
    source = HEADER + prelude + "@tf.function\ndef step(x):\n" + body
    kept = {
        "if-else": f"    out = {NEW_RUN}\n    return out\n",
        "early-return": f"    return {NEW_RUN}\n",
        "conditional-expression": f"    return ({NEW_RUN})\n",
    }[form]
    outcome = _fix(source)
    assert outcome.code.endswith("@tf.function\ndef step(x):\n" + kept)
    assert [(r.rule, r.safety, r.applied) for r in outcome.reports] == [("TPU601", "safe", True)]
    # Without the collapse, the legacy branch is noted and left as it is.
    outcome = _fix(source, ignore=("TPU601",))
    assert outcome.code == source
    assert [(r.rule, r.safety) for r in outcome.reports] == [("TPU101", "manual")]
    assert "under the guard" in outcome.reports[0].message


@pytest.mark.parametrize(
    "test, legacy_is_else",
    [
        ("hasattr(tf.distribute, 'TPUStrategy')", True),
        ("not hasattr(tf.distribute, 'TPUStrategy')", False),
        # The test itself names the old symbol: reported on its own line as well.
        ("hasattr(tf.distribute.experimental, 'TPUStrategy')", False),
    ],
)
def test_a_feature_test_of_a_moved_class_keeps_both_branches(test, legacy_is_else):
    old, new = "tf.distribute.experimental.TPUStrategy(r)", "tf.distribute.TPUStrategy(r)"
    first, second = (new, old) if legacy_is_else else (old, new)
    source = HEADER + f"if {test}:\n    s = {first}\nelse:\n    s = {second}\n"
    outcome = _fix(source)
    assert outcome.code == source
    legacy_line = 7 if legacy_is_else else 5
    on_the_test = [("TPU103", 4, "manual")] if "experimental" in test else []
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == on_the_test + [("TPU103", legacy_line, "manual")]
    assert f"under the guard `if {test}`" in outcome.reports[-1].message


def test_a_text_comparison_the_newest_releases_answer_wrongly_is_reported_not_collapsed():
    # As Python compares them, "2.10.0" >= "2.2" is False: on the latest releases the test does
    # not decide, and its legacy branch is what TF 2.10 and later run. Reported, both kept.
    source = HEADER + f"if tf.__version__ >= '2.2':\n    out = {NEW_RUN}\nelse:\n    out = {OLD_RUN}\n"
    outcome = _fix(source, target="latest", select=("TPU101", "TPU601"))
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU601", 4, "manual"), ("TPU101", 7, "manual")]
    assert "compares version strings as text: on TensorFlow 2.10.0 it is False, though by release number it is True" in outcome.reports[0].message
    # On 2.4 every release answers as its number does: decided, collapsed (as Python evaluates it).
    assert _fix(source, select=("TPU101", "TPU601")).code == HEADER + f"out = {NEW_RUN}\n"


def test_a_text_comparison_decided_against_the_release_numbers_is_not_collapsed():
    # "2.4.1" < "2.10" is False as text, True by number: collapsing would make the slip permanent.
    source = HEADER + f"if tf.__version__ < '2.10':\n    out = {OLD_RUN}\nelse:\n    out = {NEW_RUN}\n"
    outcome = _fix(source, select=("TPU101", "TPU601"))
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU601", 4, "manual"), ("TPU101", 5, "manual")]
    assert "on TensorFlow 2.4.0 it is False, though by release number it is True" in outcome.reports[0].message


def test_a_test_every_release_answers_alike_is_no_guard():
    source = HEADER + f"if tf.__version__ >= '1.0':\n    out = {OLD_RUN}\n"
    outcome = _fix(source, select=("TPU101", "TPU601"))
    assert outcome.code == HEADER + f"if tf.__version__ >= '1.0':\n    out = {NEW_RUN}\n"
    assert [(r.rule, r.applied) for r in outcome.reports] == [("TPU101", True)]


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_a_guard_read_from_another_module_of_the_tree_is_seen(tmp_path):
    """`from pkg.compat import IS_TF_21`: the other module's version test is evaluated there; a
    helper function reading the version is a guard too (undecided: both branches kept)."""
    import json
    import subprocess
    import sys

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "compat.py").write_text(
        "import tensorflow as tf\nfrom distutils.version import LooseVersion\n\n"
        'IS_TF_21 = LooseVersion(tf.__version__) < LooseVersion("2.2")\n'
        'TF_MINOR = int(tf.__version__.split(".")[1])\n\n\n'
        "def is_old():\n    return tf.__version__.startswith('2.0')\n"
    )
    train = (
        "import tensorflow as tf\nfrom pkg.compat import IS_TF_21, is_old\nfrom pkg import compat\n\n\n"
        "def step(strategy, x):\n    if IS_TF_21:\n        return strategy.experimental_run_v2(f, args=(x,))\n"
        "    return strategy.run(f, args=(x,))\n\n\n"
        "def step2(strategy, x):\n    if compat.TF_MINOR < 2:\n        out = strategy.experimental_run_v2(f, args=(x,))\n"
        "    else:\n        out = strategy.run(f, args=(x,))\n    return out\n\n\n"
        "def step3(strategy, x):\n    if is_old():\n        out = strategy.experimental_run_v2(f, args=(x,))\n"
        "    else:\n        out = strategy.run(f, args=(x,))\n    return out\n"
    )
    (package / "train.py").write_text(train)
    command = [sys.executable, "-m", "migrate_tpu"]
    done = subprocess.run(
        command + ["check", "--no-cache", "--select", "TPU101,TPU601", "--format", "json", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    found = [(f["rule"], f["line"], f["safety"]) for f in json.loads(done.stdout)["findings"]]
    assert found == [("TPU601", 7, "safe"), ("TPU601", 13, "safe"), ("TPU101", 22, "manual")]
    subprocess.run(command + ["fix", "--no-cache", "--select", "TPU101,TPU601", str(tmp_path)], capture_output=True, timeout=600, cwd=tmp_path)
    assert (package / "train.py").read_text() == train.replace(
        "    if IS_TF_21:\n        return strategy.experimental_run_v2(f, args=(x,))\n", ""
    ).replace(
        "    if compat.TF_MINOR < 2:\n        out = strategy.experimental_run_v2(f, args=(x,))\n    else:\n        out = strategy.run(f, args=(x,))\n",
        "    out = strategy.run(f, args=(x,))\n",
    )


# -- more spellings: a tuple of prefixes, fallbacks in expressions, a test of a whole namespace ---


@pytest.mark.parametrize("form", ["if-else", "early-return", "conditional-expression"])
def test_startswith_a_tuple_of_prefixes_is_decided(form):
    test = "tf.__version__.startswith(('2.0', '2.1'))"
    body = {
        "if-else": f"    if {test}:\n        out = {OLD_RUN}\n    else:\n        out = {NEW_RUN}\n    return out\n",
        "early-return": f"    if {test}:\n        return {OLD_RUN}\n    return {NEW_RUN}\n",
        "conditional-expression": f"    return ({OLD_RUN} if {test} else {NEW_RUN})\n",
    }[form]
    source = HEADER + "@tf.function\ndef step(x):\n" + body
    outcome = _fix(source)
    assert [(r.rule, r.line, r.safety) for r in migrate(source, Options(mode="check")).reports] == [("TPU601", 6, "safe")]
    assert [(r.rule, r.applied) for r in outcome.reports] == [("TPU601", True)]
    assert NEW_RUN in outcome.code and OLD_RUN not in outcome.code and "startswith" not in outcome.code


@pytest.mark.parametrize(
    "line",
    [
        # The fallback of a getattr default: what older TensorFlow reads when the new name is missing.
        "run = getattr(strategy, 'run', strategy.experimental_run_v2)",
        "run = getattr(strategy, 'run', None) or strategy.experimental_run_v2",
        "run = getattr(strategy, 'run', False) or strategy.experimental_run_v2",
    ],
)
def test_a_getattr_fallback_keeps_its_legacy_side(line):
    legacy_column = line.index("experimental_run_v2") + 1
    source = HEADER + line + "\n"
    outcome = _fix(source)
    assert outcome.code == source  # before: rewritten into `getattr(strategy, 'run', strategy.run)`
    checked = migrate(source, Options(mode="check")).reports
    assert [(r.rule, r.line, r.column, r.safety) for r in checked] == [("TPU101", 4, legacy_column, "manual")]
    assert "left as is: this code serves older TensorFlow under the guard `getattr(strategy, 'run'" in checked[0].message


@pytest.mark.parametrize(
    "line",
    [
        "TPUStrategy = getattr(tf.distribute, 'TPUStrategy', tf.distribute.experimental.TPUStrategy)",
        "TPUStrategy = getattr(tf.distribute, 'TPUStrategy', None) or tf.distribute.experimental.TPUStrategy",
    ],
)
def test_a_getattr_fallback_to_a_moved_class_is_noted_with_its_guard(line):
    source = "import tensorflow as tf\n" + line + "\n"
    outcome = _fix(source)
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU103", 2, "manual")]
    assert "under the guard `getattr(tf.distribute, 'TPUStrategy'" in outcome.reports[0].message


def test_a_getattr_whose_fallback_is_the_new_name_is_no_guard():
    # The old name looked up, the new one the fallback: nothing here serves older TensorFlow only.
    source = HEADER + "run = getattr(strategy, 'experimental_run_v2', strategy.run)\n"
    outcome = migrate(source, Options(mode="check"))
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU101", 4, "manual")]
    assert "looked up by name" in outcome.reports[0].message and "under the guard" not in outcome.reports[0].message


@pytest.mark.parametrize(
    "test, legacy_line",
    [
        ("hasattr(tf.keras.mixed_precision, 'experimental')", 5),
        ("not hasattr(tf.keras.mixed_precision, 'experimental')", 7),
    ],
)
def test_a_feature_test_of_an_experimental_namespace_keeps_both_branches(test, legacy_line):
    # True on TF 2.4 too (the namespace went in 2.9): never collapsed, and its experimental
    # branch is not rewritten into a copy of the other.
    old, new = "tf.keras.mixed_precision.experimental.Policy('mixed_bfloat16')", "tf.keras.mixed_precision.Policy('mixed_bfloat16')"
    first, second = (old, new) if legacy_line == 5 else (new, old)
    source = HEADER + f"if {test}:\n    policy = {first}\nelse:\n    policy = {second}\n"
    outcome = _fix(source)
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU402", legacy_line, "manual")]
    assert f"under the guard `if {test}`" in outcome.reports[0].message


def test_a_namespace_with_no_moved_experimental_names_is_no_feature_test():
    # `tf.train` holds no name of the tables' new side, yet testing for it says nothing of a release.
    source = HEADER + f"if hasattr(tf, 'train'):\n    out = {OLD_RUN}\n"
    outcome = _fix(source, select=("TPU101",))
    assert outcome.code == HEADER + f"if hasattr(tf, 'train'):\n    out = {NEW_RUN}\n"


def test_pre_releases_compare_as_packaging_compares_them():
    """`version.parse(tf.__version__) < version.parse("2.2.0rc0")`: a pre-release literal is
    modelled (it sorts before its release), checked against the real library."""
    import itertools

    import libcst as cst

    from migrate_tpu.codemod.analysis.walk import Analysis

    packaging_version = pytest.importorskip("packaging.version")
    module = cst.parse_module("import tensorflow as tf\nfrom packaging import version\n")
    analysis = Analysis(module, [])
    analysis.walk()
    releases = ["2.1.0", "2.2.0", "2.4.1", "2.10.0"]
    literals = ["2.2.0rc0", "2.2.0rc1", "2.2.0a1", "2.2.0b2", "2.2.0-rc.1", "2.2rc0", "2.4.0rc0", "2.2.0", "2.2"]
    for tf_version, literal, op in itertools.product(releases, literals, ["<", ">=", "=="]):
        test = cst.parse_expression(f'version.parse(tf.__version__) {op} version.parse("{literal}")')
        expected = eval(f"a {op} b", {"a": packaging_version.parse(tf_version), "b": packaging_version.parse(literal)})
        assert evaluate(test, analysis.module_scope, tf_version)[0] is expected, (tf_version, op, literal)


def test_a_guard_against_a_release_candidate_collapses():
    source = HEADER + (
        "from packaging import version\n"
        "if version.parse(tf.__version__) < version.parse('2.2.0rc0'):\n"
        f"    out = {OLD_RUN}\nelse:\n    out = {NEW_RUN}\n"
    )
    outcome = _fix(source)
    assert outcome.code == HEADER + f"out = {NEW_RUN}\n"
    assert _ids(outcome.reports, True) == Counter({"TPU601": 1})  # (and TPU301 on the kept call, as above)


# -- versions read where a name cannot settle them: class attributes, defaults, outside names ---

CLASS_GUARD = HEADER + (
    "class Trainer:\n"
    "    TF_OLD = tf.__version__.startswith('2.0')\n"
    "\n"
    "    def step(self, x):\n"
    "        if {test}:\n"
    f"            return {OLD_RUN}\n"
    f"        return {OLD_RUN.replace('(f,', '(g,')}\n"
)


@pytest.mark.parametrize("test", ["self.TF_OLD", "Trainer.TF_OLD", "not self.TF_OLD"])
def test_a_version_read_through_a_class_attribute_is_a_guard_never_collapsed(test):
    # A subclass (or an assignment) may replace the attribute: its value on the target says
    # which branch is legacy, but the test is not collapsed. The other branch is migrated.
    source = CLASS_GUARD.format(test=test)
    legacy_line, other_line = (9, 10) if not test.startswith("not") else (10, 9)
    outcome = _fix(source, select=("TPU101", "TPU601"))
    checked = migrate(source, Options(mode="check", select=("TPU101", "TPU601")))
    assert sorted((r.rule, r.line, r.safety) for r in checked.reports) == sorted(
        [("TPU101", legacy_line, "manual"), ("TPU101", other_line, "safe")]
    )
    assert f"under the guard `if {test}`" in next(r.message for r in checked.reports if r.line == legacy_line)
    lines = outcome.code.splitlines()
    assert "experimental_run_v2" in lines[legacy_line - 1] and "strategy.run(" in lines[other_line - 1]


def test_a_class_attribute_a_method_assigns_is_not_followed():
    source = CLASS_GUARD.format(test="self.TF_OLD").replace(
        "    def step(self, x):\n", "    def reset(self):\n        self.TF_OLD = False\n\n    def step(self, x):\n"
    )
    outcome = _fix(source, select=("TPU101", "TPU601"))
    assert "if self.TF_OLD:\n            return strategy.run(f" in outcome.code  # no guard: both fixed


def test_a_parameter_defaulting_to_the_version_keeps_both_branches():
    source = HEADER + (
        "def step(x, v=tf.__version__):\n"
        "    if v.startswith('2.0'):\n"
        f"        return {OLD_RUN}\n"
        f"    return {NEW_RUN}\n"
    )
    outcome = _fix(source, select=("TPU101", "TPU601"))
    assert outcome.code == source  # before: the 2.0 branch became a copy of the other
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU101", 6, "manual")]


@pytest.mark.parametrize(
    "prelude, test",
    [
        ("import compat\n", "compat.IS_OLD_TF"),
        ("from utils.tf_compat import IS_TF2\n", "not IS_TF2"),
        ("from utils import is_tf_2_2_or_later\n", "not is_tf_2_2_or_later()"),
    ],
)
def test_a_version_flag_imported_from_outside_the_tree_keeps_both_branches(prelude, test):
    source = HEADER + prelude + f"if {test}:\n    out = {OLD_RUN}\nelse:\n    out = {NEW_RUN}\n"
    outcome = _fix(source, select=("TPU101", "TPU601"))
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU101", 6, "manual")]
    assert f"under the guard `if {test}`" in outcome.reports[0].message


def test_an_outside_flag_whose_name_says_nothing_of_a_version_is_no_guard():
    source = HEADER + "from config import USE_TF_RUN\n" + f"if USE_TF_RUN:\n    out = {OLD_RUN}\n"
    outcome = _fix(source, select=("TPU101", "TPU601"))
    assert outcome.code == source.replace(OLD_RUN, NEW_RUN)
