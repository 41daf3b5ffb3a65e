"""TPU405 on every optimizer that honours `lr=`: Keras, TensorFlow Addons and the tree's own.

Facts behind the cases (``optimizers.ADDONS_OPTIMIZERS`` says where each comes from: run on
TF 2.4.1 with tensorflow-addons 0.12.1, or read in the 0.23.0 source): `LazyAdam`, `AdamW`,
`SGDW` pass `**kwargs` to Keras `Adam`/`SGD`; `RectifiedAdam`, `LAMB`, `NovoGrad`, `Yogi`,
`ProximalAdagrad`, `AdaBelief` read `kwargs.get("lr", learning_rate)`; `Lookahead`,
`MovingAverage`, `SWA` wrap an optimizer and drop `lr` (the wrapped rate stays, and
`learning_rate=` is refused); `ConditionalGradient` requires `learning_rate`). A subclass without `__init__` and one passing `**kwargs` on keep `lr`
on TF 2.4.1 (checked on the real interpreter).
"""

import ast
import json
import subprocess
import sys

import pytest

from migrate_tpu.codemod.migration.api import Options, migrate

TF = "import tensorflow as tf\n"
TFA = "import tensorflow as tf\nimport tensorflow_addons as tfa\n"


def _fix(source, **options):
    options.setdefault("select", ("TPU405",))
    outcome = migrate(source, Options(mode="fix", **options))
    ast.parse(outcome.code)
    assert migrate(outcome.code, Options(mode="fix", **options)).code == outcome.code
    return outcome


ADDONS = ["LazyAdam", "RectifiedAdam", "LAMB", "NovoGrad", "Yogi", "ProximalAdagrad", "AdaBelief"]


@pytest.mark.parametrize("name", ADDONS)
@pytest.mark.parametrize(
    "imports, spelled",
    [
        (TFA, "tfa.optimizers.{}"),
        (TF + "from tensorflow_addons.optimizers import {}\n", "{}"),
        (TF + "from tensorflow_addons import optimizers as tfa_opt\n", "tfa_opt.{}"),
    ],
    ids=["tfa", "from-import", "module-alias"],
)
def test_an_addons_optimizer_gets_learning_rate(name, imports, spelled):
    prelude = imports.format(name)
    callee = spelled.format(name)
    outcome = _fix(prelude + f"opt = {callee}(lr=1e-3, epsilon=1e-6)\n")
    assert outcome.code == prelude + f"opt = {callee}(learning_rate=1e-3, epsilon=1e-6)\n"
    assert [(r.rule, r.safety, r.applied) for r in outcome.reports] == [("TPU405", "safe", True)]
    how = "passes it on to Keras `Adam`" if name == "LazyAdam" else 'reads it as `kwargs.get("lr", learning_rate)`'
    assert f"(`tfa.optimizers.{name}` {how})" in outcome.reports[0].message
    line = prelude.count("\n") + 1
    # Reported on its line by `check`.
    checked = migrate(prelude + f"opt = {callee}(lr=1e-3)\n", Options(mode="check", select=("TPU405",)))
    assert [(r.rule, r.line, r.safety) for r in checked.reports] == [("TPU405", line, "safe")]


@pytest.mark.parametrize("name", ["AdamW", "SGDW"])
def test_decoupled_weight_decay_optimizers_take_weight_decay_first(name):
    outcome = _fix(TFA + f"opt = tfa.optimizers.{name}(1e-4, lr=1e-3)\n")
    assert outcome.code == TFA + f"opt = tfa.optimizers.{name}(1e-4, learning_rate=1e-3)\n"
    assert [(r.rule, r.safety, r.applied) for r in outcome.reports] == [("TPU405", "safe", True)]
    outcome = _fix(TFA + f"opt = tfa.optimizers.{name}(weight_decay=1e-4, lr=1e-3)\n")
    assert outcome.code == TFA + f"opt = tfa.optimizers.{name}(weight_decay=1e-4, learning_rate=1e-3)\n"
    # The second positional argument is the learning rate: given twice, a note.
    source = TFA + f"opt = tfa.optimizers.{name}(1e-4, 1e-2, lr=1e-3)\n"
    outcome = _fix(source)
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU405", 3, "manual")]


def test_a_wrapper_is_left_alone_and_the_optimizer_it_wraps_is_fixed():
    source = TFA + "opt = tfa.optimizers.Lookahead(tfa.optimizers.RectifiedAdam(lr=1e-3), sync_period=6)\n"
    outcome = _fix(source)
    assert outcome.code == TFA + "opt = tfa.optimizers.Lookahead(tfa.optimizers.RectifiedAdam(learning_rate=1e-3), sync_period=6)\n"
    assert [(r.rule, r.applied) for r in outcome.reports] == [("TPU405", True)]


