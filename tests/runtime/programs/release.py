"""What a program sees of its TensorFlow release: versions, Keras optimizers, the mixed
precision API.  Prints ``RESULT {json}``: each probe's value or ``{"error": type, "message"}``.
Runs bare on real TF 2.1.0 / 2.4.1 (the truth) and under ``python -m migrate_tpu.runtime
--tf-api 2.1|2.4`` on newer ones; Python 3.7 syntax."""
import json
import os
import sys

import tensorflow as tf

obs = {}


def probe(name, fn):
    try:
        value = fn()
    except Exception as error:  # noqa: BLE001 - the error is the observation
        value = {"error": type(error).__name__, "message": str(error)[:200]}
    obs[name] = value


# --- versions, as this program reads them
probe("tf.__version__", lambda: tf.__version__)
probe("tf.version.VERSION", lambda: tf.version.VERSION)
probe("tf.version.GIT_VERSION", lambda: tf.version.GIT_VERSION)
probe("tf.compat.v1.__version__", lambda: tf.compat.v1.__version__)
probe("tf.compat.v1.VERSION", lambda: tf.compat.v1.VERSION)
probe("tf.compat.v2.__version__", lambda: tf.compat.v2.__version__)
probe("tf.keras.__version__", lambda: tf.keras.__version__)
probe("getattr", lambda: getattr(tf, "__version__"))


def imported_version():
    from tensorflow import __version__
    return __version__


probe("from tensorflow import __version__", imported_version)


def guard():
    if tuple(map(int, tf.__version__.split(".")[:2])) >= (2, 2):
        return "strategy.run"
    return "strategy.experimental_run_v2"


probe("version guard", guard)


@tf.function
def traced_guard():  # AutoGraph runs this from a generated file: still this program's code
    if tuple(map(int, tf.__version__.split(".")[:2])) >= (2, 2):
        return tf.constant(22)
    return tf.constant(21)


probe("version guard in a tf.function", lambda: int(traced_guard()))


def read_as_a_library():  # code whose file is TensorFlow's reads the real version
    namespace = {"tf": tf, "__name__": "tensorflow.python.probe"}
    exec(compile("version = tf.__version__", os.path.join(os.path.dirname(tf.__file__), "probe.py"), "exec"),
         namespace)
    return namespace["version"]


probe("_real version, as TensorFlow reads it", read_as_a_library)
if "migrate_tpu.runtime.surfaces.emulation" in sys.modules:
    from migrate_tpu.runtime.surfaces import emulation
    probe("_runtime's version", lambda: emulation.tf_version())

# --- Keras optimizers: by class, by name, in compile
probe("Adam", lambda: type(tf.keras.optimizers.Adam()).__name__)


def iterations_name(make):
    opt = make()
    variable = tf.Variable(1.0)
    opt.apply_gradients([(tf.constant(0.5), variable)])
    return opt.iterations.name.split(":")[0]


probe("Adam() iterations", lambda: iterations_name(lambda: tf.keras.optimizers.Adam(0.1)))
probe("SGD(lr=, decay=) iterations", lambda: iterations_name(lambda: tf.keras.optimizers.SGD(lr=0.1, decay=0.01)))
probe("get('adam') iterations", lambda: iterations_name(lambda: tf.keras.optimizers.get("adam")))


def imported_adam():
    from tensorflow.keras.optimizers import Adam
    return iterations_name(Adam)


probe("from tensorflow.keras.optimizers import Adam: iterations", imported_adam)


def compiled(optimizer):
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
    model.compile(optimizer=optimizer, loss="mse")
    model.train_on_batch(tf.ones([4, 2]), tf.ones([4, 1]))
    return model.optimizer.iterations.name.split(":")[0]


probe("compile(optimizer='adam') iterations", lambda: compiled("adam"))
probe("compile(optimizer='sgd') iterations", lambda: compiled("sgd"))



# --- Keras initializers follow tf.random.set_seed (tf-keras draws unseeded ones from Python's random)
def initialized():
    tf.random.set_seed(3)
    first = tf.keras.initializers.GlorotUniform()([2, 2]).numpy().ravel().tolist()
    again = tf.keras.initializers.GlorotUniform()([2, 2]).numpy().ravel().tolist()
    tf.random.set_seed(3)
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(2,))])
    return {"first": [float(v).hex() for v in first], "second differs": first != again,
            "a Dense's kernel after set_seed(3) again": model.weights[0].numpy().ravel().tolist() == first}


