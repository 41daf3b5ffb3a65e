"""Checkpoints on an emulated pod, through the real CLI in the real TensorFlow interpreters.

A real TPU pod runs the script once, so a checkpoint is written once.  The emulated pod runs
it on every host: host 0 writes where the script says, the other hosts write the same bytes
to a private folder, and every host restores host 0's files.  Before, H hosts saved to the
same files at once (at H = 4: ``MergeV2Checkpoints`` found another host's ``_temp`` folder
gone, h5py ``unable to lock file``).
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
if resolver.task_id > 0:
    # the other hosts' managers start once host 0 has saved, so they recover its checkpoint
    # state from the shared folder and would sweep its files (a case that used to delete them)
    import time
    deadline = time.time() + 120
    while not os.path.exists(os.path.join(out, "manager", "checkpoint")) and time.time() < deadline:
        time.sleep(0.05)
manager = tf.train.CheckpointManager(ckpt, os.path.join(out, "manager"), max_to_keep=2)
for _ in range(3):
    manager.save()
    ckpt.save(os.path.join(out, "plain", "c"))
    os.makedirs(os.path.join(out, "h5"), exist_ok=True)
    model.save_weights(os.path.join(out, "h5", "w.h5"))
    model.save(os.path.join(out, "model.h5"))
# a save that only host 1 makes (a probe: a TPU pod has no such code) lands in its own folder
if resolver.task_id == 1:
    ckpt.save(os.path.join(out, "host1", "c"))
# every host restores host 0's files once they are all written (fit synchronises the hosts)
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
    "host1_files": sorted(os.listdir(os.path.join(out, "host1"))) if os.path.isdir(os.path.join(out, "host1")) else [],
    "weights": np.round(np.concatenate([np.ravel(w) for w in saved]), 5).tolist()}))
"""


@pytest.mark.parametrize("tf_name", ["2.21", "2.4"])
def test_every_host_saves_and_restores_host_0s_checkpoints(tf_name, tmp_path):
    python = require_python(TF221 if tf_name == "2.21" else TF24)
    script = tmp_path / "checkpoints.py"
    script.write_text(PROGRAM)
    run = cli_run(python, script, hosts=4, label="checkpoints tf{} hosts=4".format(tf_name))
    assert run.returncode == 0, run.describe()
    results = host_results(run)
    assert sorted(results) == [0, 1, 2, 3], run.describe()
    for host, result in results.items():
        assert result["restored"] and result["h5"] and result["model_h5"], (host, result)
        assert result["weights"] == results[0]["weights"], (host, result)
        # host 1's own save went to its private folder: nothing of it in the script's
        assert not any(name.startswith("c-") for name in result["host1_files"]), (host, result)
