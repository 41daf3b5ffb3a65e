"""How fixes leave the lines they edit (issue 31): as a person would have written them.

A keyword removed from a multi-line call takes its line and the comments that spoke only
of it (``helpers.remove_arguments``); a call a fix makes longer than the file's longest
line (and than ``edits.SHORTEST_LIMIT``) has its arguments put one to a line, as its own
layout or the file's does (``edits.wrap_call``). Each case states the exact output, which
must parse and be left alone by a second run.
"""

import ast

import pytest

from migrate_tpu.codemod.migration.api import Options, migrate
from migrate_tpu.codemod.framework.edits import SHORTEST_LIMIT

TF = "import tensorflow as tf\n\n"
RING = "tf.distribute.experimental.CollectiveCommunication.RING"


def _fix(source: str) -> str:
    code = migrate(source, Options(mode="fix")).code
    ast.parse(code)
    assert migrate(code, Options(mode="fix")).code == code
    return code


REMOVALS = {
    # The call's trailing comma and its ``)`` on a line of its own stay.
    "trailing comma": (
        "model.compile(\n    optimizer='adam',\n    loss='mse',\n    experimental_run_tf_function=False,\n)\n",
        "model.compile(\n    optimizer='adam',\n    loss='mse',\n)\n",
    ),
    "no trailing comma": (
        "model.compile(\n    optimizer='adam',\n    experimental_run_tf_function=False\n)\n",
        "model.compile(\n    optimizer='adam'\n)\n",
    ),
    "the only argument": (
        "model.compile(\n    experimental_run_tf_function=False,\n)\n",
        "model.compile()\n",
    ),
    # A comment at the end of the line above stays there: the ``)`` keeps a line of its own.
    "a comment above stays": (
        "model.compile(optimizer='adam',\n              loss='mse',  # the loss\n              experimental_run_tf_function=False)\n",
        "model.compile(optimizer='adam',\n              loss='mse'  # the loss\n              )\n",
    ),
    # A comment after the ``)`` is the statement's: it stays.
    "a comment after the call": (
        "model.compile(optimizer='adam',\n              loss='mse',\n              experimental_run_tf_function=False)  # TPU\n",
        "model.compile(optimizer='adam',\n              loss='mse')  # TPU\n",
    ),
    # A comment a blank line above the keyword speaks of more than it.
    "a comment set apart": (
        "model.compile(\n    optimizer='adam',\n    # settings\n\n    experimental_run_tf_function=False,\n    loss='mse')\n",
        "model.compile(\n    optimizer='adam',\n    # settings\n\n    loss='mse')\n",
    ),
    # Two positional arguments dropped at the end (``target_tensors``, ``distribute``): the
    # comment of the first goes with it, and the ``)`` joins the line above again.
    "two at the end": (
        "model.compile('sgd',\n              'mse',\n              ['mae'],\n              None,\n              None,\n"
        "              None,\n              None,  # target tensors\n              None)\n",
        "model.compile('sgd',\n              'mse',\n              metrics=['mae'],\n              loss_weights=None,\n"
        "              sample_weight_mode=None,\n              weighted_metrics=None)\n",
    ),
    # In an indented block: the same, at the block's indentation.
    "in a method": (
        "class Net(tf.keras.Model):\n    def build(self):\n        self.compile(optimizer='adam',\n"
        "                     loss='mse',\n                     # TPU\n                     experimental_run_tf_function=False)\n",
        "class Net(tf.keras.Model):\n    def build(self):\n        self.compile(optimizer='adam',\n"
        "                     loss='mse')\n",
    ),
}


@pytest.mark.parametrize("case", sorted(REMOVALS))
def test_a_removed_keyword_leaves_the_lines_a_person_would(case):
    before, after = REMOVALS[case]
    assert _fix(TF + before) == TF + after


