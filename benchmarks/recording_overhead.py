"""The recorder's own cost per step, in one process (no start-up to drown it).

Run with a TensorFlow interpreter:
    PYTHONPATH=. ~/.cache/migrate-tpu/envs/tf2.21/bin/python benchmarks/recording_overhead.py [STEPS] [ROUNDS]

The emulated TPU (8 replicas) runs a warm tf.function training step (the loop of
tests/verify/programs/train_loop.py) STEPS times without the recorder, then STEPS times
with it, ROUNDS times in turn; the fastest of each is compared (load only adds time).
Prints the ratio; exit status 1 when recording costs more than 10%.
"""

import os
import shutil
import sys
import tempfile
import time

from migrate_tpu.runtime.record import recorder
from migrate_tpu.runtime.process import runner


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    runner.setup(runner.SetupOptions(replicas=8, tf_api="2.4", quiet=True))
    import numpy as np
    import tensorflow as tf

    strategy = tf.distribute.TPUStrategy(tf.distribute.cluster_resolver.TPUClusterResolver(tpu=""))
    features = np.linspace(-1.0, 1.0, 64 * 4, dtype=np.float32).reshape(64, 4)
    labels = (features.sum(axis=1, keepdims=True) > 0).astype(np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(16)
    with strategy.scope():
        kernel = tf.Variable(tf.ones([4, 1]) * 0.1)
        optimizer = tf.keras.optimizers.SGD(0.1)

    @tf.function
    def train_step(iterator):
        def step_fn(batch):
            x, y = batch
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(y, tf.matmul(x, kernel)))
            optimizer.apply_gradients(zip(tape.gradient(loss, [kernel]), [kernel]))
            return loss
        return strategy.reduce("SUM", strategy.run(step_fn, args=(next(iterator),)), axis=None)

    iterator = iter(strategy.experimental_distribute_dataset(dataset))
    for _ in range(5):  # warm: traced, and the pipeline filled
        train_step(iterator)

    def loop():
        started = time.perf_counter()
        for _ in range(steps):
            float(train_step(iterator))
        return time.perf_counter() - started

    plain, recorded = [], []
    folder = tempfile.mkdtemp(prefix="migrate-tpu-overhead-")
    try:
        for index in range(rounds):
            plain.append(loop())
            recording = recorder.install(os.path.join(folder, "record{}.json".format(index)))
            recorded.append(loop())
            recording.finish(0)
            recorder.uninstall()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    ratio = min(recorded) / min(plain)
    print("{} warm steps, fastest of {} rounds: plain {:.3f}s, recorded {:.3f}s: recording {:.3f} x plain "
          "({:+.2f} ms a step)".format(steps, rounds, min(plain), min(recorded), ratio,
                                        (min(recorded) - min(plain)) / steps * 1000))
    print("  plain:    " + ", ".join("{:.3f}".format(t) for t in plain))
    print("  recorded: " + ", ".join("{:.3f}".format(t) for t in recorded))
    return 0 if ratio <= 1.10 else 1


if __name__ == "__main__":
    sys.exit(main())
