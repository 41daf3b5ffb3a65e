"""The shim of 2020 (mead-baseline and others) that gave TF 2.1 the ``run`` of TF 2.2::

    if not hasattr(tf.distribute.Strategy, 'run'):
        tf.distribute.Strategy.run = tf.distribute.Strategy.experimental_run_v2

Prints ``RESULT {json}``: which classes have ``run`` and ``experimental_run_v2`` before and
after it, and what ``strategy.run`` of a ``tf.function`` step gives on a ``MirroredStrategy``
(bare, on the real TF 2.1.0: the truth) and, under the runtime, on the emulated
``TPUStrategy`` (``_tpu``: no TPU to compare it with).  On TF 2.4.1 (``--tf-api 2.4``) the shim does nothing.
Python 3.7 syntax."""
import json
import sys

import numpy as np
import tensorflow as tf

emulated = "migrate_tpu.runtime.surfaces.emulation" in sys.modules
CLASSES = (("tf.distribute.Strategy", lambda: tf.distribute.Strategy),
           ("tf.distribute.MirroredStrategy", lambda: tf.distribute.MirroredStrategy),
           ("tf.distribute.OneDeviceStrategy", lambda: tf.distribute.OneDeviceStrategy),
           ("tf.distribute.experimental.TPUStrategy", lambda: tf.distribute.experimental.TPUStrategy),
           ("tf.compat.v1.distribute.experimental.TPUStrategy",
            lambda: tf.compat.v1.distribute.experimental.TPUStrategy))
NAMES = ("run", "experimental_run_v2")


def classes_having(name):
    return [key for key, get in CLASSES if hasattr(get(), name)]


result = {"before": {name: classes_having(name) for name in NAMES}}
if emulated:
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    tpu = tf.distribute.experimental.TPUStrategy(resolver)
    result["_tpu has run, before"] = hasattr(tpu, "run")

if not hasattr(tf.distribute.Strategy, 'run'):
    tf.distribute.Strategy.run = tf.distribute.Strategy.experimental_run_v2

result["after"] = {name: classes_having(name) for name in NAMES}
mirrored = tf.distribute.MirroredStrategy(["/cpu:0"])
one = tf.distribute.OneDeviceStrategy("/cpu:0")


@tf.function
def step(x):
    return x * 2.0


def local(strategy, value):
    return [float(v) for v in strategy.experimental_local_results(value)]


result["MirroredStrategy has run"] = hasattr(mirrored, "run")
result["MirroredStrategy.run(step)"] = local(mirrored, mirrored.run(step, args=(tf.constant(1.5),)))
result["OneDeviceStrategy.run(step)"] = local(one, one.run(step, args=(tf.constant(1.5),)))
if hasattr(mirrored, "experimental_run_v2"):  # not on TF 2.4.1
    result["MirroredStrategy.experimental_run_v2(step)"] = local(
        mirrored, mirrored.experimental_run_v2(step, args=(tf.constant(1.5),)))


def fit(strategy):
    """Keras's fit calls the strategy's run (TensorFlow's own, whatever the program assigned)."""
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,), kernel_initializer="ones")])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
    history = model.fit(np.full((32, 3), 0.5, np.float32), np.ones((32, 1), np.float32), batch_size=16, epochs=2,
                        verbose=0)
    return [round(loss, 5) for loss in history.history["loss"]]


result["OneDeviceStrategy fit"] = fit(one)
if emulated:
    result["_tpu fit"] = fit(tpu)
    result["_tpu has run, after"] = hasattr(tpu, "run")
    result["_tpu.run(step)"] = local(tpu, tpu.run(step, args=(tf.constant(1.5),)))
    result["_tpu.run is Strategy.run"] = type(tpu).run is tf.distribute.Strategy.run
print("RESULT " + json.dumps(result, sort_keys=True))
