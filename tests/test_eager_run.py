"""TPU301 is never wrong: a ``run`` call is eager only when provably so, and the safe wrap is provably safe.

Each case states the TPU301 findings it expects: how many, whether a fix is
applied, and what the message says.
"""

import ast

import pytest

from migrate_tpu.codemod.migration.api import Options, migrate

HEADER = "import tensorflow as tf\n\nstrategy = tf.distribute.TPUStrategy(resolver)\n\n\n"
STEP = "def step_fn(x):\n    return x * 2\n\n\n"


def _tpu301(source, **options):
    options.setdefault("mode", "fix")
    outcome = migrate(source, Options(select=("TPU301",), **options))
    ast.parse(outcome.code)
    return outcome, [r for r in outcome.reports if r.rule == "TPU301"]


@pytest.mark.parametrize(
    "decorator",
    ["@common.function(autograph=True)", "@common.function", "@common.function()", "@def_function.function"],
)
def test_no_finding_under_a_library_wrapper_of_tf_function(decorator):
    source = (
        "from tf_agents.utils import common\nfrom tensorflow.python.eager import def_function\n"
        + HEADER + STEP + f"{decorator}\ndef train(x):\n    return strategy.run(step_fn, args=(x,))\n"
    )
    outcome, found = _tpu301(source)
    assert found == [] and outcome.code == source


SAME_FILE_WRAPPERS = {
    "functools.wraps": (
        "def traced(fn):\n"
        "    @functools.wraps(fn)\n"
        "    def wrapper(*args):\n"
        "        return fn(*args)\n"
        "    return tf.function(wrapper)\n\n\n",
        "@traced",
    ),
    "decorated wrapper": (
        "def traced(fn):\n"
        "    @tf.function\n"
        "    @functools.wraps(fn)\n"
        "    def wrapper(*args):\n"
        "        return fn(*args)\n"
        "    return wrapper\n\n\n",
        "@traced",
    ),
    "factory": (
        "def traced(**options):\n"
        "    def decorate(fn):\n"
        "        return tf.function(fn, **options)\n"
        "    return decorate\n\n\n",
        "@traced(autograph=False)",
    ),
}


@pytest.mark.parametrize("case", sorted(SAME_FILE_WRAPPERS))
def test_no_finding_under_a_same_file_decorator_that_returns_tf_function(case):
    definition, decorator = SAME_FILE_WRAPPERS[case]
    source = "import functools\n" + HEADER + STEP + definition + f"{decorator}\ndef train(x):\n    return strategy.run(step_fn, args=(x,))\n"
    outcome, found = _tpu301(source)
    assert found == [] and outcome.code == source


def test_an_unknown_decorator_gets_a_note_and_no_fix():
    source = HEADER + STEP + "@somelib.mystery\ndef train(x):\n    return strategy.run(step_fn, args=(x,))\n"
    outcome, found = _tpu301(source)
    assert outcome.code == source
    assert [(r.safety, r.applied) for r in found] == [("manual", False)]
    assert "may be traced" in found[0].message and "@somelib.mystery" in found[0].message


def test_an_unknown_decorator_on_the_step_gets_a_note_and_no_fix():
    source = HEADER + "@somelib.mystery\n" + STEP + "strategy.run(step_fn, args=(1.0,))\n"
    outcome, found = _tpu301(source)
    assert outcome.code == source
    assert [(r.safety, r.applied) for r in found] == [("manual", False)]


def test_a_same_file_decorator_that_does_not_trace_keeps_the_fix():
    source = HEADER + (
        "def logged(fn):\n    def wrapper(*args):\n        return fn(*args)\n    return wrapper\n\n\n"
        "@logged\ndef train(x):\n    return strategy.run(step_fn, args=(x,))\n\n\n" + STEP
    )
    outcome, found = _tpu301(source)
    assert [(r.safety, r.applied) for r in found] == [("safe", True)]
    assert "@tf.function\ndef step_fn(x):" in outcome.code


def test_gin_configurable_is_known_not_to_trace():
    source = "import gin\n" + HEADER + STEP + "@gin.configurable\ndef train(x):\n    return strategy.run(step_fn, args=(x,))\n"
    _, found = _tpu301(source)
    assert [(r.safety, r.applied) for r in found] == [("safe", True)]


