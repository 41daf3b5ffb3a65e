"""Issue 40.5 (b): the half-migrated ``tf.keras.mixed_precision.set_policy``.

``mixed_precision.set_policy`` under the stable module (no release had it: TF 2.1-2.3 name
it ``experimental.set_policy``, TF 2.4 ``set_global_policy``) is found, through the
prefilter, and safely renamed to TF 2.4's ``set_global_policy`` (TPU402's table); TF 2.4's
own names there are left alone, and a file that cannot hold the half-migrated name is still
parsed by nothing.
"""

import ast

import pytest

from migrate_tpu.codemod.foundation.options import Options
from migrate_tpu.codemod.migration.api import migrate
from migrate_tpu.codemod.migration.migrator import TPUMigrator
from migrate_tpu.codemod.rules.catalogue import select_rules
from migrate_tpu.codemod.stages import syntax_stage

RULES = select_rules((), (), "2.4")


def _fixed(source):
    outcome = migrate(source, Options())
    ast.parse(outcome.code)
    return outcome


MESSAGE = (
    "`tf.keras.mixed_precision.set_policy` is in no TensorFlow release (TF 2.1-2.3 name it "
    "`tf.keras.mixed_precision.experimental.set_policy`): TF 2.4's name is `tf.keras.mixed_precision.set_global_policy`"
)

HALF_MIGRATED = {
    "module import": (
        "from tensorflow.keras import mixed_precision\n\nmixed_precision.set_policy('mixed_bfloat16')\n",
        "from tensorflow.keras import mixed_precision\n\nmixed_precision.set_global_policy('mixed_bfloat16')\n",
    ),
    "attribute chain": (
        "import tensorflow as tf\n\ntf.keras.mixed_precision.set_policy('mixed_bfloat16')\n",
        "import tensorflow as tf\n\ntf.keras.mixed_precision.set_global_policy('mixed_bfloat16')\n",
    ),
    "module alias": (
        "import tensorflow.keras.mixed_precision as mp\n\nmp.set_policy(mp.Policy('mixed_bfloat16'))\n",
        "import tensorflow.keras.mixed_precision as mp\n\nmp.set_global_policy(mp.Policy('mixed_bfloat16'))\n",
    ),
    "from-import": (
        "from tensorflow.keras.mixed_precision import set_policy\n\nset_policy('mixed_bfloat16')\n",
        "from tensorflow.keras.mixed_precision import set_global_policy\n\nset_global_policy('mixed_bfloat16')\n",
    ),
}


@pytest.mark.parametrize("before, after", HALF_MIGRATED.values(), ids=HALF_MIGRATED.keys())
def test_the_half_migrated_set_policy_is_found_and_renamed(before, after):
    """Expected: the prefilter lets the file through (it skipped it before issue 40.5), one
    safe TPU402 finding with the message naming TF 2.4's function, and the rename."""
    assert TPUMigrator().needs_work(before.encode())
    outcome = migrate(before, Options(mode="check"))
    assert outcome.parsed
    if "import set_policy" in before:  # the import and the call
        assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU402", 1, "safe"), ("TPU402", 3, "safe")]
    else:
        assert [(r.rule, r.line, r.safety, r.message) for r in outcome.reports] == [("TPU402", 3, "safe", MESSAGE)]
    assert _fixed(before).code == after


@pytest.mark.parametrize(
    "source",
    [
        # TF 2.4's names under the stable module.
        "from tensorflow.keras import mixed_precision\n\nmixed_precision.set_global_policy('mixed_bfloat16')\n"
        "p = mixed_precision.Policy('mixed_bfloat16')\nprint(mixed_precision.global_policy())\n"
        "opt = mixed_precision.LossScaleOptimizer(opt)\n",
        # A `set_policy` of something else, beside TensorFlow.
        "import tensorflow as tf\nfrom mylib import mixed_precision\n\nmixed_precision.set_policy('fast')\n",
    ],
)
def test_other_names_are_left_alone(source):
    outcome = migrate(source, Options(mode="check"))
    assert outcome.reports == []


@pytest.mark.parametrize(
    "source",
    [
        "import tensorflow as tf\n\ntf.keras.mixed_precision.set_global_policy('mixed_bfloat16')\n",
        "import tensorflow as tf\n\nscheduler.set_policy('round_robin')\n",
        "import tensorflow as tf\nfrom tensorflow.keras import mixed_precision\n\npolicy = mixed_precision.global_policy()\n",
    ],
)
def test_the_prefilter_still_skips_files_without_the_half_migrated_name(source):
    """``set_policy`` is a lead only where ``mixed_precision`` meets it (``spelling.may_name``,
    before any parse): these files are parsed neither by LibCST nor by the ``ast`` stage."""
    assert not migrate(source, Options(mode="check")).parsed
    assert syntax_stage.may_fire(source, RULES) == (False, None)  # no ``ast`` tree made either


def test_the_half_migrated_name_through_a_shim_of_two_stable_modules_gets_a_note():
    """``mixed_precision`` is Keras' or TensorFlow's, and neither has ``set_policy``: a "may be"
    note naming TF 2.4's function, and no fix (before issue 40.5: nothing)."""
    source = (
        "import tensorflow as tf\n\ntry:\n    from keras import mixed_precision\nexcept ImportError:\n"
        "    from tensorflow.keras import mixed_precision\nmixed_precision.set_policy('mixed_bfloat16')\n"
    )
    outcome = migrate(source, Options())
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU402", 7, "manual")]
    assert "may be `tf.keras.mixed_precision.set_policy`" in outcome.reports[0].message
    assert "use `tf.keras.mixed_precision.set_global_policy`" in outcome.reports[0].message
    assert outcome.code == source
