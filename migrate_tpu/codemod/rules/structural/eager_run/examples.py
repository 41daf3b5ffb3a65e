"""TPU301's examples: the code it fixes, reports and leaves alone (the rule examples test runs each)."""

from __future__ import annotations

from migrate_tpu.codemod.framework.rule import Expected, tf_example

# The start of every finding's message (after the callable's name).
BASE = "is a plain Python function passed to an eager `run`; TPUStrategy rejects it outside `tf.function`"

EXAMPLES = (
    tf_example(
        before="""\
strategy = tf.distribute.TPUStrategy(resolver)


def step_fn(x):
    return x * 2


result = strategy.run(step_fn, args=(1.0,))
""",
        after="""\
strategy = tf.distribute.TPUStrategy(resolver)


@tf.function
def step_fn(x):
    return x * 2


result = strategy.run(step_fn, args=(1.0,))
""",
        expected=(Expected("safe", 8, 23, f"`step_fn` {BASE}"),),
    ),
    tf_example(
        before="""\
strategy = tf.distribute.MirroredStrategy()


def step_fn(x):
    print(x.numpy())
    return x


strategy.run(step_fn, args=(tf.constant(1.0),))
""",
    ),
    # TF-Agents' wrapper of tf.function: the call is traced, nothing to report.
    tf_example(
        before="""\
from tf_agents.utils import common

strategy = tf.distribute.TPUStrategy(resolver)


def step_fn(x):
    return x * 2


@common.function(autograph=True)
def train(x):
    return strategy.run(step_fn, args=(x,))
""",
    ),
    # A body that creates variables fails once wrapped: reported as unsafe, not fixed.
    tf_example(
        before="""\
strategy = tf.distribute.TPUStrategy(resolver)


def step_fn(x):
    return tf.keras.layers.Dense(4)(x)


strategy.run(step_fn, args=(x,))
""",
        expected=(
            Expected(
                "unsafe",
                8,
                14,
                f"`step_fn` {BASE}; in a `tf.function` its Python code runs only while tracing, and the "
                "body has `tf.keras.layers.Dense(...)` (creates variables); a `tf.function` may create "
                "variables only on its first trace, so such a body fails once wrapped",
            ),
        ),
    ),
    # TF1 graph code (a session runs what `run` built): not eager, so a note and no fix.
    tf_example(
        before="""\
strategy = tf.distribute.TPUStrategy(resolver)


def train_step(x):
    return x * 2


step = strategy.run(train_step, args=(features,))
with tf.compat.v1.Session() as session:
    session.run(step)
""",
        expected=(
            Expected(
                "manual",
                8,
                21,
                "`run` may be traced here: this file builds TF1 graphs (`tf.compat.v1.Session(...)`), "
                "where `run` is not eager; if it does not, `train_step` must be a `tf.function` "
                "(TPUStrategy rejects a plain function in eager `run`)",
            ),
        ),
    ),
    # The Keras backend's session is TF1 graph code too: a note, no fix.
    tf_example(
        before="""\
strategy = tf.distribute.TPUStrategy(resolver)


def eval_step(x):
    return x + 1


result = strategy.run(eval_step, args=(features,))
tf.compat.v1.keras.backend.get_session().run(result)
""",
        expected=(
            Expected(
                "manual",
                8,
                23,
                "`run` may be traced here: this file builds TF1 graphs "
                "(`tf.compat.v1.keras.backend.get_session(...)`), where `run` is not eager; if it does "
                "not, `eval_step` must be a `tf.function` (TPUStrategy rejects a plain function in eager "
                "`run`)",
            ),
        ),
    ),
    # A lambda that only calls a parameter is that parameter: its body is not in view, so the fix is unsafe.
    tf_example(
        before="""\
def warm_up(strategy, net, batch):
    strategy.run(lambda x: net(x, training=False), args=(batch,))
""",
        expected=(
            Expected(
                "unsafe",
                2,
                18,
                f"`lambda x: net(x, training=False)` {BASE}; wrapping it may change behaviour (it only "
                "calls `net`, a parameter whose body is not in view)",
            ),
        ),
        after="""\
def warm_up(strategy, net, batch):
    strategy.run(tf.function(lambda x: net(x, training=False)), args=(batch,))
""",
        unsafe_fixes=True,
    ),
    # A `try` that catches the eager failure: the code handles it on purpose (a fallback), so no fix.
    tf_example(
        before="""\
strategy = tf.distribute.TPUStrategy(resolver)
try:
    strategy.run(lambda x: layer(x), args=(sample,))
except NotImplementedError:
    layer.build(sample.shape)
""",
        expected=(
            Expected(
                "manual",
                3,
                18,
                "`run` sits in a `try` whose `except NotImplementedError` catches the "
                "`NotImplementedError` that TPUStrategy raises for a plain function in eager `run`; the "
                "code may rely on it, so `lambda x: layer(x)` is left as it is: make it a `tf.function` if "
                "the TPU should run it",
            ),
        ),
    ),
    # A callable made on every iteration, reading nothing the loop changes: made once, before the loop.
    tf_example(
        before="""\
strategy = tf.distribute.TPUStrategy(resolver)
for batch in dataset:
    strategy.run(lambda x: x * 2, args=(batch,))
""",
        after="""\
strategy = tf.distribute.TPUStrategy(resolver)
step_fn = tf.function(lambda x: x * 2)
for batch in dataset:
    strategy.run(step_fn, args=(batch,))
""",
        expected=(
            Expected("safe", 3, 18, f"`lambda x: x * 2` {BASE}; it is made anew on every iteration of the loop: "
                     "it is made once before the loop, as `step_fn = tf.function(...)`"),
        ),
    ),
    # It reads what the loop changes: it cannot be made once, so a finding and no fix.
    tf_example(
        before="""\
strategy = tf.distribute.TPUStrategy(resolver)
for batch in dataset:
    strategy.run(lambda x: x * batch, args=(batch,))
""",
        expected=(
            Expected("manual", 3, 18, f"`lambda x: x * batch` {BASE}; `lambda x: x * batch` is made anew on every "
                     "iteration and reads `batch`, which the loop changes, so it cannot be made once before the loop: "
                     "pass what changes as an argument of `run` and build the step once"),
        ),
    ),
    # A def made on every call of a method, reading `self`: decorating it there would trace it again
    # on every call (issue 19: 80 times slower), so the fix is unsafe.
    tf_example(
        before="""\
class Trainer:
    def __init__(self, strategy):
        self.strategy = tf.distribute.TPUStrategy(strategy)

    def train_step(self, x):
        def step_fn(inputs):
            return inputs * self.scale

        return self.strategy.run(step_fn, args=(x,))
""",
        after="""\
class Trainer:
    def __init__(self, strategy):
        self.strategy = tf.distribute.TPUStrategy(strategy)

    def train_step(self, x):
        @tf.function
        def step_fn(inputs):
            return inputs * self.scale

        return self.strategy.run(step_fn, args=(x,))
""",
        unsafe_fixes=True,
        expected=(
            Expected("unsafe", 9, 34, f"`step_fn` {BASE}; `step_fn` is defined inside `train_step`, so it is traced "
                     "again on every call there; make it once, outside the function, or run it from a `tf.function`"),
        ),
    ),
    # A helper called from traced and from eager code: the eager call needs the fix.
    tf_example(
        before="""\
strategy = tf.distribute.TPUStrategy(resolver)


def step_fn(x):
    return x * 2


def helper(x):
    return strategy.run(step_fn, args=(x,))


@tf.function
def traced(x):
    return helper(x)


def eager(x):
    return helper(x)
""",
        after="""\
strategy = tf.distribute.TPUStrategy(resolver)


@tf.function
def step_fn(x):
    return x * 2


def helper(x):
    return strategy.run(step_fn, args=(x,))


@tf.function
def traced(x):
    return helper(x)


def eager(x):
    return helper(x)
""",
        expected=(Expected("safe", 9, 25, f"`step_fn` {BASE}"),),
    ),
    # A lambda handed to `tf.function` runs traced, however it is handed over: nothing to report.
    tf_example(
        before="""\
strategy = tf.distribute.TPUStrategy(resolver)
x = tf.constant(1.0)
y = tf.function(lambda: strategy.run(lambda t: t * 2, args=(x,)))()
z = tf.function(experimental_compile=True)(lambda: strategy.run(lambda t: t + 1, args=(x,)))()
""",
    ),
    # So does a def handed to `tf.function`'s factory (`tf.function(...)(train)`) and called only through it.
    tf_example(
        before="""\
strategy = tf.distribute.TPUStrategy(resolver)


def step_fn(x):
    return x * 2


def train(x):
    return strategy.run(step_fn, args=(x,))


train_step = tf.function(experimental_compile=True)(train)
train_step(1.0)
""",
    ),
    # A def handed to `tf.function` and also called as it is: there its `run` is eager. The
    # direct call may be on purpose (the eager path beside the traced one): a note, no fix.
    tf_example(
        before="""\
strategy = tf.distribute.TPUStrategy(resolver)


def step_fn(x):
    return x * 2


def train(x):
    return strategy.run(step_fn, args=(x,))


train_step = tf.function(train)
train(1.0)
""",
        expected=(
            Expected("manual", 9, 25, "`run` may be traced here: `train` is passed to `tf.function`, but also called as "
                     "it is (`train(...)`) outside any `tf.function`; if it does not, `step_fn` must be a `tf.function` "
                     "(TPUStrategy rejects a plain function in eager `run`)"),
        ),
    ),
)