VARIABLE_MAKERS = [
    "v = tf.Variable(1.0)",
    "layer = tf.keras.layers.Dense(4)",
    "model = tf.keras.Sequential([])",
    "opt = tf.keras.optimizers.Adam(0.1)",
    "metric = tf.keras.metrics.Mean()",
    "block = Block()",
]


@pytest.mark.parametrize("line", VARIABLE_MAKERS)
def test_a_body_that_creates_variables_is_not_safe_to_wrap(line):
    # On TF 2.4.1 such a step, decorated as the safe fix used to do, fails with
    # "tf.function-decorated function tried to create variables on non-first call"
    # (tests/roundtrip/test_variable_creating_step.py runs it).
    source = HEADER + (
        "class Block(tf.keras.layers.Layer):\n    pass\n\n\n"
        f"def step_fn(x):\n    {line}\n    return x\n\n\nstrategy.run(step_fn, args=(1.0,))\n"
    )
    outcome, found = _tpu301(source)
    assert outcome.code == source
    assert [(r.safety, r.applied) for r in found] == [("unsafe", False)]
    assert "creates variables" in found[0].message and "first trace" in found[0].message
    fixed, found = _tpu301(source, unsafe_fixes=True)
    assert [r.applied for r in found] == [True]


def test_a_learning_rate_schedule_creates_no_variables():
    source = HEADER + (
        "def step_fn(x):\n    schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9)\n    return x\n\n\n"
        "strategy.run(step_fn, args=(1.0,))\n"
    )
    _, found = _tpu301(source)
    assert [(r.safety, r.applied) for r in found] == [("safe", True)]


def test_the_message_names_the_method_as_it_reads_after_the_fix():
    source = HEADER + STEP + "strategy.experimental_run_v2(step_fn, args=(1.0,))\n"
    _, found = _tpu301(source, mode="check")
    assert "eager `run`" in found[0].message and "experimental_run_v2" not in found[0].message


@pytest.mark.parametrize(
    "source, in_view",
    [
        (HEADER + "from steps import step_fn\nstrategy.run(step_fn, args=(1.0,))\n", False),
        (HEADER + "strategy.run(undefined_step, args=(1.0,))\n", False),
        (HEADER + "def train(fn):\n    return strategy.run(fn, args=(1.0,))\n", True),
        (HEADER + "step = pick()\nstep = other()\nstrategy.run(step, args=(1.0,))\n", True),
    ],
)
def test_not_in_view_only_when_the_body_is_out_of_view(source, in_view):
    _, found = _tpu301(source, mode="check")
    assert [r.safety for r in found] == ["unsafe"]
    assert ("not in view" in found[0].message) is (not in_view), found[0].message


def test_a_factory_of_this_file_is_followed_to_the_def_it_returns():
    source = HEADER + (
        "def make_step(scale):\n    def scaled(x):\n        print(x)\n        return x * scale\n    return scaled\n\n\n"
        "step = make_step(2.0)\nstrategy.run(step, args=(1.0,))\n"
    )
    _, found = _tpu301(source, mode="check")
    assert [r.safety for r in found] == ["unsafe"]
    assert "`print()`" in found[0].message and "not in view" not in found[0].message


def test_a_callable_assigned_in_the_loop_moves_before_it():
    # `functools.partial` is not in view: the move is unsafe, applied only with --unsafe-fixes.
    loop_body = "    # scaled\n    step = functools.partial(step_fn, scale=2)\n    strategy.run(step, args=(batch,))\n"
    source = "import functools\n" + HEADER + STEP + "for batch in dataset:\n" + loop_body
    outcome, found = _tpu301(source)
    assert outcome.code == source
    assert [(r.safety, r.applied) for r in found] == [("unsafe", False)]
    assert found[0].suggestion.startswith("step = tf.function(functools.partial(step_fn, scale=2))  # once, before the loop")
    fixed, _ = _tpu301(source, unsafe_fixes=True)
    assert fixed.code == "import functools\n" + HEADER + STEP + (
        "# scaled\nstep = tf.function(functools.partial(step_fn, scale=2))\n"
        "for batch in dataset:\n    strategy.run(step, args=(batch,))\n"
    )
    # a factory of this file whose step is pure: safe
    pure = HEADER + (
        "def make_step(k):\n    def scaled(x):\n        return x * k\n    return scaled\n\n\n"
        "for batch in dataset:\n    step = make_step(2.0)\n    strategy.run(step, args=(batch,))\n"
    )
    outcome, found = _tpu301(pure)
    assert [(r.safety, r.applied) for r in found] == [("safe", True)]
    assert "step = tf.function(make_step(2.0))\nfor batch in dataset:\n    strategy.run(step, args=(batch,))\n" in outcome.code
    # read by other code of the loop: unsafe
    shared = pure.replace("    strategy.run(step,", "    print(step)\n    strategy.run(step,")
    assert [r.safety for r in _tpu301(shared)[1]] == ["unsafe"]