@pytest.mark.parametrize(
    "call",
    [
        "tfa.optimizers.Lookahead(inner, lr=1e-3)",  # a wrapper has no rate of its own
        "tfa.optimizers.MovingAverage(inner, lr=1e-3)",
        "tfa.optimizers.SWA(inner, lr=1e-3)",
        "tfa.optimizers.MultiOptimizer(pairs, lr=1e-3)",
        "tfa.optimizers.COCOB(lr=1e-3)",
    ],
)
def test_lr_on_an_addons_wrapper_is_reported_not_renamed(call):
    # Silently dropped already on TF 2.4.1 (the wrapped optimizer's rate stays); `learning_rate=`
    # would raise TypeError there, so no rename: a note on the line.
    source = TFA + f"opt = {call}\n"
    outcome = _fix(source)
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU405", 3, "manual")]
    name = call.split("(")[0]
    assert f"`lr=` has no effect on `{name}`" in outcome.reports[0].message


def test_conditional_gradient_requires_learning_rate():
    source = TFA + "opt = tfa.optimizers.ConditionalGradient(lr=1e-3)\n"
    outcome = _fix(source)
    assert outcome.code == source  # it never ran: `learning_rate` has no default
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU405", 3, "manual")]
    assert "requires `learning_rate`" in outcome.reports[0].message
    # Given both, `lr` wins (it reads `kwargs.get("lr", learning_rate)`): the usual note.
    source = TFA + "opt = tfa.optimizers.ConditionalGradient(0.1, lr=1e-3)\n"
    assert "`lr=` wins" in _fix(source).reports[0].message


def test_other_addons_classes_are_left_alone():
    source = TFA + "layer = tfa.layers.WeightNormalization(layer, lr=1e-3)\n"
    outcome = _fix(source)
    assert outcome.code == source and outcome.reports == []


def test_the_issue_19_case_both_lines_are_fixed():
    source = TFA + "a = tfa.optimizers.LazyAdam(lr=1e-3)\nb = tf.keras.optimizers.Adam(lr=1e-3)\n"
    checked = migrate(source, Options(mode="check", select=("TPU405",)))
    assert [(r.rule, r.line, r.column, r.safety) for r in checked.reports] == [("TPU405", 3, 5, "safe"), ("TPU405", 4, 5, "safe")]
    assert _fix(source).code == source.replace("lr=", "learning_rate=")


@pytest.mark.parametrize(
    "prelude, callee",
    [
        ("AdamW = tfa.optimizers.extend_with_decoupled_weight_decay(tf.keras.optimizers.Adam)\n", "AdamW"),
        (
            "from tensorflow_addons.optimizers import extend_with_decoupled_weight_decay\n"
            "RAdamW = extend_with_decoupled_weight_decay(tfa.optimizers.RectifiedAdam)\n",
            "RAdamW",
        ),
        ("", "tfa.optimizers.extend_with_decoupled_weight_decay(tf.keras.optimizers.SGD)"),
    ],
    ids=["keras-base", "addons-base", "called-at-once"],
)
def test_a_class_made_by_extend_with_decoupled_weight_decay(prelude, callee):
    # Checked on TF 2.4.1 with Addons 0.12.1: `(1e-4, lr=0.123)` and `(1e-4, learning_rate=0.123)`
    # both train at 0.123.
    source = TFA + prelude + f"opt = {callee}(1e-4, lr=1e-3)\n"
    outcome = _fix(source)
    assert outcome.code == TFA + prelude + f"opt = {callee}(1e-4, learning_rate=1e-3)\n"
    assert [(r.rule, r.safety, r.applied) for r in outcome.reports] == [("TPU405", "safe", True)]
    # A factory of something else is not followed.
    other = TFA + "Mine = make_class(tf.keras.optimizers.Adam)\nopt = Mine(1e-4, lr=1e-3)\n"
    assert _fix(other).reports == []


def test_a_subclass_of_a_wrapper_is_reported_like_it():
    source = TFA + "class Ranger(tfa.optimizers.Lookahead):\n    pass\n\nopt = Ranger(inner, lr=0.1)\n"
    outcome = _fix(source)
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU405", 6, "manual")]
    assert "`lr=` has no effect on `Ranger`" in outcome.reports[0].message


def test_every_library_optimizer_says_where_its_fact_comes_from():
    from migrate_tpu.codemod.analysis.optimizers import ADDONS_OPTIMIZERS, KNOWN

    assert len({entry.name for entry in ADDONS_OPTIMIZERS}) == len(ADDONS_OPTIMIZERS)
    for entry in ADDONS_OPTIMIZERS:
        assert entry.treats_lr in ("passes", "reads", "ignores", "requires")
        assert entry.source.startswith("tensorflow-addons 0."), entry.name
        assert (entry.keras_base != "") == (entry.treats_lr == "passes"), entry.name
        assert (entry.position is None) == (entry.treats_lr == "ignores"), entry.name
        for module in entry.modules:
            assert KNOWN[f"{module}.{entry.name.rpartition('.')[2]}"].name == entry.name


