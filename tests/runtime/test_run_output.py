"""What `migrate-tpu run` shows: the script's output, not TensorFlow's start-up noise; tracebacks
that end at the user's line, not in the emulation; a note where Keras 3 meets Keras 2 code.

The filter is tested alone (chunks cut anywhere), then through the real CLI on the real
TensorFlow interpreters, with and without --verbose.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
from roundtrip_helpers import REPO, TF24, TF221, require_python

from migrate_tpu.runtime.process.noise import NoiseFilter, is_noise

TF_2_21_START = (
    b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    b"I0000 00:00:1795567445.198517    3564 port.cc:153] oneDNN custom operations are on.\n"
    b"I0000 00:00:1795567445.198921    3564 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.\n"
    b"E0000 00:00:1795567448.491846    3564 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n"
)
TF_2_4_WARNING = b"WARNING:tensorflow:There are non-GPU devices in `tf.distribute.Strategy`, not using nccl allreduce.\n"
KEPT = (
    b"E0000 00:00:1795567448.491846    3564 session.cc:1] a real error\n"
    b"Traceback (most recent call last):\n"
    b"Epoch 1/2\r50%\r"
)


@pytest.mark.parametrize("size", [1, 3, 7, 64, 100000])
def test_the_filter_drops_noise_and_passes_the_rest_unchanged(size):
    data = TF_2_21_START + b"loss 0.5\n" + TF_2_4_WARNING + KEPT
    out = []
    lines = NoiseFilter(out.append)
    for start in range(0, len(data), size):
        lines.feed(data[start:start + size])
    lines.close()
    assert b"".join(out) == b"loss 0.5\n" + KEPT


def test_a_partial_line_that_cannot_be_noise_is_not_held_back():
    out = []
    NoiseFilter(out.append).feed(b"Password: ")
    assert out == [b"Password: "]
    assert not is_noise(b"WARNING:tensorflow:something else\n")


TPU_SCRIPT = textwrap.dedent("""\
    import tensorflow as tf
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.TPUStrategy(resolver)
    def step(x):
        return x * 2.0
    print(strategy.reduce("SUM", strategy.run(tf.function(step), args=(tf.constant(1.0),)), axis=None))
    print(strategy.run(step, args=(tf.constant(1.0),)))  # eager and plain: a TPU refuses it
""")


def _run(python, script, *options, env=None):
    environ = dict(os.environ, PYTHONPATH=str(REPO))
    environ.pop("TPU_NAME", None)
    environ.pop("TF_CPP_MIN_LOG_LEVEL", None)
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "migrate_tpu", "run", "--python", python, *options, str(script)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environ, timeout=600,
                          universal_newlines=True)


@pytest.mark.roundtrip
@pytest.mark.parametrize("env_name", [TF24, TF221])
def test_run_is_quiet_and_its_tracebacks_end_at_the_users_line(tmp_path, env_name):
    python = require_python(env_name)
    script = tmp_path / "train.py"
    script.write_text(TPU_SCRIPT)
    quiet = _run(python, script)
    assert quiet.returncode == 1, quiet.stderr
    assert "tf.Tensor(16.0" in quiet.stdout
    for noise in ("absl::InitializeLog", "cuInit", "I0000", "not using nccl allreduce"):
        assert noise not in quiet.stderr, quiet.stderr
    traceback = quiet.stderr[quiet.stderr.index("Traceback"):]
    assert "strategies.py" not in traceback and "migrate_tpu" not in traceback, traceback
    assert 'train.py", line 9' in traceback
    assert "of the TPU emulation left out; `migrate-tpu run --verbose` shows" in traceback
    assert traceback.rstrip().splitlines()[-1].startswith("NotImplementedError: TPUStrategy.run(fn, ...) does not support pure eager")

    verbose = _run(python, script, "--verbose")
    assert verbose.returncode == 1
    assert "strategies.py" in verbose.stderr  # every frame (the emulated run refused)
    expected_noise = "absl::InitializeLog" if env_name == TF221 else "not using nccl allreduce"
    assert expected_noise in verbose.stderr, verbose.stderr


KERAS_FIT = textwrap.dedent("""\
    import numpy as np
    import tensorflow as tf
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.TPUStrategy(resolver)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
    x, y = np.ones((64, 4), "float32"), np.ones((64, 1), "float32")
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    print("trained")
""")


@pytest.mark.roundtrip
def test_keras_3_gets_one_note_pointing_to_tf_keras(tmp_path):
    # TF 2.21 with TF_USE_LEGACY_KERAS=0 is what a user without tf-keras gets: Keras 3. 2020-era
    # fit with steps_per_execution > 1 fails there (an open Keras issue); the note says why and what to do.
    python = require_python(TF221)
    script = tmp_path / "fit.py"
    script.write_text(KERAS_FIT)
    keras_3 = _run(python, script, env={"TF_USE_LEGACY_KERAS": "0"})
    notes = [line for line in keras_3.stderr.splitlines() if line.startswith("migrate-tpu run: note: tf.keras is Keras 3")]
    assert notes and "pip install tf-keras" in notes[0], keras_3.stderr
    if keras_3.returncode != 0:  # the failure itself is followed by the note too
        assert "You must feed a value for placeholder tensor" in keras_3.stderr
        assert len(notes) == 2
    keras_2 = _run(python, script)  # tf-keras installed: run picks it, no note
    assert keras_2.returncode == 0, keras_2.stderr
    assert "trained" in keras_2.stdout and "Keras 3" not in keras_2.stderr