def test_an_annotated_assignment_in_the_loop_moves_before_it_too():
    # ``step: T = ...`` binds the name as ``step = ...`` does: it was read as an ``Assign`` and
    # ended the file's migration with an internal error (AttributeError: no ``targets``).
    source = HEADER + "from typing import Callable\n\nfor batch in dataset:\n    step: Callable = lambda v: v * 2\n    strategy.run(step, args=(batch,))\n"
    outcome, found = _tpu301(source)
    assert [(r.safety, r.applied) for r in found] == [("safe", True)]
    assert "step: Callable = tf.function(lambda v: v * 2)\nfor batch in dataset:\n    strategy.run(step, args=(batch,))\n" in outcome.code
    # Annotated without a value, the name is bound elsewhere: nothing moves, the step is reported.
    bare = source.replace("    step: Callable = lambda v: v * 2\n", "    step: Callable\n    step = make()\n")
    assert [r.applied for r in _tpu301(bare)[1]] == [False]


LOOP_CASES = {
    # issue 19: the lambda reads nothing the loop binds, so it is made once, before the loop
    "lambda": (
        "scale = 2.0\nfor batch in dataset:\n    strategy.run(lambda v: tf.reduce_sum(v) * scale, args=(batch,))\n",
        "scale = 2.0\nstep_fn_2 = tf.function(lambda v: tf.reduce_sum(v) * scale)\nfor batch in dataset:\n"
        "    strategy.run(step_fn_2, args=(batch,))\n",
    ),
    "factory call": (
        "def make_step(k):\n    def step(x):\n        return x * k\n    return step\n\n\n"
        "for batch in dataset:\n    strategy.run(make_step(3.0), args=(batch,))\n",
        "def make_step(k):\n    def step(x):\n        return x * k\n    return step\n\n\n"
        "step_2 = tf.function(make_step(3.0))\nfor batch in dataset:\n    strategy.run(step_2, args=(batch,))\n",
    ),
    # In a function the program runs once (called once, from module-level code outside a loop).
    "nested def, in a function": (
        "def train(dataset, scale):\n    # the loop\n    for batch in dataset:\n        # scaled\n"
        "        def inner(x):\n            return x * scale\n\n        strategy.run(inner, args=(batch,))\n"
        "\n\nif __name__ == '__main__':\n    train(dataset, 2.0)\n",
        "def train(dataset, scale):\n    # the loop\n    # scaled\n    @tf.function\n    def inner(x):\n"
        "        return x * scale\n    for batch in dataset:\n        strategy.run(inner, args=(batch,))\n"
        "\n\nif __name__ == '__main__':\n    train(dataset, 2.0)\n",
    ),
    "lambda, in the main function app.run starts": (
        "def main(argv):\n    for batch in dataset:\n        strategy.run(lambda v: v * 2, args=(batch,))\n\n\napp.run(main)\n",
        "def main(argv):\n    step_fn_2 = tf.function(lambda v: v * 2)\n    for batch in dataset:\n"
        "        strategy.run(step_fn_2, args=(batch,))\n\n\napp.run(main)\n",
    ),
    "outermost loop that keeps the names": (
        "for epoch in range(2):\n    for batch in dataset:\n        strategy.run(lambda v: v * 2, args=(batch,))\n",
        "step_fn_2 = tf.function(lambda v: v * 2)\nfor epoch in range(2):\n    for batch in dataset:\n"
        "        strategy.run(step_fn_2, args=(batch,))\n",
    ),
}


