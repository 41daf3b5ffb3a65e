"""Moved APIs in doctests (`>>>`/`...` lines of docstrings): fixed by the same rules in
place, keeping the string's quoting and each line's indentation and prompt, or reported on
their line of the file."""

import ast
import json
import subprocess
import sys

import pytest

from migrate_tpu.codemod.migration.api import Options, migrate

MODULE = '''"""Training tools.

    >>> strategy = tf.distribute.experimental.TPUStrategy(resolver)
    >>> strategy.experimental_run_v2(fn, args=(x,))
    <tf.Tensor ...>
"""
import tensorflow as tf


def train(strategy):
    \'\'\'Runs a step.

    Example:

        >>> opt = tf.keras.optimizers.Adam(lr=0.1)
        >>> for x in dist:
        ...     out = strategy.experimental_run_v2(step, args=(x,))
        ...
        >>> print("done ... strategy.experimental_run_v2")
        done ... strategy.experimental_run_v2
    \'\'\'
    return strategy.experimental_run_v2(step)
'''

FIXED = MODULE.replace(
    "tf.distribute.experimental.TPUStrategy(resolver)", "tf.distribute.TPUStrategy(resolver)"
).replace("strategy.experimental_run_v2(fn", "strategy.run(fn").replace("Adam(lr=", "Adam(learning_rate=").replace(
    "out = strategy.experimental_run_v2(step", "out = strategy.run(step"
).replace("return strategy.experimental_run_v2(step)", "return strategy.run(step)")


def _fix(source, **options):
    outcome = migrate(source, Options(mode="fix", **options))
    ast.parse(outcome.code)
    assert migrate(outcome.code, Options(mode="fix", **options)).code == outcome.code, "a second fix changed the code"
    return outcome


def test_doctest_lines_are_fixed_in_place_and_expected_output_is_left_alone():
    outcome = _fix(MODULE)
    assert outcome.code == FIXED
    doctest_reports = [(r.rule, r.line, r.column, r.safety, r.applied) for r in outcome.reports if r.line]
    assert doctest_reports == [
        ("TPU103", 3, 20, "safe", True),
        ("TPU101", 4, 18, "safe", True),
        ("TPU301", 4, 38, "unsafe", False),  # `fn` is not in view: an unsafe suggestion, as in code
        ("TPU405", 15, 19, "safe", True),
        ("TPU101", 17, 32, "safe", True),
        ("TPU301", 17, 52, "manual", False),
        ("TPU301", 22, 25, "unsafe", False),  # the code's own, after the fix
    ]


def test_check_reports_every_doctest_finding_on_its_line_and_changes_nothing():
    outcome = migrate(MODULE, Options(mode="check"))
    assert outcome.code == MODULE
    assert [(r.rule, r.line) for r in outcome.reports if r.rule != "TPU301"] == [
        ("TPU103", 3), ("TPU101", 4), ("TPU405", 15), ("TPU101", 17), ("TPU101", 22),
    ]  # fmt: skip
    line = MODULE.splitlines()[16]
    report = next(r for r in outcome.reports if r.line == 17 and r.rule == "TPU101")
    assert line[report.column - 1 : report.end_column - 1] == "experimental_run_v2"


@pytest.mark.parametrize("rule", ["TPU101", "TPU103", "TPU405"])
def test_a_disabled_rule_leaves_its_doctests_alone(rule):
    outcome = _fix(MODULE, ignore=(rule,))
    assert rule not in {r.rule for r in outcome.reports}
    assert outcome.code != FIXED


@pytest.mark.parametrize("quote", ["'''", '"""', "r'''", 'r"""', "u'''"])
@pytest.mark.parametrize("indent", ["", "    ", "\t"])
def test_quoting_and_indentation_are_kept(quote, indent):
    close = quote.lstrip("ru")
    source = (
        "import tensorflow as tf\n\n\nclass Runner:\n"
        f"    {quote}Doc.\n\n{indent}>>> s.experimental_run_v2(f)\n{indent}...   # a comment\n    {close}\n"
    )
    outcome = _fix(source)
    assert outcome.code == source.replace("experimental_run_v2", "run")
    assert [(r.rule, r.line, r.applied) for r in outcome.reports if r.rule == "TPU101"] == [("TPU101", 7, True)]