WRAPS = {
    # A call written with a hanging indent keeps it; the call of the options, still too
    # long on its line, is wrapped in turn.
    "hanging": (
        f"strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy(\n    {RING}, resolver)\n",
        "strategy = tf.distribute.MultiWorkerMirroredStrategy(\n    cluster_resolver=resolver,\n"
        "    communication_options=tf.distribute.experimental.CommunicationOptions(\n"
        f"        implementation={RING}))\n",
    ),
    # On one line in a file that aligns its arguments: aligned under the ``(``, the lines
    # still run past the limit, so the arguments hang, one level in from the line's indentation.
    "from one line, in a block": (
        f"def make():\n    if True:\n        return tf.distribute.experimental.MultiWorkerMirroredStrategy({RING})\n",
        "def make():\n    if True:\n        return tf.distribute.MultiWorkerMirroredStrategy(\n"
        "            communication_options=tf.distribute.experimental.CommunicationOptions(\n"
        f"                implementation={RING}))\n",
    ),
    # Where alignment fits (the file's longest line is long enough), it is kept.
    "aligned": (
        "class Trainer:\n    def build(self):\n"
        "        self.model.compile(self.optimizer, self.loss, [tf.keras.metrics.SparseCategoricalAccuracy()], None, None, None)\n",
        "class Trainer:\n    def build(self):\n"
        "        self.model.compile(self.optimizer,\n"
        "                           self.loss,\n"
        "                           metrics=[tf.keras.metrics.SparseCategoricalAccuracy()],\n"
        "                           loss_weights=None,\n"
        "                           sample_weight_mode=None,\n"
        "                           weighted_metrics=None)\n",
    ),
    # A comment stays at the end of its argument's line; the ``)`` on a line of its own stays.
    "comments": (
        "strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy(\n"
        f"    {RING},  # fast\n    resolver,\n)\n",
        "strategy = tf.distribute.MultiWorkerMirroredStrategy(\n    cluster_resolver=resolver,\n"
        "    communication_options=tf.distribute.experimental.CommunicationOptions(\n"
        f"        implementation={RING}),  # fast\n)\n",
    ),
    # Arguments swapped: a comment goes with its argument, and the ``)`` keeps its line.
    "a comment moves with its argument": (
        f"strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy(\n    {RING},\n    resolver  # the cluster\n)\n",
        "strategy = tf.distribute.MultiWorkerMirroredStrategy(\n    cluster_resolver=resolver,  # the cluster\n"
        "    communication_options=tf.distribute.experimental.CommunicationOptions(\n"
        f"        implementation={RING})\n)\n",
    ),
    # Parentheses around the call, and a comment after it, stay on its last line.
    "parenthesized": (
        f"strategy = (tf.distribute.experimental.MultiWorkerMirroredStrategy({RING}))  # the strategy\n",
        "strategy = (tf.distribute.MultiWorkerMirroredStrategy(\n"
        "    communication_options=tf.distribute.experimental.CommunicationOptions(\n"
        f"        implementation={RING})))  # the strategy\n",
    ),
    # A call given as an argument on a continuation line: indented from that line.
    "an argument": (
        f"x = make(a,\n         tf.distribute.experimental.MultiWorkerMirroredStrategy({RING}), b)\n",
        "x = make(a,\n         tf.distribute.MultiWorkerMirroredStrategy(\n"
        "             communication_options=tf.distribute.experimental.CommunicationOptions(\n"
        f"                 implementation={RING})), b)\n",
    ),
}


@pytest.mark.parametrize("case", sorted(WRAPS))
def test_a_lengthened_call_is_wrapped_as_the_call_or_the_file_does(case):
    before, after = WRAPS[case]
    assert _fix(TF + before) == TF + after


def test_a_call_no_longer_than_the_file_s_longest_line_stays_on_its_line():
    comment = "# " + "x" * 200 + "\n"
    source = TF + comment + f"strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy({RING})\n"
    fixed = _fix(source)
    assert fixed.splitlines()[-1] == (
        f"strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options="
        f"tf.distribute.experimental.CommunicationOptions(implementation={RING}))"
    )


def test_a_file_of_short_lines_takes_lines_up_to_the_shortest_limit():
    # The longest line had 43 characters: a line of 64 stays, one past PEP 8's 79 is wrapped.
    kept = 'model.compile("sgd", "mse", metrics=["mae"], loss_weights=None)'
    assert _fix(TF + 'model.compile("sgd", "mse", ["mae"], None)\n') == TF + kept + "\n"
    assert len(kept) <= SHORTEST_LIMIT
    assert _fix(TF + 'model.compile("sgd", "mse", ["mae"], None, None, None)\n') == TF + (
        'model.compile("sgd",\n'
        '              "mse",\n'
        '              metrics=["mae"],\n'
        "              loss_weights=None,\n"
        "              sample_weight_mode=None,\n"
        "              weighted_metrics=None)\n"
    )


def test_crlf_lines_keep_their_ends():
    source = (TF + "model.compile(optimizer='adam',\n              # TPU\n              experimental_run_tf_function=False)\n"
              f"strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy({RING})\n").replace("\n", "\r\n")
    fixed = _fix(source)
    assert fixed == (TF + "model.compile(optimizer='adam')\n"
                     "strategy = tf.distribute.MultiWorkerMirroredStrategy(\n"
                     "    communication_options=tf.distribute.experimental.CommunicationOptions(\n"
                     f"        implementation={RING}))\n").replace("\n", "\r\n")


def test_a_doctest_fix_is_not_wrapped_so_that_it_fits_back_line_for_line():
    source = (
        TF + "def make():\n"
        '    """Make one.\n\n'
        f"    >>> s = tf.distribute.experimental.MultiWorkerMirroredStrategy({RING})\n"
        '    """\n'
    )
    fixed = migrate(source, Options(mode="fix"))
    assert fixed.code.splitlines()[5] == (
        "    >>> s = tf.distribute.MultiWorkerMirroredStrategy(communication_options="
        f"tf.distribute.experimental.CommunicationOptions(implementation={RING}))"
    )
    assert all(r.applied for r in fixed.reports)
