"""Which changes blame tries first (``migrate_tpu/verify/blame/suspects.py``) and how that orders
blame's runs (``blame._among_suspects_first``): pure, no TensorFlow."""

import json

from migrate_tpu.verify.blame.blame import Copy, blame
from migrate_tpu.verify.values.changes import file_hunks
from migrate_tpu.verify.blame.suspects import cosmetic, likely_neutral, renames_only

ORIGINAL = '''"""A small custom training loop in TF 2.1 form."""
import tensorflow as tf

strategy = tf.distribute.experimental.TPUStrategy(resolver)


@tf.function
def train_step(iterator):
    per_replica = strategy.experimental_run_v2(step_fn, args=(next(iterator),))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)


BATCH = 64
'''

WRONG = (ORIGINAL.replace('"""A small custom training loop in TF 2.1 form."""', '"""A wrong migration of it."""')
         .replace("tf.distribute.experimental.TPUStrategy", "tf.distribute.TPUStrategy")
         .replace("strategy.experimental_run_v2(", "strategy.run(")
         .replace("ReduceOp.SUM", "ReduceOp.MEAN"))


def test_a_rename_the_catalogue_made_is_neutral_and_a_changed_reduce_is_not():
    assert renames_only("s = tf.distribute.experimental.TPUStrategy(r)\n", "s = tf.distribute.TPUStrategy(r)  # moved\n")
    assert renames_only("    x = strategy.experimental_run_v2(f, args=(b,))\n", "    x = strategy.run(f, args=(b,))\n")
    assert not renames_only("    x = strategy.experimental_run_v2(f)\n    return strategy.reduce(tf.distribute.ReduceOp.SUM, x)\n",
                            "    x = strategy.run(f)\n    return strategy.reduce(tf.distribute.ReduceOp.MEAN, x)\n")
    # a name no move has is a change like any other
    assert not renames_only("y = model.experimental_fit(x)\n", "y = model.fit(x)\n")
    # a fragment that does not tokenize (a call's first line alone) is not known to be neutral
    assert not renames_only("x = strategy.experimental_run_v2(f,\n", "x = strategy.run(f,\n")


def test_comments_docstrings_and_layout_are_cosmetic_and_a_string_argument_is_not():
    assert cosmetic('"""Old words."""\nx = 1\n', '"""New words."""\nx = 1  # why\n')
    assert cosmetic("def f():\n    '''a'''\n    return 1\n", "def f():\n    '''b'''\n\n    return 1\n")
    assert not cosmetic("model.compile(loss='mse')\n", "model.compile(loss='mae')\n")
    assert not cosmetic("x = 1\n", "x = 2\n")


def _hunks(tmp_path, original, migrated, name="t.py"):
    (tmp_path / name).write_text(original)
    return file_hunks(name, original, migrated)


def test_the_changed_reduce_is_the_only_suspect(tmp_path):
    hunks = _hunks(tmp_path, ORIGINAL, WRONG)
    neutral = likely_neutral(tmp_path)
    assert [neutral(hunk) for hunk in hunks] == [True, True, False]  # docstring, rename, run+MEAN
    assert "MEAN" in "".join(hunks[2].new_lines)


def test_a_notebook_cell_s_hunks_are_judged_in_their_cell(tmp_path):
    def notebook(cells):
        return json.dumps({"cells": [{"cell_type": "code", "source": cell, "metadata": {}, "outputs": [],
                                      "execution_count": None} for cell in cells], "metadata": {}, "nbformat": 4,
                           "nbformat_minor": 4}, indent=1) + "\n"
    before = notebook(["import tensorflow as tf\n", "s = tf.distribute.experimental.TPUStrategy(r)\nn = 8\n"])
    after = notebook(["import tensorflow as tf\n", "s = tf.distribute.TPUStrategy(r)\nn = 16\n"])
    hunks = _hunks(tmp_path, before, after, "nb.ipynb")
    neutral = likely_neutral(tmp_path)
    assert [(hunk.cell, neutral(hunk)) for hunk in hunks] in ([(2, False)], [(2, True), (2, False)])
    assert not neutral(hunks[-1])


def _blame_with(tmp_path, hunks, culprit_text):
    """blame with a stand-in for the runs: a subset shows the failure when it holds the culprit."""
    tried = []

    def reproduces(copy):
        text = (copy.root / "t.py").read_text()
        tried.append(text)
        return culprit_text in text
    original = Copy(tmp_path, tmp_path, tmp_path / "t.py", tmp_path, tmp_path / "t.py")
    work = tmp_path / "work"
    work.mkdir()
    found = blame(hunks, original, work, reproduces, lambda hunk: hunk.place(), likely_neutral(tmp_path))
    return found, tried


def test_blame_finds_a_suspect_in_one_run(tmp_path):
    hunks = _hunks(tmp_path, ORIGINAL, WRONG)
    found, tried = _blame_with(tmp_path, hunks, "ReduceOp.MEAN")
    assert found["changes"] == [hunks[2].place()] and found["runs"] == 1 == len(tried)


def test_blame_falls_back_to_all_the_changes_when_the_suspects_do_not_show_it(tmp_path):
    # the culprit is the rename itself (a surface where the new name behaves otherwise): the
    # suspects alone do not show the failure, and ddmin over every change still finds it
    hunks = _hunks(tmp_path, ORIGINAL, WRONG)
    found, tried = _blame_with(tmp_path, hunks, "tf.distribute.TPUStrategy(")
    assert found["changes"] == [hunks[1].place()]
    assert "ReduceOp.MEAN" in tried[0] and "tf.distribute.TPUStrategy(" not in tried[0]


def test_blame_among_several_suspects_returns_the_culprit_not_every_suspect(tmp_path):
    """Pins _among_suspects_first's ddmin over the suspects: where the suspects together show the
    failure, blame still narrows them down to a 1-minimal set; returning every suspect would
    blame a harmless batch size beside the SUM -> MEAN."""
    hunks = _hunks(tmp_path, ORIGINAL, WRONG.replace("BATCH = 64", "BATCH = 128"))
    neutral = likely_neutral(tmp_path)
    assert [neutral(hunk) for hunk in hunks] == [True, True, False, False]  # docstring, rename, run+MEAN, batch
    found, tried = _blame_with(tmp_path, hunks, "ReduceOp.MEAN")
    assert found["changes"] == [hunks[2].place()] and found["runs"] == 2 == len(tried)