@pytest.mark.parametrize("case", sorted(LOOP_CASES))
def test_a_callable_made_per_iteration_is_made_once_before_the_loop(case):
    before, after = LOOP_CASES[case]
    # `step_fn` is taken by STEP: the new name collides with nothing.
    source = HEADER + STEP + before
    outcome, found = _tpu301(source)
    assert outcome.code == HEADER + STEP + after
    assert [(r.safety, r.applied) for r in found] == [("safe", True)]
    assert "before the loop" in found[0].message
    again, found_again = _tpu301(outcome.code)
    assert again.code == outcome.code and found_again == []


TRAIN_EPOCH = (
    "def train_epoch(dataset):\n    for batch in dataset:\n        strategy.run(lambda v: v * 2, args=(batch,))\n\n\n"
)


@pytest.mark.parametrize(
    "callers",
    [
        "for epoch in range(3):\n    train_epoch(dataset)\n",  # in a loop
        "train_epoch(dataset)\ntrain_epoch(dataset)\n",  # twice
        "",  # not called here: another module may call it on every epoch
        "def fit():\n    train_epoch(dataset)\n",  # from a function
    ],
    ids=["in a loop", "twice", "not called in the file", "from another function"],
)
def test_a_hoist_in_a_function_that_may_run_again_is_unsafe(callers):
    # Made before the loop, the tf.function would still be made, and traced, again on every
    # call of train_epoch: on a TPU a compilation per epoch. Never a safe fix.
    source = HEADER + TRAIN_EPOCH + callers
    outcome, found = _tpu301(source)
    assert outcome.code == source
    assert [(r.safety, r.applied, r.line) for r in found] == [("unsafe", False, 8)]
    assert "again on every call of `train_epoch`: safe only if `train_epoch` runs once per program" in found[0].message
    unsafe, found_unsafe = _tpu301(source, unsafe_fixes=True)
    assert "    step_fn = tf.function(lambda v: v * 2)\n    for batch in dataset:\n" in unsafe.code
    assert [(r.safety, r.applied) for r in found_unsafe] == [("unsafe", True)]


def test_a_method_holding_the_loop_is_unsafe_to_hoist_in():
    source = HEADER + (
        "class Trainer:\n    def epoch(self, dataset):\n        for batch in dataset:\n"
        "            strategy.run(lambda v: v * 2, args=(batch,))\n"
    )
    outcome, found = _tpu301(source)
    assert outcome.code == source
    assert [(r.safety, r.applied) for r in found] == [("unsafe", False)]
    assert "again on every call of `epoch`" in found[0].message


@pytest.mark.parametrize(
    "loop, changes",
    [
        ("for batch in dataset:\n    strategy.run(lambda v: v * batch, args=(batch,))\n", "which the loop changes"),
        ("for batch in dataset:\n    k = batch\n    strategy.run(make(k), args=(batch,))\n", "which the loop changes"),
        ("for batch in dataset:\n    step = make(batch)\n    strategy.run(step, args=(batch,))\n", "which the loop changes"),
        ("for e in range(2):\n    for batch in dataset:\n        strategy.run(lambda v: v * e, args=(batch,))\n",
         "which an outer loop changes"),
    ],
)
def test_a_callable_reading_what_the_loop_changes_gets_a_finding_and_no_fix(loop, changes):
    source = HEADER + loop
    outcome, found = _tpu301(source, unsafe_fixes=True)
    assert outcome.code == source
    assert [(r.safety, r.applied) for r in found] == [("manual", False)]
    assert changes in found[0].message


def test_a_hoisted_lambda_with_side_effects_is_unsafe():
    source = HEADER + "for batch in dataset:\n    strategy.run(lambda v: print(v), args=(batch,))\n"
    outcome, found = _tpu301(source)
    assert outcome.code == source
    assert [(r.safety, r.applied) for r in found] == [("unsafe", False)]
    assert "`print()`" in found[0].message
    fixed, _ = _tpu301(source, unsafe_fixes=True)
    assert "step_fn = tf.function(lambda v: print(v))\nfor batch in dataset:" in fixed.code


