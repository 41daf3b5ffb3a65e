"""Checkpoints on an emulated pod, through the real CLI in the real TensorFlow interpreters.

A TPU pod runs the script once, on one client that is task 0 of the TPU workers' job, so a
checkpoint is written once and ``if resolver.task_id == 0: model.save(...)`` (the usual
pattern) saves and returns.  The emulated pod is that one program: every save lands where
the script says, once, and restores read it back.  (When every host ran the script, hosts
1..H-1 had their writes redirected to scratch folders, and the task-0 save deadlocked.)
"""


import pytest

from roundtrip_helpers import TF24, TF221, require_python
from test_pods import cli_run, host_results

pytestmark = pytest.mark.roundtrip

PROGRAM = """\
import json, os, sys
import numpy as np
import tensorflow as tf
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,), kernel_initializer="ones")])
    opt = tf.keras.optimizers.SGD(0.1)
    model.compile(opt, "mse")
x = np.arange(48, dtype="float32").reshape(16, 3) / 48.0
model.fit(x, np.ones((16, 2), "float32"), batch_size=8, epochs=1, verbose=0, shuffle=False)
saved = [w.numpy().tolist() for w in model.weights]
ckpt = tf.train.Checkpoint(model=model, optimizer=opt)
manager = tf.train.CheckpointManager(ckpt, os.path.join(out, "manager"), max_to_keep=2)
for _ in range(3):
    manager.save()
    ckpt.save(os.path.join(out, "plain", "c"))
    os.makedirs(os.path.join(out, "h5"), exist_ok=True)
    model.save_weights(os.path.join(out, "h5", "w.h5"))
    model.save(os.path.join(out, "model.h5"))
if resolver.task_id == 0:  # the usual pod pattern: the client is task 0
    model.save_weights(os.path.join(out, "chief", "w"))
model.fit(x, np.zeros((16, 2), "float32"), batch_size=8, epochs=1, verbose=0, shuffle=False)
ckpt.restore(manager.latest_checkpoint).assert_existing_objects_matched()
restored = [w.numpy().tolist() for w in model.weights]
fresh = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
fresh.load_weights(os.path.join(out, "h5", "w.h5"))
loaded = tf.keras.models.load_model(os.path.join(out, "model.h5"))
print("RESULT " + json.dumps({
    "restored": restored == saved,
    "h5": [w.numpy().tolist() for w in fresh.weights] == saved,
    "model_h5": [w.numpy().tolist() for w in loaded.weights] == saved,
    "plain": sorted(n for n in os.listdir(os.path.join(out, "plain")) if n.endswith(".index")),
    "manager": sorted(n for n in os.listdir(os.path.join(out, "manager")) if n.endswith(".index")),
    "chief": os.path.exists(os.path.join(out, "chief", "w.index")),
    "task": resolver.task_id,
    "weights": np.round(np.concatenate([np.ravel(w) for w in saved]), 5).tolist()}))
"""


@pytest.mark.parametrize("tf_name", ["2.21", "2.4"])
def test_a_pod_saves_once_and_restores_it(tf_name, tmp_path):
    python = require_python(TF221 if tf_name == "2.21" else TF24)
    script = tmp_path / "checkpoints.py"
    script.write_text(PROGRAM)
    scratch = tmp_path / "tmp"  # the run's temporary folder: what it leaves there, it leaked
    scratch.mkdir()
    # a TPU VM pod: its hosts have disks of their own (on a TPU Node's pod the TPU workers write
    # the checkpoints and reach gs:// only, so these local paths would fail, as the Node tests show)
    run = cli_run(python, script, hosts=4, label="checkpoints tf{} hosts=4".format(tf_name),
                  extra_env={"TMPDIR": str(scratch)}, tpu_env="vm")
    assert run.returncode == 0, run.describe()
    results = host_results(run)
    assert list(results) == [0] and run.stdout.count("RESULT ") == 1, run.describe()
    result = results[0]
    assert result["restored"] and result["h5"] and result["model_h5"], result
    # written once: the manager and ckpt.save share one save counter, 1..6 over the loop
    # (with four hosts each saving, every host wrote its own copy of each)
    assert result["plain"] == ["c-2.index", "c-4.index", "c-6.index"], result
    assert result["manager"] == ["ckpt-3.index", "ckpt-5.index"], result
    assert result["task"] == 0 and result["chief"], result
    # no scratch folder (the old per-host redirection's) is left behind
    assert not [p.name for p in scratch.iterdir() if p.name.startswith("migrate-tpu")], result
