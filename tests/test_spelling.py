"""What the text alone tells of the dotted names a module may reference (``codemod/spelling.py``),
and the rules that skip the ``ast`` parse on it: the catalogue tables, the calls of old
classes (``CallRule``) and TPU104. Each source ruled out is also run through the rules, which
must find nothing of theirs in it; each source kept must give them their finding."""

import pytest

from migrate_tpu.codemod.stages import syntax_stage
from migrate_tpu.codemod.migration.api import migrate
from migrate_tpu.codemod.rules.catalogue import get_rule, select_rules
from migrate_tpu.codemod.foundation.options import Options
from migrate_tpu.codemod.foundation.spelling import may_name

TF = "import tensorflow as tf\n"
OLD_TPU = "tensorflow.distribute.experimental.TPUStrategy"
OLD_LSO = "tensorflow.keras.mixed_precision.experimental.LossScaleOptimizer"


@pytest.mark.parametrize(
    "source",
    [
        # The new spellings, with ``experimental`` elsewhere only as a namespace of other names.
        TF + "s = tf.distribute.TPUStrategy(r)\nds = ds.prefetch(tf.data.experimental.AUTOTUNE)\n",
        TF + "tf.config.experimental.set_memory_growth(gpu, True)\nopt = tf.keras.mixed_precision.LossScaleOptimizer(o)\n",
        TF + "from tensorflow.keras import mixed_precision\nopt = mixed_precision.LossScaleOptimizer(o)\n",
        TF + "x = tf.data . experimental . AUTOTUNE  # a TPUStrategy, a LossScaleOptimizer\n",
        TF + "run = strategy.experimental_run_v2  # a longer word\nTPUStrategy = None\n",
    ],
)
def test_new_spellings_name_no_old_class(source):
    assert not may_name(source, [OLD_TPU, OLD_LSO])


@pytest.mark.parametrize(
    "source, old",
    [
        (TF + "s = tf.distribute.experimental.TPUStrategy(r)\n", OLD_TPU),
        (TF + "s = tf.distribute.experimental .TPUStrategy(r)\n", OLD_TPU),
        (TF + "s = (tf.distribute.experimental\n     .TPUStrategy(r))\n", OLD_TPU),  # the chain goes on below
        (TF + "s = tf.distribute.experimental.\\\n    TPUStrategy(r)\n", OLD_TPU),
        ("from tensorflow.distribute.experimental import TPUStrategy\n", OLD_TPU),
        ("from tensorflow.distribute import experimental as tde\ns = tde.TPUStrategy(r)\n", OLD_TPU),
        (TF + "tde = tf.distribute.experimental\ns = tde.TPUStrategy(r)\n", OLD_TPU),
        (TF + "cls = getattr(tf.distribute.experimental, 'TPUStrategy')\n", OLD_TPU),
        (TF + "ok = hasattr(getattr(tf.keras.mixed_precision, 'experimental'), 'LossScaleOptimizer')\n", OLD_LSO),
        (TF + "def f(s: 'tf.distribute.experimental.TPUStrategy'):\n    pass\n", OLD_TPU),
        ("from tensorflow.keras.mixed_precision.experimental import *\nopt = LossScaleOptimizer(o, 'dynamic')\n", OLD_LSO),
    ],
)
def test_every_spelling_of_an_old_name_may_name_it(source, old):
    assert may_name(source, [old])


def test_names_the_text_cannot_tell_are_never_ruled_out():
    assert may_name("", ["tensorflow.compat.v1.X"])  # ``compat.v1`` is rewritten by ``names.canonical``
    assert may_name("", ["a.b"])
    assert not may_name("x = 1\n", [OLD_TPU])  # its last name is not even there


RULES = select_rules((), (), "2.4")


def _found(source, rule_id):
    return [r for r in migrate(source, Options()).reports if r.rule == rule_id]


@pytest.mark.parametrize(
    "rule_id, source",
    [
        ("TPU103", TF + "s = tf.distribute.TPUStrategy(r)\nds = ds.prefetch(tf.data.experimental.AUTOTUNE)\n"),
        ("TPU104", TF + "if isinstance(s, tf.distribute.TPUStrategy):\n    pass\n"),
        ("TPU406", TF + "opt = tf.keras.mixed_precision.LossScaleOptimizer(o)\nisinstance(opt, tf.keras.mixed_precision.LossScaleOptimizer)\n"),
        ("TPU403", TF + "from tensorflow.keras import mixed_precision\nopt = mixed_precision.LossScaleOptimizer(o, dynamic=True)\n"),
        ("TPU402", TF + "tf.keras.mixed_precision.set_global_policy(tf.keras.mixed_precision.Policy('mixed_float16'))\n"),
        ("TPU106", TF + "s = tf.distribute.MultiWorkerMirroredStrategy()\nAUTO = tf.data.experimental.AUTOTUNE\n"),
    ],
)
def test_a_rule_whose_old_names_the_text_lacks_is_ruled_out_and_finds_nothing(rule_id, source):
    rule = get_rule(rule_id)
    assert rule.ruled_out_by_text(source)
    assert _found(source, rule_id) == []
    assert not syntax_stage.may_fire(source, [rule])[0]  # no ast parse for it either


@pytest.mark.parametrize(
    "rule_id, source",
    [
        ("TPU103", "from tensorflow.distribute import experimental as tde\ns = tde.TPUStrategy(r)\n"),
        ("TPU104", TF + "if type(s).__name__ == 'TPUStrategy':\n    pass\n"),
        ("TPU104", TF + "tde = tf.distribute.experimental\nif isinstance(s, tde.TPUStrategy):\n    pass\n"),
        ("TPU406", "from tensorflow.keras.mixed_precision.experimental import LossScaleOptimizer\nisinstance(o, LossScaleOptimizer)\n"),
        ("TPU403", "from tensorflow.keras.mixed_precision import experimental as mp\nopt = mp.LossScaleOptimizer(o, 'dynamic')\n"),
        ("TPU402", TF + "tf.keras.mixed_precision.experimental.set_policy('mixed_float16')\n"),
        ("TPU106", TF + "s = tf.distribute.experimental.MultiWorkerMirroredStrategy()\n"),
    ],
)
def test_a_rule_whose_old_name_is_spelled_goes_on_and_finds_it(rule_id, source):
    rule = get_rule(rule_id)
    assert not rule.ruled_out_by_text(source)
    assert _found(source, rule_id)


def test_the_word_alone_in_prose_keeps_the_file():
    """``experimental`` ending a sentence of a comment or docstring may end an alias, as far as
    the text tells: the file goes on to the ``ast`` stage (the cost is a parse, never a finding)."""
    assert may_name(TF + "# This API is experimental\ns = tf.distribute.TPUStrategy(r)\n", [OLD_TPU])