def test_a_def_outside_the_loop_is_still_decorated():
    source = HEADER + STEP + "for batch in dataset:\n    strategy.run(step_fn, args=(batch,))\n"
    outcome, found = _tpu301(source)
    assert [(r.safety, r.applied) for r in found] == [("safe", True)]
    assert "@tf.function\ndef step_fn" in outcome.code


def test_a_step_already_wrapped_by_a_library_is_compiled():
    source = "from tf_agents.utils import common\n" + HEADER + STEP + "step = common.function(step_fn)\nstrategy.run(step, args=(1.0,))\n"
    _, found = _tpu301(source)
    assert found == []


def test_a_factory_that_returns_a_tf_function_builds_a_compiled_step():
    source = HEADER + (
        "def make_step():\n    @tf.function\n    def step(x):\n        return x\n    return step\n\n\n"
        "strategy.run(make_step(), args=(1.0,))\n"
    )
    _, found = _tpu301(source)
    assert found == []


ALREADY_COMPILED = {
    "decorated def": "    @tf.function\n    def step(x):\n        return x\n\n    strategy.run(step, args=(1.0,))\n",
    "tf.function call": "    strategy.run(tf.function(lambda x: x), args=(1.0,))\n",
    "assigned tf.function": "    step = tf.function(lambda x: x)\n    strategy.run(step, args=(1.0,))\n",
}


@pytest.mark.parametrize("case", sorted(ALREADY_COMPILED))
def test_no_note_under_an_unknown_decorator_when_fn_is_already_a_tf_function(case):
    # `run` takes a tf.function traced or not: there is nothing to ask of the user.
    source = HEADER + "@somelib.mystery\ndef train():\n" + ALREADY_COMPILED[case]
    outcome, found = _tpu301(source)
    assert found == [] and outcome.code == source


def test_no_note_in_a_tf1_graph_file_when_fn_is_already_a_tf_function():
    source = HEADER + "sess = tf.compat.v1.Session()\n" + ALREADY_COMPILED["tf.function call"].lstrip()
    outcome, found = _tpu301(source)
    assert found == [] and outcome.code == source


@pytest.mark.parametrize(
    "decorator",
    [
        "@parameterized.parameters((1,), (2,))",
        "@parameterized.named_parameters(('a', 1))",
        "@parameterized.product(n=[1, 2])",
        "@pytest.mark.parametrize('n', [1, 2])",
    ],
)
def test_test_parametrizers_are_known_not_to_trace(decorator):
    source = (
        "import pytest\nfrom absl.testing import parameterized\n" + HEADER
        + f"def step(x):\n    return x * 2\n\n\n{decorator}\ndef test_step(n):\n    strategy.run(step, args=(1.0,))\n"
    )
    outcome, found = _tpu301(source)
    assert [(r.safety, r.applied) for r in found] == [("safe", True)]
    assert "@tf.function\ndef step(x):" in outcome.code


@pytest.mark.parametrize(
    "binding",
    ["step = make_step()\n", "step = lambda x: x * 2\n", ""],
)
def test_a_callable_bound_before_the_loop_is_not_wrapped_inside_it(binding):
    # `run(tf.function(step))` in the loop makes a new tf.function on every iteration,
    # and TF 2.4.1 traces each one (an XLA compile per step on a TPU).
    source = HEADER + (
        "def make_step():\n    def inner(x):\n        return x * 2\n    return inner\n\n\n"
        "def train(step):\n    " + binding.replace("\n", "\n    ")
        + "for x in range(3):\n        strategy.run(step, args=(x,))\n"
    )
    outcome, found = _tpu301(source)
    assert outcome.code == source
    assert [r.applied for r in found] == [False]
    assert "before the loop" in found[0].message
    assert "tf.function(step)" not in _tpu301(source, unsafe_fixes=True)[0].code


def test_a_def_nested_in_a_function_that_reads_only_module_names_moves_to_the_module():
    source = HEADER + (
        "def distributed_step(batch):\n    def replica_step(inputs):\n        return tf.reduce_sum(inputs)\n\n"
        "    return strategy.run(replica_step, args=(batch,))\n"
    )
    outcome, found = _tpu301(source)
    assert outcome.code == HEADER + (
        "@tf.function\ndef replica_step(inputs):\n    return tf.reduce_sum(inputs)\n\n\n"
        "def distributed_step(batch):\n    return strategy.run(replica_step, args=(batch,))\n"
    )
    assert [(r.safety, r.applied) for r in found] == [("safe", True)]
    assert _tpu301(outcome.code)[0].code == outcome.code