def test_a_subclass_from_the_tree_is_followed_through_its_bases():
    source = TF + (
        "class Base(tf.keras.optimizers.Adam):\n"
        "    pass\n"
        "\n"
        "class Warm(Base):\n"
        "    def _decayed_lr(self, dtype):\n"
        "        return super()._decayed_lr(dtype) * 0.5\n"
        "\n"
        "opt = Warm(lr=1e-3)\n"
        "other = Warm(1e-2, lr=1e-3)\n"
    )
    outcome = _fix(source)
    assert "opt = Warm(learning_rate=1e-3)\n" in outcome.code
    assert "other = Warm(1e-2, lr=1e-3)\n" in outcome.code
    assert [(r.rule, r.safety, r.applied) for r in outcome.reports] == [("TPU405", "safe", True), ("TPU405", "manual", False)]
    assert "(`Warm` inherits its constructor from `tf.keras.optimizers.Adam`)" in outcome.reports[0].message


def test_a_subclass_of_an_addons_optimizer_is_followed():
    source = TFA + "class Mine(tfa.optimizers.LazyAdam):\n    pass\n\nopt = Mine(lr=1e-3)\n"
    outcome = _fix(source)
    assert outcome.code.endswith("opt = Mine(learning_rate=1e-3)\n")
    assert "(`Mine` inherits its constructor from `tfa.optimizers.LazyAdam`)" in outcome.reports[0].message


def test_an_init_that_takes_kwargs_makes_the_rename_unsafe():
    source = TF + (
        "class Clipped(tf.keras.optimizers.SGD):\n"
        "    def __init__(self, learning_rate=0.01, **kwargs):\n"
        "        super().__init__(learning_rate, clipnorm=1.0, **kwargs)\n"
        "\n"
        "opt = Clipped(lr=0.1)\n"
    )
    outcome = _fix(source)
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety, r.applied) for r in outcome.reports] == [("TPU405", 6, "unsafe", False)]
    outcome = _fix(source, unsafe_fixes=True)
    assert outcome.code.endswith("opt = Clipped(learning_rate=0.1)\n")


@pytest.mark.parametrize(
    "init",
    [
        "    def __init__(self, lr=0.01, **kwargs):\n        super().__init__(learning_rate=lr, **kwargs)\n",
        "    def __init__(self, learning_rate=0.01):\n        super().__init__(learning_rate)\n",
    ],
    ids=["own-lr", "no-kwargs"],
)
def test_an_init_that_does_not_pass_lr_on_as_an_alias_is_left_alone(init):
    source = TF + "class Mine(tf.keras.optimizers.SGD):\n" + init + "\nopt = Mine(lr=0.1)\n"
    outcome = _fix(source)
    assert outcome.code == source and outcome.reports == []


def test_a_class_that_is_no_optimizer_is_left_alone():
    source = TF + "class Scheduler:\n    pass\n\nclass Mine(Scheduler):\n    pass\n\ns = Mine(lr=0.1)\n"
    outcome = _fix(source)
    assert outcome.code == source and outcome.reports == []


