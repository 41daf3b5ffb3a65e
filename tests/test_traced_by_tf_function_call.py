"""Issue 40.5 (a): code that ``tf.function(...)`` traces because it is handed to the call (not
decorated).

TPU301 says nothing of a ``run`` inside a lambda given to ``tf.function`` in any of its
forms (positional, ``func=``, the factory ``tf.function(...)(fn)``, ``def_function.function``,
an alias of ``tensorflow``), while TPU101 still renames ``experimental_run_v2``; a def given
to ``tf.function`` is traced unless the file also calls it as it is outside traced code, where
its ``run`` is eager: a note says so (no fix: the direct call may be on purpose). The ``ast``
stage agrees: it rules out only what LibCST's analysis finds traced.
"""

import ast

import pytest

from migrate_tpu.codemod.foundation.options import Options
from migrate_tpu.codemod.migration.api import migrate
from migrate_tpu.codemod.rules.catalogue import select_rules
from migrate_tpu.codemod.stages import syntax_stage

HEADER = "import tensorflow as tf\n\nstrategy = tf.distribute.experimental.TPUStrategy(resolver)\nx = tf.constant(1.0)\n"
RULES = select_rules((), (), "2.4")


def _fixed(source):
    outcome = migrate(source, Options())
    ast.parse(outcome.code)
    return outcome


# -- (a) TPU301: a lambda or def handed to tf.function ------------------------------------------

TRACED_LAMBDAS = {
    "positional": "y = tf.function(lambda: strategy.experimental_run_v2(lambda t: t * 2, args=(x,)))()\n",
    "with keywords": "y = tf.function(lambda: strategy.experimental_run_v2(lambda t: t * 2, args=(x,)), autograph=False)()\n",
    "func=": "y = tf.function(func=lambda: strategy.experimental_run_v2(lambda t: t * 2, args=(x,)))()\n",
    "factory": "y = tf.function(experimental_compile=True)(lambda: strategy.experimental_run_v2(lambda t: t * 2, args=(x,)))()\n",
    "def_function": (
        "from tensorflow.python.eager import def_function\n"
        "y = def_function.function(lambda: strategy.experimental_run_v2(lambda t: t * 2, args=(x,)))()\n"
    ),
    "from-import": "from tensorflow import function\ny = function(lambda: strategy.experimental_run_v2(lambda t: t * 2, args=(x,)))()\n",
    "alias": "import tensorflow as tf2\ny = tf2.function(lambda: strategy.experimental_run_v2(lambda t: t * 2, args=(x,)))()\n",
}


@pytest.mark.parametrize("line", TRACED_LAMBDAS.values(), ids=TRACED_LAMBDAS.keys())
def test_a_run_in_a_lambda_given_to_tf_function_gets_no_tpu301_and_is_still_renamed(line):
    """Expected: no TPU301 finding and no ``tf.function`` added around the inner lambda; TPU101's
    rename to ``run`` (and TPU103's) still made. Before issue 40.5 TPU301 wrapped the inner
    lambda: ``strategy.run(tf.function(lambda t: t * 2), ...)``."""
    outcome = _fixed(HEADER + line)
    assert "TPU301" not in {r.rule for r in outcome.reports}
    assert "TPU101" in {r.rule for r in outcome.reports}
    assert "strategy.run(lambda t: t * 2, args=(x,))" in outcome.code
    assert "experimental_run_v2" not in outcome.code


@pytest.mark.parametrize("line", TRACED_LAMBDAS.values(), ids=TRACED_LAMBDAS.keys())
def test_the_ast_stage_rules_out_the_traced_lambda(line):
    """The syntax stage finds the same: TPU301 (asked alone) needs no LibCST parse there."""
    source = HEADER.replace("experimental.", "") + line.replace("experimental_run_v2", "run")
    assert not syntax_stage.may_fire(source, select_rules(("TPU301",), (), "2.4"))[0]


def test_a_call_of_what_tf_function_made_is_no_wrap():
    """``tf.function(g)(lambda: ...)`` passes the lambda to the traced ``g`` as an argument: it
    runs eagerly (for all this file tells), and keeps its finding and fix."""
    source = HEADER + "\n\ndef g(fn):\n    return fn()\n\n\ntf.function(g)(lambda: strategy.run(lambda t: t * 3, args=(x,)))\n"
    outcome = _fixed(source)
    assert [r.rule for r in outcome.reports if r.rule == "TPU301"] == ["TPU301"]
    assert "strategy.run(tf.function(lambda t: t * 3), args=(x,))" in outcome.code
    assert syntax_stage.may_fire(source, RULES)[0]


TRAIN = "\n\ndef step_fn(t):\n    return t * 2\n\n\ndef train():\n    return strategy.experimental_run_v2(step_fn, args=(x,))\n\n\n"


@pytest.mark.parametrize(
    "tail",
    [
        "step = tf.function(train)\nstep()\n",
        "tf.function(train)()\n",
        "step = tf.function(experimental_compile=True)(train)\n",
        "step = tf.function(func=train, autograph=False)\n",
        # Called as it is, but only from traced code.
        "step = tf.function(train)\n\n\n@tf.function\ndef loop():\n    return train()\n",
        # The name rebound to its tf.function: ``train()`` calls that (tf-models-official's loops).
        "if not run_eagerly:\n    train = tf.function(train)\ntrain()\n",
    ],
)
def test_a_def_given_to_tf_function_gets_no_tpu301(tail):
    """Expected: no TPU301 finding, ``step_fn`` not decorated; TPU101 renames the call."""
    outcome = _fixed(HEADER + TRAIN + tail)
    assert "TPU301" not in {r.rule for r in outcome.reports}
    assert "@tf.function\ndef step_fn" not in outcome.code
    assert "return strategy.run(step_fn, args=(x,))" in outcome.code


@pytest.mark.parametrize("call", ["train()\n", "def main():\n    return train()\n"])
def test_a_def_given_to_tf_function_and_called_as_it_is_gets_a_note(call):
    """``train`` also runs as it is where it is called outside any ``tf.function``: there its
    ``run`` is eager. Expected: one TPU301 note (manual, no fix) that says so, and TPU101's
    rename. Before issue 40.5, every def whose name was handed to ``tf.function`` anywhere
    counted as traced, and this call was silent. The ``ast`` stage lets the file through."""
    source = HEADER + TRAIN + "step = tf.function(train)\n" + call
    outcome = _fixed(source)
    found = [r for r in outcome.reports if r.rule == "TPU301"]
    assert [(r.line, r.safety) for r in found] == [(12, "manual")]
    assert "`train` is passed to `tf.function`, but also called as it is (`train(...)`)" in found[0].message
    assert "@tf.function" not in outcome.code
    assert "return strategy.run(step_fn, args=(x,))" in outcome.code  # TPU101 still renames
    assert syntax_stage.may_fire(source.replace("experimental_run_v2", "run"), select_rules(("TPU301",), (), "2.4"))[0]
