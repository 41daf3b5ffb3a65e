"""Cases the real-code report (docs/real-code.md) found wrong or silent, each across the
modules of a tree as the project found them: the CLI is run on a directory so that the
project lookup (``codemod/project.py``) sees the other module."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _cli(tmp_path, select, *args):
    return subprocess.run(
        [sys.executable, "-m", "migrate_tpu", *args, "--no-cache", "--select", select, str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )


def _findings(tmp_path, select):
    done = _cli(tmp_path, select, "check", "--format", "json")
    return [(f["path"].rsplit("/", 1)[-1], f["rule"], f["line"], f["safety"], f["message"]) for f in json.loads(done.stdout)["findings"]]


GAN_BASE = """\
class GanTrainer(object):
  def compile(self, gen_model, dis_model, gen_optimizer, dis_optimizer):
    self.gen_model = gen_model
"""

MELGAN = """\
import tensorflow as tf
from trainers.base import GanTrainer


class MelganTrainer(GanTrainer):
  def compile(self, gen_model, dis_model, gen_optimizer, dis_optimizer, pqmf):
    super().compile(gen_model, dis_model, gen_optimizer, dis_optimizer)
"""


@pytest.mark.slow  # the CLI four times
def test_super_compile_of_a_tree_base_with_its_own_compile_is_left_alone(tmp_path):
    """TensorFlowTTS's MelGAN trainer: `super().compile` reaches a GAN trainer's own `compile`
    in another module of the tree, not Keras' `Model.compile`: no finding, no change."""
    (tmp_path / "trainers").mkdir()
    (tmp_path / "trainers" / "__init__.py").write_text("")
    (tmp_path / "trainers" / "base.py").write_text(GAN_BASE)
    (tmp_path / "melgan.py").write_text(MELGAN)
    assert _findings(tmp_path, "TPU401") == []
    _cli(tmp_path, "TPU401", "fix", "--unsafe-fixes")
    assert (tmp_path / "melgan.py").read_text() == MELGAN
    # The same base as a Keras model: Keras' `compile`, fixed safely.
    (tmp_path / "trainers" / "base.py").write_text("import tensorflow as tf\n\n\nclass GanTrainer(tf.keras.Model):\n  pass\n")
    assert _findings(tmp_path, "TPU401") == [
        ("melgan.py", "TPU401", 7, "safe", "positional arguments after `loss` bind to other parameters in TF 2.4"),
    ]
    _cli(tmp_path, "TPU401", "fix")
    # Longer than the file's lines (and PEP 8's 79): one argument to a line, under the ``(``.
    assert (tmp_path / "melgan.py").read_text().endswith(
        "    super().compile(gen_model,\n"
        "                    dis_model,\n"
        "                    metrics=gen_optimizer,\n"
        "                    loss_weights=dis_optimizer)\n"
    )


STAND_IN = """\
class SingleDeviceStrategy(object):
  def experimental_run_v2(self, fn, args, kwargs): return fn(*args, **kwargs)
"""

TRAINER = """\
import tensorflow as tf
class Trainer(object):
  def __init__(self, strategy): self.strategy = strategy
  @tf.function
  def step(self, x):
    return self.strategy.experimental_run_v2(tf.square, args=(x,), kwargs={})
"""

TPU_ONLY = """\
import tensorflow as tf
strategy = tf.distribute.experimental.TPUStrategy(tf.distribute.cluster_resolver.TPUClusterResolver("t"))
@tf.function
def step(x): return strategy.experimental_run_v2(tf.square, args=(x,))
"""


@pytest.mark.slow  # the CLI several times
def test_experimental_run_v2_that_may_reach_a_stand_in_class_of_another_module_is_unsafe(tmp_path):
    """A trainer's strategy comes from a parameter, and another module of the tree (not even
    imported here) defines a stand-in with `experimental_run_v2` and no `run`: renaming the call
    would raise AttributeError on the non-TPU path, so the fix is unsafe and names the class.
    A receiver that can only be a TPUStrategy is renamed safely, as before."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "utils.py").write_text(STAND_IN)
    (tmp_path / "lib" / "train.py").write_text(TRAINER)
    (tmp_path / "lib" / "tpu.py").write_text(TPU_ONLY)
    assert _findings(tmp_path, "TPU101") == [
        ("tpu.py", "TPU101", 4, "safe", "`experimental_run_v2` was renamed to `run`"),
        (
            "train.py", "TPU101", 6, "unsafe",
            "`experimental_run_v2` was renamed to `run`; `self.strategy` may be an instance of the tree's "
            "`SingleDeviceStrategy` (utils.py), which defines `experimental_run_v2` and no `run`: add "
            "`run = experimental_run_v2` to that class (or rename both), or this call raises AttributeError on it",
        ),
    ]
    _cli(tmp_path, "TPU101", "fix")
    assert (tmp_path / "lib" / "train.py").read_text() == TRAINER
    assert "strategy.run(tf.square" in (tmp_path / "lib" / "tpu.py").read_text()
    # Once the stand-in has `run` too, the rename is safe everywhere.
    (tmp_path / "lib" / "utils.py").write_text(STAND_IN + "  run = experimental_run_v2\n")
    assert [(f[0], f[3]) for f in _findings(tmp_path, "TPU101")] == [("train.py", "safe")]


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_a_stand_in_of_one_project_does_not_reach_another_in_the_same_run(tmp_path):
    """A run over several projects (the real-code corpus, a folder of checkouts): each project is
    the folder right under the run's folder unless a marker (`setup.py`, ...) says otherwise, so
    one project's stand-in class does not make another project's renames unsafe."""
    (tmp_path / "gsoc" / "lib").mkdir(parents=True)
    (tmp_path / "gsoc" / "lib" / "utils.py").write_text(STAND_IN)
    (tmp_path / "gsoc" / "lib" / "train.py").write_text(TRAINER)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "train.py").write_text(TRAINER)
    assert [(f[0], f[3]) for f in _findings(tmp_path, "TPU101")] == [("train.py", "unsafe"), ("train.py", "safe")]
    # A marker makes `gsoc/lib` a project of its own, and the stand-in is still beside the trainer.
    (tmp_path / "gsoc" / "lib" / "setup.py").write_text("")
    assert [(f[0], f[3]) for f in _findings(tmp_path, "TPU101")] == [("train.py", "unsafe"), ("train.py", "safe")]
