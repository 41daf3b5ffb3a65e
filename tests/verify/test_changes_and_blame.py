"""The migration's changes as hunks (what coverage counts and blame takes apart) and delta
debugging over them: pure, no TensorFlow."""

from migrate_tpu.verify.blame.blame import OutOfRuns, ddmin
from migrate_tpu.verify.values.changes import apply, file_hunks

ORIGINAL = """import tensorflow as tf

strategy = tf.distribute.experimental.TPUStrategy(resolver)


@tf.function
def train_step(iterator):
    def step_fn(batch):
        return batch

    per_replica = strategy.experimental_run_v2(step_fn,
                                               args=(next(iterator),))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)


def evaluate():
    return 1
"""

MIGRATED = (ORIGINAL.replace("tf.distribute.experimental.TPUStrategy", "tf.distribute.TPUStrategy")
            .replace("strategy.experimental_run_v2(step_fn,\n                                               args",
                     "strategy.run(step_fn,\n                                args")
            .replace("    return 1\n", "    return 2\n"))
FIXES = [("t.py", None, 3, 3, "TPU103"), ("t.py", None, 11, 12, "TPU101")]


def test_hunks_carry_their_rules_their_place_and_what_shows_they_ran():
    hunks = file_hunks("t.py", ORIGINAL, MIGRATED, FIXES)
    assert [h.label() for h in hunks] == ["t.py:3 (TPU103)", "t.py:11-12 (TPU101)", "t.py:17"]
    assert hunks[1].watch == (11, 12)  # the call's own two lines
    assert hunks[2].watch == (17,)
    # each hunk applies alone, and all of them give the migrated text
    assert apply("t.py", ORIGINAL, hunks) == MIGRATED
    only_run = apply("t.py", ORIGINAL, [hunks[1]])
    assert "strategy.run(step_fn," in only_run and "experimental.TPUStrategy" in only_run and "return 1" in only_run


def test_a_hunk_inside_a_call_spread_over_lines_watches_the_call_s_first_line():
    before = "x = f(a,\n      b,\n      c)\n"
    after = "x = f(a,\n      B,\n      c)\n"
    (hunk,) = file_hunks("t.py", before, after)
    assert hunk.watch == (1, 2, 3)  # Python 3.7 reports the statement's first line only


def test_an_added_decorator_watches_the_definition():
    before = "def step(x):\n    return x\n"
    after = "@tf.function\ndef step(x):\n    return x\n"
    (hunk,) = file_hunks("t.py", before, after)
    assert hunk.watch == (1, 2)


def test_notebook_hunks_are_counted_cell_by_cell():
    import json

    def notebook(*cells):
        code = [{"cell_type": "code", "source": cell.splitlines(keepends=True)} for cell in cells]
        return json.dumps({"cells": [{"cell_type": "markdown", "source": ["# title\n"]}] + code}, indent=1)

    before = notebook("import tensorflow as tf\n", "y = strategy.experimental_run_v2(f)\nprint(y)\n")
    after = notebook("import tensorflow as tf\n", "y = strategy.run(f)\nprint(y)\n")
    (hunk,) = file_hunks("nb.ipynb", before, after, [("nb.ipynb", 3, 1, 1, "TPU101")])
    assert (hunk.cell, hunk.label()) == (3, "nb.ipynb cell 3:1 (TPU101)")
    applied = json.loads(apply("nb.ipynb", before, [hunk]))
    assert "".join(applied["cells"][2]["source"]) == "y = strategy.run(f)\nprint(y)\n"


def test_a_hand_migration_that_adds_and_removes_cells_is_counted_in_the_cells_it_ran_in():
    # the repository's own migration of a guide: a cell removed, one rewritten, one added
    import json

    def notebook(*cells):
        return json.dumps({"cells": [{"cell_type": "code", "source": c.splitlines(keepends=True)} for c in cells]}, indent=1)

    def codes(text):
        return ["".join(c["source"]) for c in json.loads(text)["cells"]]

    before = notebook("import tf\n", "print(policy.loss_scale)\n", "x = 1\n", "train()\n")
    after = notebook("import tf\n", "print(dense.dtype_policy)\n", "train()\n", "evaluate()\n", "report()\n")
    hunks = file_hunks("nb.ipynb", before, after)
    assert len(hunks) == 4
    rewritten, removed, added, last = [next(h for h in hunks if h.new_lines == lines)
                                       for lines in (("print(dense.dtype_policy)\n",), (), ("evaluate()\n",), ("report()\n",))]
    # watched in the migrated notebook's cells, applied to the original's
    assert [(h.cell, h.migrated_cell, h.watch) for h in (rewritten, removed, added, last)] == [
        (2, 2, (1,)), (3, 3, ()), (4, 4, (1,)), (4, 5, (1,))]
    assert [h.label() for h in (rewritten, added, last)] == ["nb.ipynb cell 2:1", "nb.ipynb cell 4:1", "nb.ipynb cell 5:1"]
    assert codes(apply("nb.ipynb", before, hunks)) == ["import tf\n", "print(dense.dtype_policy)\n", "",
                                                       "train()\nevaluate()\nreport()\n"]
    assert codes(apply("nb.ipynb", before, [last])) == ["import tf\n", "print(policy.loss_scale)\n", "x = 1\n", "train()\nreport()\n"]
    # an added cell in the middle is watched where the migrated notebook has it
    inserted = file_hunks("nb.ipynb", before, notebook("import tf\n", "print(policy.loss_scale)\n", "x = 1\n", "y = 2\n", "train()\n"))
    assert [(h.cell, h.migrated_cell, h.new_lines) for h in inserted] == [(3, 4, ("y = 2\n",))]


def test_ddmin_finds_the_one_change_to_blame_in_few_tests():
    asked = []

    def fails(subset):
        asked.append(list(subset))
        return 13 in subset

    assert ddmin(list(range(20)), fails) == [13]
    assert len(asked) <= 12  # about 2 log2(20), not 20


def test_ddmin_keeps_two_changes_that_fail_only_together():
    assert ddmin(list(range(8)), lambda subset: 2 in subset and 6 in subset) == [2, 6]


def test_ddmin_returns_what_it_has_when_the_runs_are_spent():
    calls = []

    def fails(subset):
        if len(calls) >= 2:
            raise OutOfRuns()
        calls.append(subset)
        return 5 in subset

    found = ddmin(list(range(8)), fails)
    assert 5 in found and len(found) < 8


def test_a_hunk_ran_only_where_one_of_its_own_lines_ran():
    from pathlib import Path

    from migrate_tpu.verify.values.changes import ran

    hunks = file_hunks("t.py", ORIGINAL, MIGRATED, FIXES)
    root = Path("/copy")
    assert ran(hunks[1], root, {"/copy/t.py": [11]})
    assert not ran(hunks[1], root, {"/copy/t.py": [3, 17]})  # other lines of the file ran
    assert not ran(hunks[1], root, {"/copy/other.py": [11]})