@pytest.mark.parametrize(
    "why, body",
    [
        ("a parameter", "def train(batch, scale):\n    def step(x):\n        return x * scale\n\n    return strategy.run(step, args=(batch,))\n"),
        ("self", "class T:\n    def train(self, batch):\n        def step(x):\n            return x * self.k\n\n"
                 "        return strategy.run(step, args=(batch,))\n"),
        ("a default", "def train(batch):\n    def step(x, k=K):\n        return x * k\n\n    return strategy.run(step, args=(batch,))\n"),
        ("a module name taken", "step = 3\n\n\ndef train(batch):\n    def step(x):\n        return x\n\n    return strategy.run(step, args=(batch,))\n"),
    ],
)
def test_a_def_made_on_every_call_of_its_function_never_gets_a_safe_fix(why, body):
    # issue 19: a tf.function made on every call is traced again on every call (0.11 s -> 8.81 s for 20 calls).
    source = HEADER + body
    outcome, found = _tpu301(source)
    assert outcome.code == source, why
    assert [(r.safety, r.applied) for r in found] == [("unsafe", False)], why
    assert "traced again on every call" in found[0].message


def test_a_helper_called_from_traced_and_eager_code_is_fixed():
    """Mutation survivor of the audit: TPU301 skipping a helper that one traced caller calls."""
    source = HEADER + STEP + (
        "def helper(x):\n    return strategy.run(step_fn, args=(x,))\n\n\n"
        "@tf.function\ndef traced(x):\n    return helper(x)\n\n\n"
        "def eager(x):\n    return helper(x)\n"
    )
    outcome, found = _tpu301(source)
    assert [(r.safety, r.applied) for r in found] == [("safe", True)]
    assert [r.line for r in _tpu301(source, mode="check")[1]] == [11]
    assert "@tf.function\ndef step_fn(x):" in outcome.code
    only_traced = source.replace("def eager(x):\n    return helper(x)\n", "")
    assert _tpu301(only_traced)[1] == []


def test_a_strategy_from_a_function_not_in_view_gets_a_note():
    """Issue 22.8: `strategy = get_strategy()` of unknown origin: TPU101 renamed the call, and
    TPU301 says the call may be eager on a TPU strategy (no fix: nothing says one is needed)."""
    source = (
        "import tensorflow as tf\n\nstrategy = get_strategy()\n\n\n" + STEP
        + "strategy.experimental_run_v2(step_fn, args=(1.0,))\n"
    )
    outcome, found = _tpu301(source, unsafe_fixes=True)
    assert outcome.code == source
    assert [(r.safety, r.applied) for r in found] == [("manual", False)]
    assert [r.line for r in _tpu301(source, mode="check")[1]] == [10]
    assert "`get_strategy(...)`, which is not followed here" in found[0].message and "TF 2.1" in found[0].message
    mirrored = source.replace("get_strategy()", "tf.distribute.MirroredStrategy()")
    assert _tpu301(mirrored)[1] == []
    compiled = source.replace("def step_fn", "@tf.function\ndef step_fn")
    assert _tpu301(compiled)[1] == []


@pytest.mark.parametrize(
    "base, method",
    [
        ("tf.keras.Model", "train_step"),
        ("tf.keras.Model", "test_step"),
        ("orbit.StandardTrainer", "train_step"),
        ("orbit.StandardEvaluator", "eval_step"),
    ],
)
def test_a_method_a_library_base_runs_under_tf_function_is_traced(base, method):
    source = "import orbit\n" + HEADER + (
        f"class Runner({base}):\n    def {method}(self, x):\n        def step(inputs):\n            return inputs * self.k\n\n"
        "        return strategy.run(step, args=(x,))\n"
    )
    outcome, found = _tpu301(source, unsafe_fixes=True)
    assert found == [] and outcome.code == source
    other = source.replace(f"def {method}(", "def helper_step(")
    assert [r.safety for r in _tpu301(other)[1]] == ["unsafe"]


