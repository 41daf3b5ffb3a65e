"""What the text alone tells of keyword arguments (``codemod/keywords.py``), and TPU405's
``ruled_out_by_text`` on it: a source ruled out gives TPU405 nothing; one kept, when it
passes ``lr=`` to an optimizer, gives its finding."""

import pytest

from migrate_tpu.codemod.stages import syntax_stage
from migrate_tpu.codemod.migration.api import migrate
from migrate_tpu.codemod.foundation.keywords import may_pass
from migrate_tpu.codemod.foundation.options import Options
from migrate_tpu.codemod.rules.structural.optimizer_learning_rate import OptimizerLearningRate

TF = "import tensorflow as tf\n"


@pytest.mark.parametrize(
    "source",
    [
        TF + "lr = schedule(step)\nif lr == 0.1:\n    pass\n",
        TF + "def train():\n    x = 1\n    lr = opt_factory.build_learning_rate()\n    return lr\n",
        TF + "self.lr = 0.1\nmodel.optimizer.lr = 2\n",
        TF + "x = 1  # lr = 0.1 would be too fast\n",
        TF + "lr = (\n    0.1)\ndecay = \\\n    0.5\n",
        TF + "log = 'step %d lr = %f' % (step, lr)\n",  # in a string after an operator: no keyword
        TF + "fn = lambda lr=0.1: lr\n",
        TF + "if x:\n    # set the rate\n\n    lr = 0.1\n",
    ],
)
def test_assignments_and_defaults_pass_no_keyword(source):
    assert not may_pass(source, ("lr", "decay"))
    assert OptimizerLearningRate.ruled_out_by_text(source)
    assert [r for r in migrate(source, Options()).reports if r.rule == "TPU405"] == []
    assert not syntax_stage.may_fire(source, [OptimizerLearningRate])[0]


@pytest.mark.parametrize(
    "source",
    [
        TF + "opt = tf.keras.optimizers.SGD(lr=0.1)\n",
        TF + "opt = tf.keras.optimizers.SGD(momentum=0.9, lr=0.1)\n",
        TF + "opt = tf.keras.optimizers.SGD(\n    momentum=0.9,\n    lr=0.1)\n",
        TF + "opt = tf.keras.optimizers.SGD(\n    momentum=0.9,  # a comment\n\n    lr=0.1)\n",
        TF + "opt = tf.keras.optimizers.SGD(momentum=0.9, \\\n    lr=0.1)\n",
        TF + "opt = tf.keras.optimizers.SGD(name='a # b',\n    lr=0.1)\n",  # a # that may be in a string
        TF + "opt = tf.keras.optimizers.RMSprop(decay=0.9)\n",
    ],
)
def test_a_keyword_after_an_opening_or_a_comma_may_be_passed(source):
    assert may_pass(source, ("lr", "decay"))
    assert not OptimizerLearningRate.ruled_out_by_text(source)


def test_defaults_in_a_signature_are_kept_for_the_ast_stage():
    """``def f(self, lr=0.1)``: the text cannot tell a signature's ``(`` from a call's; the
    ``ast`` stage can, and the file goes there (nothing is found either way)."""
    source = TF + "def schedule(step, lr=0.1):\n    return lr\n"
    assert may_pass(source, ("lr",))
    assert not syntax_stage.may_fire(source, [OptimizerLearningRate])[0]
