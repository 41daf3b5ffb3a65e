"""Cases the real-code report (docs/real-code.md) found wrong or silent, each across the
modules of a tree as the project found them: the CLI is run on a directory so that the
project lookup (``codemod/project.py``) sees the other module."""

from __future__ import annotations

import json
import subprocess
import sys


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
    assert "super().compile(gen_model, dis_model, metrics=gen_optimizer, loss_weights=dis_optimizer)" in (tmp_path / "melgan.py").read_text()