def test_a_tf_agents_train_may_be_traced_so_it_gets_a_note():
    # TF-Agents wraps `_train` in `common.function_in_tf1()`, which traces only under TF1.
    source = "from tf_agents.agents import tf_agent\n" + HEADER + (
        "class Agent(tf_agent.TFAgent):\n    def _train(self, experience, weights=None):\n"
        "        def step(inputs):\n            return inputs * self.k\n\n"
        "        return strategy.run(step, args=(experience,))\n"
    )
    outcome, found = _tpu301(source, unsafe_fixes=True)
    assert outcome.code == source
    assert [r.safety for r in found] == ["manual"] and "may be traced" in found[0].message


def _cli(tmp_path, *args):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "migrate_tpu", *args, "--no-cache", "--select", "TPU301", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )


BASE_MODULE = """\
import tensorflow as tf


class StandardTrainable:
    def __init__(self, use_tf_function=True):
        self.use_tf_function = use_tf_function
        self.train_loop_fn = None

    def train(self, iterator, num_steps):
        if self.train_loop_fn is None:
            train_fn = self.train_step
            if self.use_tf_function:
                train_fn = tf.function(train_fn)
            self.train_loop_fn = train_fn
        for _ in range(num_steps):
            self.train_loop_fn(next(iterator))
"""

RUNNABLE = """\
import tensorflow as tf

from training import base


class Runnable(base.StandardTrainable):
    def __init__(self, resolver):
        super().__init__()
        self.strategy = tf.distribute.experimental.TPUStrategy(resolver)
        self.total = tf.Variable(0.0)

    def train_step(self, x):
        def step_fn(inputs):
            self.total.assign_add(tf.reduce_sum(inputs))

        self.strategy.experimental_run_v2(step_fn, args=(x,))

    def eval_step(self, x):
        def step_fn(inputs):
            return tf.reduce_sum(inputs) + self.total

        return self.strategy.experimental_run_v2(step_fn, args=(x,))
"""


@pytest.mark.slow
def test_issue_19_runnable_whose_base_in_another_module_traces_train_step(tmp_path):
    """The issue's `class Runnable(base.StandardTrainable)`: the base (another module of the tree)
    passes `self.train_step` to `tf.function`, so `train_step` needs nothing; `eval_step` is not
    traced by it and its nested step, made on every call, gets no safe fix."""
    import json

    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "__init__.py").write_text("")
    (tmp_path / "training" / "base.py").write_text(BASE_MODULE)
    (tmp_path / "runner.py").write_text(RUNNABLE)
    done = _cli(tmp_path, "check", "--format", "json")
    findings = json.loads(done.stdout)["findings"]
    assert [(f["path"].rsplit("/", 1)[-1], f["line"], f["safety"]) for f in findings] == [("runner.py", 22, "unsafe")], findings
    _cli(tmp_path, "fix")
    assert (tmp_path / "runner.py").read_text() == RUNNABLE
    # Without the base's tf.function, train_step runs eagerly: it is reported too.
    (tmp_path / "training" / "base.py").write_text(BASE_MODULE.replace("tf.function(train_fn)", "train_fn"))
    findings = json.loads(_cli(tmp_path, "check", "--format", "json").stdout)["findings"]
    assert [(f["line"], f["safety"]) for f in findings] == [(16, "unsafe"), (22, "unsafe")]


@pytest.mark.parametrize(
    "comprehension",
    [
        "results = [strategy.run(lambda v: v * 2, args=(b,)) for b in dist]\n",
        "results = {i: strategy.run(make(i), args=(b,)) for i, b in enumerate(dist)}\n",
        "def train(step):\n    return [strategy.run(step, args=(b,)) for b in dist]\n",
    ],
)
def test_a_callable_in_a_comprehension_is_never_wrapped_there(comprehension):
    # `[run(tf.function(...)) for ...]` would make, and trace, a new tf.function for every item.
    source = HEADER + comprehension
    outcome, found = _tpu301(source, unsafe_fixes=True)
    assert outcome.code == source
    assert [(r.safety, r.applied) for r in found] == [("manual", False)]
    assert "before the loop" in found[0].message