def test_a_line_whose_text_is_not_the_strings_text_is_reported_not_edited():
    # "\\n" in a plain string: the file's text of the line is not the doctest's.
    source = 'def f():\n    """Doc.\n\n    >>> s.experimental_run_v2(f, args=("a\\n",))\n    >>> s.experimental_run_v2(g)\n    """\n'
    outcome = _fix(source)
    assert outcome.code == source.replace("s.experimental_run_v2(g)", "s.run(g)")
    reports = [(r.rule, r.line, r.safety, r.applied) for r in outcome.reports if r.rule == "TPU101"]
    assert reports == [("TPU101", 4, "manual", False), ("TPU101", 5, "safe", True)]
    assert "in a doctest: fix it by hand" in outcome.reports[0].message


def test_a_fix_that_adds_lines_is_reported_and_the_others_still_apply():
    # TPU301 would put `@tf.function` above `def step`: a line more, which the doctest cannot take.
    source = (
        'def f():\n    """Doc.\n\n'
        "    >>> def step(x):\n    ...     return x * 2\n"
        "    >>> strategy = tf.distribute.TPUStrategy(r)\n"
        "    >>> strategy.experimental_run_v2(step, args=(1,))\n"
        '    """\n'
    )
    outcome = _fix(source)
    assert outcome.code == source.replace("experimental_run_v2", "run")
    assert [(r.rule, r.line, r.safety, r.applied) for r in outcome.reports] == [
        ("TPU101", 7, "safe", True),
        ("TPU301", 7, "manual", False),
    ]
    assert "does not fit back line by line" in outcome.reports[1].message


def test_examples_share_their_names_and_the_modules_imports():
    # `strategy` is bound by an earlier example; `tfd` by the module's import.
    source = (
        "from tensorflow import distribute as tfd\n\n\n"
        'def f():\n    """Doc.\n\n'
        "    >>> strategy = tfd.experimental.TPUStrategy(r)\n"
        "    >>> ds = strategy.experimental_distribute_datasets_from_function(fn)\n"
        '    """\n'
    )
    outcome = _fix(source)
    assert "strategy = tfd.TPUStrategy(r)" in outcome.code
    assert "ds = strategy.distribute_datasets_from_function(fn)" in outcome.code
    assert sorted(r.rule for r in outcome.reports) == ["TPU102", "TPU103"]


def test_text_that_is_not_an_example_is_left_alone():
    source = (
        'def f():\n    """Doc: strategy.experimental_run_v2 was renamed.\n\n'
        "    ... strategy.experimental_run_v2(f)\n"  # an ellipsis, not a continuation
        "    >>> this is not python: strategy.experimental_run_v2\n"
        '    """\n    return 1\n'
    )
    outcome = _fix(source)
    assert outcome.code == source and outcome.reports == []


def test_json_reports_carry_the_doctest_edit():
    source = 'def f():\n    """Doc.\n\n    >>> s.experimental_run_v2(f)\n    """\n'
    outcome = migrate(source, Options(mode="fix", want_edits=True))
    edits = [e for r in outcome.reports for e in r.edits]
    assert edits == [{"line": 4, "column": 1, "end_line": 4, "end_column": 33, "content": "    >>> s.run(f)"}]


