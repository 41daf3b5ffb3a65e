"""The prefilter's second stage (codemod/syntax_stage.py): files whose only evidence is a
``.run(``, ``.compile(`` or ``lr=`` that no rule can act on skip the LibCST parse, and
nothing a rule would find is lost."""

import json
import subprocess
import sys

import pytest

from migrate_tpu.codemod import syntax_stage
from migrate_tpu.codemod.api import migrate
from migrate_tpu.codemod.options import Options
from migrate_tpu.codemod.rule import select_rules

RULES = select_rules((), (), "2.4")
TF = "import tensorflow as tf\n"


def needed(source: str) -> bool:
    return syntax_stage.may_fire(source, RULES)[0]


@pytest.mark.parametrize(
    "source",
    [
        TF + "from absl import app\n\ndef main(argv):\n    pass\n\napp.run(main)\n",
        TF + "import absl.app as absl_app\n\nabsl_app.run(main)\n",
        TF + "import re\n\nPATTERN = re.compile('a+', re.I)\n",
        TF + "def schedule(step, lr=0.1, decay=0.5):\n    lr = lr * decay\n    return lr\n",
        TF + "model.compile(optimizer)\n",  # one positional argument: nothing moved
    ],
)
def test_evidence_no_rule_can_act_on_skips_libcst(source):
    assert not needed(source)
    assert migrate(source, Options()).reports == []


@pytest.mark.parametrize(
    "source, rule",
    [
        (TF + "strategy = tf.distribute.TPUStrategy(r)\n\ndef step(x):\n    return x\n\nstrategy.run(step, args=(1,))\n", "TPU301"),
        (TF + "def train(strategy, step):\n    return strategy.run(step)\n", "TPU301"),
        (TF + "model.compile('sgd', 'mse', ['accuracy'], None)\n", "TPU401"),
        (TF + "opt = tf.keras.optimizers.SGD(lr=0.1)\n", "TPU405"),
    ],
)
def test_what_a_rule_acts_on_goes_to_libcst(source, rule):
    assert needed(source)
    assert rule in [r.rule for r in migrate(source, Options()).reports]


@pytest.mark.parametrize(
    "source",
    [
        TF + "from absl import app\napp = make_strategy()\napp.run(step)\n",  # rebound: may be anything
        TF + "from config import *\nfrom absl import app\napp.run(step)\n",  # a star import may rebind it
        TF + "from . import app\napp.run(step)\n",  # this project's own module
        TF + "app.run(main\n",  # the standard parser refuses it: LibCST reports the error
        TF + "from absl import app\napp.run(main)\ns = tf.distribute.experimental.TPUStrategy(r)\n",  # other evidence
    ],
)
def test_doubt_goes_to_libcst(source):
    assert needed(source)


def test_a_rule_without_a_test_is_not_asked_and_no_tree_is_made():
    needed_here, tree = syntax_stage.may_fire(TF + "s = tf.distribute.experimental.TPUStrategy(r)\n", RULES)
    assert needed_here and tree is None


def test_a_strategy_imported_from_the_project_is_not_skipped(tmp_path):
    """``from setup import app`` where setup.py holds a TPUStrategy: the stage asks the
    project's modules, as the rule does, and the eager run is still fixed."""
    (tmp_path / "setup.py").write_text(TF + "app = tf.distribute.TPUStrategy(resolver)\n")
    (tmp_path / "train.py").write_text(TF + "from setup import app\n\n\ndef step(x):\n    return x * 2\n\n\napp.run(step, args=(1,))\n")
    done = subprocess.run(
        [sys.executable, "-m", "migrate_tpu", "check", "--no-cache", "--format", "json", str(tmp_path)],
        capture_output=True, text=True,
    )
    findings = json.loads(done.stdout)["findings"]
    assert [(f["path"].rsplit("/", 1)[-1], f["rule"]) for f in findings] == [("train.py", "TPU301")]
