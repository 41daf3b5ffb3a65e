"""Why TPU301 does not wrap a step that creates variables: on real TF 2.4.1 it fails once wrapped.

The step below runs eagerly under ``MirroredStrategy.run`` (eager ``run`` is legal
there, and creates the layer's variables on each call). Decorated with
``@tf.function``, which TPU301 used to do as a safe fix, it fails on its first
call. TPU301 now reports it as unsafe and leaves it alone.
"""

import subprocess

import pytest

from migrate_tpu.codemod.migration.api import Options, migrate
from roundtrip_helpers import TF24, require_python

pytestmark = pytest.mark.roundtrip

STEP = """\
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy(["/cpu:0"])


def step_fn(x):
    return tf.keras.layers.Dense(2)(x)


print(strategy.run(step_fn, args=(tf.ones((1, 3)),)).shape)
"""


def test_a_variable_creating_step_fails_once_wrapped_on_tf_2_4():
    python = require_python(TF24)
    eager = subprocess.run([python, "-c", STEP], capture_output=True, text=True, timeout=300)
    assert eager.returncode == 0, eager.stderr
    wrapped = STEP.replace("def step_fn", "@tf.function\ndef step_fn")
    traced = subprocess.run([python, "-c", wrapped], capture_output=True, text=True, timeout=300)
    assert traced.returncode != 0
    assert "tf.function-decorated function tried to create variables on non-first call" in traced.stderr

    # With a TPU strategy in view, TPU301 reports the step as unsafe and does not decorate it.
    tpu = STEP.replace('tf.distribute.MirroredStrategy(["/cpu:0"])', "tf.distribute.TPUStrategy(resolver)")
    outcome = migrate(tpu, Options(select=("TPU301",), mode="fix"))
    assert outcome.code == tpu
    assert [(r.rule, r.safety, r.applied) for r in outcome.reports] == [("TPU301", "unsafe", False)]