@pytest.mark.slow
def test_the_cli_fixes_doctests_of_files_and_notebook_cells(tmp_path):
    (tmp_path / "lib.py").write_text('def f():\n    """Doc.\n\n    >>> s.experimental_run_v2(f)\n    """\n')
    cell = ['def f():\n', '    """Doc.\n', "\n", "    >>> s.experimental_run_v2(f)\n", '    """\n']
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "source": cell, "outputs": [], "execution_count": None}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}  # fmt: skip
    (tmp_path / "book.ipynb").write_text(json.dumps(notebook))
    checked = subprocess.run(
        [sys.executable, "-m", "migrate_tpu", "check", "--no-cache", "--format", "json", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )
    found = sorted((f["path"].rsplit("/", 1)[-1], f["rule"], f["line"]) for f in json.loads(checked.stdout)["findings"])
    assert [f for f in found if f[1] == "TPU101"] == [("book.ipynb", "TPU101", 4), ("lib.py", "TPU101", 4)]
    subprocess.run([sys.executable, "-m", "migrate_tpu", "fix", "--no-cache", str(tmp_path)], capture_output=True, timeout=600)
    assert ">>> s.run(f)" in (tmp_path / "lib.py").read_text()
    fixed = json.loads((tmp_path / "book.ipynb").read_text())
    assert fixed["cells"][0]["source"][3] == "    >>> s.run(f)\n"



FENCED = '''def train(strategy, dist):
    """Runs the steps.

    ```python
    strategy = tf.distribute.experimental.TPUStrategy(resolver)
    for x in dist:
        strategy.experimental_run_v2(step, args=(x,))  # one step
    ```

    ```bash
    strategy.experimental_run_v2 is not Python here
    ```

    ```
    >>> strategy.experimental_run_v2(step)
    output strategy.experimental_run_v2(x)
    ```
    """
'''


def test_a_fenced_block_alone_is_read():
    source = 'import tensorflow as tf\n\n\ndef f():\n    """Doc.\n\n    ```python\n    opt = tf.keras.optimizers.SGD(lr=2.0)\n    ```\n    """\n'
    outcome = _fix(source)
    assert outcome.code == source.replace("SGD(lr=", "SGD(learning_rate=")
    assert [(r.rule, r.line, r.applied) for r in outcome.reports] == [("TPU405", 8, True)]


def test_fenced_python_blocks_in_docstrings_are_fixed_like_doctests():
    outcome = _fix(FENCED)
    assert outcome.code == FENCED.replace(
        "tf.distribute.experimental.TPUStrategy(resolver)", "tf.distribute.TPUStrategy(resolver)"
    ).replace("        strategy.experimental_run_v2(step, args", "        strategy.run(step, args").replace(
        ">>> strategy.experimental_run_v2(step)", ">>> strategy.run(step)"
    )
    assert [(r.rule, r.line, r.column, r.applied) for r in outcome.reports if r.rule != "TPU301"] == [
        ("TPU103", 5, 16, True),
        ("TPU101", 7, 18, True),
        ("TPU101", 15, 18, True),
    ]


def test_a_doctest_on_the_closing_quotes_line_is_reported_not_edited():
    source = 'def f():\n    """Doc.\n\n    >>> s.experimental_run_v2(f)"""\n'
    outcome = _fix(source)
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety, r.applied) for r in outcome.reports] == [("TPU101", 4, "manual", False)]


def test_an_edit_is_made_only_where_the_line_is_still_what_it_was():
    from migrate_tpu.codemod.migration.doctests import DoctestEdit, apply_edits

    edits = [DoctestEdit(2, "  >>> s.experimental_run_v2(f)", "  >>> s.run(f)"), DoctestEdit(3, "  >>> old", "  >>> new")]
    code, missed = apply_edits("a\n  >>> s.experimental_run_v2(f)\r\n  >>> changed\n", edits, lambda line: line)
    assert code == "a\n  >>> s.run(f)\r\n  >>> changed\n"
    assert missed == [3]


def test_the_issue_19_doctest_is_fixed_and_reported_on_its_line():
    source = (
        "import tensorflow as tf\n\n\n"
        "def train(strategy, step_fn, x):\n"
        '    """Runs one step.\n\n'
        "    >>> strategy.experimental_run_v2(step_fn, args=(x,))\n"
        '    """\n'
        "    return strategy.run(step_fn, args=(x,))\n"
    )
    checked = migrate(source, Options(mode="check", select=("TPU101",)))
    assert [(r.rule, r.line, r.column, r.safety) for r in checked.reports] == [("TPU101", 7, 18, "safe")]
    assert _fix(source, select=("TPU101",)).code == source.replace(">>> strategy.experimental_run_v2(", ">>> strategy.run(")


GUARDED = '''def f():
    """Example.

    >>> if tf.__version__.startswith('2.0'):
    ...     out = strategy.experimental_run_v2(fn)
    ... else:
    ...     out = strategy.run(fn)
    """
'''


def test_a_version_guard_in_a_doctest_keeps_its_legacy_branch_with_a_note():
    # The collapse removes lines, so it cannot be put back: reported; the branch it would remove
    # is then not rewritten either, and its old API is noted on its own line (not silent).
    outcome = _fix(GUARDED, select=("TPU101", "TPU601"))
    assert outcome.code == GUARDED
    assert [(r.rule, r.line, r.column, r.safety) for r in outcome.reports] == [("TPU601", 4, 9, "manual"), ("TPU101", 5, 28, "manual")]
    assert "in a doctest: fix it by hand" in outcome.reports[0].message
    assert "under the guard `if tf.__version__.startswith('2.0')`" in outcome.reports[1].message