def _cli(tmp_path, *args):
    done = subprocess.run(
        [sys.executable, "-m", "migrate_tpu", *args, "--no-cache", "--select", "TPU405", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )
    return done


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_a_subclass_from_another_module_of_the_tree_is_followed(tmp_path):
    (tmp_path / "optim").mkdir()
    (tmp_path / "optim" / "__init__.py").write_text("from .adam import WarmAdam\n")
    (tmp_path / "optim" / "adam.py").write_text(
        TFA + "class BaseAdam(tfa.optimizers.LazyAdam):\n    pass\n\nclass WarmAdam(BaseAdam):\n    pass\n"
    )
    (tmp_path / "optim" / "sgd.py").write_text(
        TF + "class Clipped(tf.keras.optimizers.SGD):\n"
        "    def __init__(self, learning_rate=0.01, **kwargs):\n"
        "        super().__init__(learning_rate, **kwargs)\n"
    )
    (tmp_path / "train.py").write_text(
        TF + "from optim import WarmAdam\nfrom optim.sgd import Clipped\nimport optim.adam\n\n"
        "a = WarmAdam(lr=1e-3)\nb = optim.adam.BaseAdam(lr=1e-3)\nc = Clipped(lr=0.1)\n"
    )
    done = _cli(tmp_path, "check", "--format", "json")
    findings = json.loads(done.stdout)["findings"]
    assert [(f["path"].rsplit("/", 1)[-1], f["rule"], f["line"], f["safety"]) for f in findings] == [
        ("train.py", "TPU405", 6, "safe"),
        ("train.py", "TPU405", 7, "safe"),
        ("train.py", "TPU405", 8, "unsafe"),
    ]
    _cli(tmp_path, "fix")
    assert (tmp_path / "train.py").read_text().endswith(
        "a = WarmAdam(learning_rate=1e-3)\nb = optim.adam.BaseAdam(learning_rate=1e-3)\nc = Clipped(lr=0.1)\n"
    )


@pytest.mark.parametrize(
    "prelude, callee",
    [
        ("", "tf.compat.v1.keras.optimizers.Adam"),  # the same class as tf.keras.optimizers.Adam
        ("from tensorflow.python.keras.optimizer_v2 import adam\n", "adam.Adam"),
        ("from tensorflow.python.keras.optimizer_v2.gradient_descent import SGD\n", "SGD"),
        ("import keras\n", "keras.optimizers.RMSprop"),
    ],
)
def test_keras_optimizers_under_their_other_names(prelude, callee):
    source = TF + prelude + f"opt = {callee}(lr=1e-3)\n"
    outcome = _fix(source)
    assert outcome.code == TF + prelude + f"opt = {callee}(learning_rate=1e-3)\n"
    assert [(r.rule, r.safety, r.applied) for r in outcome.reports] == [("TPU405", "safe", True)]


@pytest.mark.parametrize("init", ["def __init__(self, **kwargs)", "def __init__(self, *args, **kwargs)"])
def test_a_pass_through_init_is_an_unsafe_rename_not_silence(init):
    source = TF + f"class Mine(tf.keras.optimizers.SGD):\n    {init}:\n        super().__init__(**kwargs)\n\nopt = Mine(lr=0.1)\n"
    outcome = _fix(source)
    assert outcome.code == source
    assert [(r.rule, r.line, r.safety) for r in outcome.reports] == [("TPU405", 6, "unsafe")]
    assert "passes `learning_rate` through its `**kwargs` instead" in outcome.reports[0].message
    assert _fix(source, unsafe_fixes=True).code.endswith("opt = Mine(learning_rate=0.1)\n")


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_a_class_made_by_the_factory_in_another_module_is_followed(tmp_path):
    (tmp_path / "optim.py").write_text(
        TFA + "AdamW = tfa.optimizers.extend_with_decoupled_weight_decay(tf.keras.optimizers.Adam)\n"
        "class Ranger(tfa.optimizers.Lookahead):\n    pass\n"
    )
    (tmp_path / "train.py").write_text(TF + "from optim import AdamW, Ranger\n\na = AdamW(1e-4, lr=1e-3)\nb = Ranger(a, lr=0.1)\n")
    findings = json.loads(_cli(tmp_path, "check", "--format", "json").stdout)["findings"]
    assert [(f["path"].rsplit("/", 1)[-1], f["rule"], f["line"], f["safety"]) for f in findings] == [
        ("train.py", "TPU405", 4, "safe"),
        ("train.py", "TPU405", 5, "manual"),
    ]
    _cli(tmp_path, "fix")
    assert (tmp_path / "train.py").read_text().endswith("a = AdamW(1e-4, learning_rate=1e-3)\nb = Ranger(a, lr=0.1)\n")


OWN_OPTIMIZER = TF + (
    "class MyOpt(tf.keras.optimizers.Optimizer):\n"
    '    def __init__(self, learning_rate=0.01, name="MyOpt", **kwargs):\n'
    "        super().__init__(name, **kwargs)\n"
    '        self._set_hyper("learning_rate", kwargs.get("lr", learning_rate))\n'
    "\n"
    "opt = MyOpt(lr=0.1)\n"
)


def test_a_tree_optimizer_that_reads_lr_itself_gets_a_safe_rename():
    # Checked on TF 2.1.0 and 2.4.1: `MyOpt(lr=0.123)` and `MyOpt(learning_rate=0.123)` set 0.123
    # (the Keras base accepts and drops the `lr` left in `**kwargs`).
    outcome = _fix(OWN_OPTIMIZER)
    assert outcome.code == OWN_OPTIMIZER.replace("MyOpt(lr=0.1)", "MyOpt(learning_rate=0.1)")
    assert [(r.rule, r.safety, r.applied) for r in outcome.reports] == [("TPU405", "safe", True)]
    assert '(`MyOpt` reads it as `kwargs.get("lr", learning_rate)`)' in outcome.reports[0].message
    # Without that read, `lr` only passes through `**kwargs`: unsafe, as before.
    passing = OWN_OPTIMIZER.replace('kwargs.get("lr", learning_rate)', "learning_rate")
    outcome = _fix(passing)
    assert outcome.code == passing
    assert [(r.rule, r.safety) for r in outcome.reports] == [("TPU405", "unsafe")]