probe("GlorotUniform after tf.random.set_seed(3)", initialized)

# --- mixed precision: the experimental LossScaleOptimizer(optimizer, loss_scale)
LSO = lambda: tf.keras.mixed_precision.experimental.LossScaleOptimizer  # noqa: E731
LOSS_SCALES = lambda: tf.mixed_precision.experimental  # noqa: E731


def loss_scale_of(opt):
    scale = opt.loss_scale
    return float(scale() if callable(scale) else scale)


def scaled_step(opt):
    """One step: the loss scale's value and the updated variable (dynamic: no change on a
    finite gradient)."""
    variable = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        loss = opt.get_scaled_loss(variable * 3.0)
    grads = opt.get_unscaled_gradients(tape.gradient(loss, [variable]))
    opt.apply_gradients(zip(grads, [variable]))
    return [loss_scale_of(opt), float(variable.numpy())]


probe("LSO(opt, 'dynamic')", lambda: scaled_step(LSO()(tf.keras.optimizers.SGD(0.1), "dynamic")))
probe("LSO(optimizer=, loss_scale=)", lambda: scaled_step(LSO()(optimizer=tf.keras.optimizers.SGD(0.1),
                                                                  loss_scale="dynamic")))
probe("LSO(opt, 128)", lambda: scaled_step(LSO()(tf.keras.optimizers.SGD(0.1), 128)))
probe("LSO(opt, FixedLossScale(64))", lambda: scaled_step(
    LSO()(tf.keras.optimizers.SGD(0.1), LOSS_SCALES().FixedLossScale(64))))
probe("LSO(opt, DynamicLossScale(1024, 100))", lambda: scaled_step(
    LSO()(tf.keras.optimizers.SGD(0.1), LOSS_SCALES().DynamicLossScale(initial_loss_scale=1024,
                                                                       increment_period=100))))
probe("LSO(opt, 'bogus')", lambda: loss_scale_of(LSO()(tf.keras.optimizers.SGD(0.1), "bogus")))
probe("LSO(opt)", lambda: loss_scale_of(LSO()(tf.keras.optimizers.SGD(0.1))))
probe("isinstance(LSO(...), experimental.LossScaleOptimizer)",
      lambda: isinstance(LSO()(tf.keras.optimizers.SGD(0.1), "dynamic"), LSO()))


# the experimental Policy and its loss scale (TF 2.1 to 2.4; the guide prints policy.loss_scale)
POLICY = lambda: tf.keras.mixed_precision.experimental.Policy  # noqa: E731
probe("repr(Policy('mixed_float16'))", lambda: repr(POLICY()("mixed_float16")))
probe("Policy('mixed_float16').loss_scale", lambda: str(POLICY()("mixed_float16").loss_scale))
probe("Policy('mixed_float16', loss_scale=1024)", lambda: [str(POLICY()("mixed_float16", loss_scale=1024).loss_scale),
                                                            POLICY()("mixed_float16", loss_scale=1024).get_config()])
probe("Policy('float32').loss_scale", lambda: [str(POLICY()("float32").loss_scale), POLICY()("float32").get_config()])


def imported_experimental():
    from tensorflow.keras.mixed_precision import experimental as mixed_precision
    return sorted(n for n in dir(mixed_precision) if not n.startswith("_"))


probe("from tensorflow.keras.mixed_precision import experimental", imported_experimental)
# TF 2.4's non-experimental class (AttributeError on TF 2.1.0)
probe("mixed_precision.LossScaleOptimizer(opt, dynamic=, initial_scale=, dynamic_growth_steps=)",
      lambda: scaled_step(tf.keras.mixed_precision.LossScaleOptimizer(
          tf.keras.optimizers.SGD(0.1), dynamic=True, initial_scale=1024, dynamic_growth_steps=100)))
probe("mixed_precision.LossScaleOptimizer(opt, dynamic=False, initial_scale=8)",
      lambda: scaled_step(tf.keras.mixed_precision.LossScaleOptimizer(
          tf.keras.optimizers.SGD(0.1), dynamic=False, initial_scale=8)))
print("RESULT " + json.dumps(obs, sort_keys=True))