def test_the_strings_of_a_test_dict_are_doctests_too():
    source = '__test__ = {\n    "run": """\n    >>> strategy.experimental_run_v2(fn)\n    """,\n}\n'
    outcome = _fix(source, select=("TPU101",))
    assert outcome.code == source.replace("experimental_run_v2", "run")
    assert [(r.rule, r.line, r.applied) for r in outcome.reports] == [("TPU101", 3, True)]
    # Another dict's strings are no doctests.
    other = source.replace("__test__", "EXAMPLES")
    assert _fix(other, select=("TPU101",)).reports == []


REST = '''import tensorflow as tf


def f():
    """Example.

    .. code-block:: python
       :linenos:

        strategy.experimental_run_v2(fn)

        opt = tf.keras.optimizers.Adam(lr=0.1)

    Or, as a literal block::

        strategy.experimental_run_v2(fn)

    A doctest in a literal block::

        >>> strategy.experimental_run_v2(fn)

    .. code-block:: bash

        python train.py --opt=strategy.experimental_run_v2

    Not Python::

        then strategy.experimental_run_v2 runs
    """
'''


def test_restructuredtext_code_blocks_are_read_like_doctests():
    outcome = _fix(REST, select=("TPU101", "TPU405"))
    lines = REST.splitlines(keepends=True)
    for number in (10, 16, 20):
        lines[number - 1] = lines[number - 1].replace("experimental_run_v2", "run")
    lines[11] = lines[11].replace("lr=", "learning_rate=")
    assert outcome.code == "".join(lines)
    assert [(r.rule, r.line, r.applied) for r in outcome.reports] == [
        ("TPU101", 10, True), ("TPU405", 12, True), ("TPU101", 16, True), ("TPU101", 20, True)
    ]


def test_a_slice_is_no_code_block():
    from migrate_tpu.codemod.migration.doctests import may_hold_examples

    assert not may_hold_examples("x = y[::2]\n")
    assert may_hold_examples("Example::\n\n    x = 1\n") and may_hold_examples(".. code-block:: python\n")


LEGACY_DEF = '''import tensorflow as tf

if hasattr(tf.distribute.Strategy, "run"):
    def step(strategy, x):
        """Runs a step.

        >>> strategy.run(fn, args=(x,))
        """
        return strategy.run(fn, args=(x,))
else:
    def step(strategy, x):
        """Runs a step.

        >>> strategy.experimental_run_v2(fn, args=(x,))
        """
        return strategy.experimental_run_v2(fn, args=(x,))


def other(strategy):
    """Other.

    >>> strategy.experimental_run_v2(fn)
    """
'''


def test_a_doctest_in_the_legacy_branch_of_a_guard_is_noted_not_rewritten():
    # The docstring of a function defined for older TensorFlow shows the old API on purpose.
    outcome = _fix(LEGACY_DEF, select=("TPU101",))
    assert outcome.code == LEGACY_DEF.replace("    >>> strategy.experimental_run_v2(fn)\n", "    >>> strategy.run(fn)\n")
    assert [(r.rule, r.line, r.safety, r.applied) for r in outcome.reports] == [
        ("TPU101", 14, "manual", False),
        ("TPU101", 16, "manual", False),
        ("TPU101", 22, "safe", True),
    ]
    guard = 'under the guard `if hasattr(tf.distribute.Strategy, "run")`'
    assert guard in outcome.reports[0].message and guard in outcome.reports[1].message
    # The same under a version guard when the collapse is not run.
    versioned = LEGACY_DEF.replace('hasattr(tf.distribute.Strategy, "run")', 'tf.__version__ >= "2.2"')
    outcome = _fix(versioned, select=("TPU101",))
    assert "        >>> strategy.experimental_run_v2(fn, args=(x,))\n" in outcome.code
    assert [(r.line, r.safety) for r in outcome.reports if r.line == 14] == [(14, "manual")]


def test_the_header_is_cut_from_lines_split_once_as_the_standard_library_cuts_it():
    """``_segment`` stands in for ``ast.get_source_segment``, which splits the whole module
    again for every import (seconds on TensorFlow's generated op modules)."""
    import ast

    from migrate_tpu.codemod.migration.doctests import _PHYSICAL_LINE, _segment

    source = (
        "import a\nfrom b import (c,\n  d)\r\nimport e.f as g  # x\rimport h\n"
        "x = 1\n\x0cimport q\nimport \u00fc as v\nfrom m import (\n  \u00e9,\n)\nimport last"
    )
    tree = ast.parse(source)
    lines = _PHYSICAL_LINE.findall(source)
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert len(imports) == 8
    assert [_segment(lines, node) for node in imports] == [ast.get_source_segment(source, node) for node in imports]