def test_hoisting_in_blocks_one_line_loops_and_while_loops_keeps_the_rest_of_the_file():
    body = (
        'if __name__ == "__main__":\n'
        "    for b in ds: strategy.run(lambda v: v * 2, args=(b,))\n"
        "    while True:\n        strategy.run(lambda v: v + 1, args=(b,))  # one\n        break\n"
        "    for b in ds:\n        try:\n            strategy.run(lambda v: v - 1, args=(b,))\n"
        "        finally:\n            pass\n"
    )
    source = HEADER + body
    outcome, found = _tpu301(source)
    assert outcome.code == HEADER + (
        'if __name__ == "__main__":\n'
        "    step_fn = tf.function(lambda v: v * 2)\n"
        "    for b in ds: strategy.run(step_fn, args=(b,))\n"
        "    step_fn_2 = tf.function(lambda v: v + 1)\n"
        "    while True:\n        strategy.run(step_fn_2, args=(b,))  # one\n        break\n"
        "    step_fn_3 = tf.function(lambda v: v - 1)\n"
        "    for b in ds:\n        try:\n            strategy.run(step_fn_3, args=(b,))\n"
        "        finally:\n            pass\n"
    )
    assert [(r.safety, r.applied) for r in found] == [("safe", True)] * 3
    assert _tpu301(outcome.code)[0].code == outcome.code


def test_two_nested_defs_of_the_same_name_are_not_both_moved_to_the_module():
    nested = "    def replica_step(x):\n        return x * {k}\n\n    return strategy.run(replica_step, args=(batch,))\n"
    source = HEADER + "def first(batch):\n" + nested.format(k=2) + "\n\ndef second(batch):\n" + nested.format(k=3)
    outcome, found = _tpu301(source)
    assert [(r.safety, r.applied) for r in found] == [("safe", True), ("unsafe", False)]
    assert outcome.code.count("def replica_step(x):") == 2 and outcome.code.count("@tf.function") == 1
    assert "return x * 3" in outcome.code.split("def second(batch):")[1]


SUPPRESSED_MULTILINE = """\
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver("t")
strategy = tf.distribute.experimental.TPUStrategy(resolver)


def step_fn(x):
    return x * 2


result = strategy.run(  # migrate-tpu: ignore[TPU301]
    step_fn, args=(1,))
"""


def test_an_ignore_comment_on_the_first_line_of_a_multiline_run_suppresses_its_finding():
    """TPU301 reports on the step argument (line 12 here): its statement is the `run` call's,
    whose first line carries the comment, as for every other rule."""
    found = migrate(SUPPRESSED_MULTILINE, Options(select=("TPU301",), mode="check")).reports
    assert found == []
    assert migrate(SUPPRESSED_MULTILINE, Options(select=("TPU301",))).code == SUPPRESSED_MULTILINE
    # Without the comment, the finding is there, on the argument's line, with a safe fix.
    bare = SUPPRESSED_MULTILINE.replace("  # migrate-tpu: ignore[TPU301]", "")
    found = migrate(bare, Options(select=("TPU301",), mode="check")).reports
    assert [(r.rule, r.line, r.column, r.safety) for r in found] == [("TPU301", 12, 5, "safe")]
    assert "@tf.function\ndef step_fn(x):" in migrate(bare, Options(select=("TPU301",))).code


def test_a_nested_step_moved_to_the_module_is_unsafe_when_its_body_runs_python_only_while_tracing():
    """A def nested in a function that reads only module-level names moves to the module under
    `@tf.function`; a `print` in its body would then run only while tracing: unsafe, not applied
    by plain `fix`, applied with --unsafe-fixes."""
    source = HEADER + ("def train(x):\n    def step_fn(inputs):\n        print('tracing')\n        return inputs * 2\n\n"
                       "    return strategy.run(step_fn, args=(x,))\n")
    outcome, reports = _tpu301(source)
    assert [(r.safety, r.applied) for r in reports] == [("unsafe", False)]
    assert "moved to the module" in reports[0].message and "`print()`" in reports[0].message
    assert outcome.code == source
    fixed, reports = _tpu301(source, unsafe_fixes=True)
    assert [(r.safety, r.applied) for r in reports] == [("unsafe", True)]
    assert "@tf.function\ndef step_fn(inputs):\n    print('tracing')" in fixed.code
