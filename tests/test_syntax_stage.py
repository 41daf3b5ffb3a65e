"""The prefilter's second stage (codemod/syntax_stage.py): files whose only evidence is a
``.run(``, ``.compile(`` or ``lr=`` that no rule can act on skip the LibCST parse, and
nothing a rule would find is lost."""

import json
import subprocess
import sys

import pytest

from migrate_tpu.codemod.stages import syntax_stage
from migrate_tpu.codemod.migration.api import migrate
from migrate_tpu.codemod.foundation.options import Options
from migrate_tpu.codemod.rules.catalogue import select_rules

RULES = select_rules((), (), "2.4")
TF = "import tensorflow as tf\n"


def needed(source: str) -> bool:
    return syntax_stage.may_fire(source, RULES)[0]


@pytest.mark.parametrize(
    "source",
    [
        TF + "from absl import app\n\ndef main(argv):\n    pass\n\napp.run(main)\n",
        TF + "import absl.app as absl_app\n\nabsl_app.run(main)\n",
        TF + "import re\n\nPATTERN = re.compile('a+', re.I)\n",
        TF + "def schedule(step, lr=0.1, decay=0.5):\n    lr = lr * decay\n    return lr\n",
        TF + "model.compile(optimizer)\n",  # one positional argument: nothing moved
        TF + "model.compile(optimizer='sgd', loss='mse', metrics=['accuracy'])\n",  # keywords that stay
        # TF1 sessions: bound only to calls that are no strategy (StrategyFacts gives them no kind).
        TF + "with tf.compat.v1.Session() as sess:\n    sess.run(init)\n",
        TF + "sess = tf.Session(config=config)\nsess.run(init, feed_dict={x: 1})\n",
        TF + "class T(tf.test.TestCase):\n    def test(self):\n        with self.cached_session() as sess:\n            sess.run(op)\n",
        TF + "class Hook(tf.estimator.SessionRunHook):\n    def end(self, session):\n        session.run(self._tensors)\n",
        TF + "with tf.train.MonitoredSession(hooks=hooks) as mon_sess:\n    mon_sess.run(train_op)\n",
        TF + "import subprocess\nresult = subprocess.run(['ls'])\n",
        # An attribute of TensorFlow, or any a.b.c, is no strategy to StrategyFacts.
        TF + "def main(argv):\n    pass\n\ntf.app.run(main)\n",
        TF + "tf.compat.v1.app.run(main)\n",
        TF + "class Env:\n    def step(self):\n        return self._session.obj.run(self._ops)\n",
        # The version read, but by no if: nothing to collapse.
        TF + "info = {'version': tf.version.VERSION}\nassert tf.__version__.startswith('2.')\n",
        TF + "if FLAGS.debug:\n    print(tf.version.VERSION)\n",
        # A resolver given a name: TPU202 looks only for the empty one.
        TF + "resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=FLAGS.tpu)\n",
    ],
)
def test_evidence_no_rule_can_act_on_skips_libcst(source):
    assert not needed(source)
    assert migrate(source, Options()).reports == []


@pytest.mark.parametrize(
    "source, rule",
    [
        (TF + "strategy = tf.distribute.TPUStrategy(r)\n\ndef step(x):\n    return x\n\nstrategy.run(step, args=(1,))\n", "TPU301"),
        (TF + "def train(strategy, step):\n    return strategy.run(step)\n", "TPU301"),
        (TF + "model.compile('sgd', 'mse', ['accuracy'], None)\n", "TPU401"),
        (TF + "opt = tf.keras.optimizers.SGD(lr=0.1)\n", "TPU405"),
        (TF + "model.compile(optimizer='sgd', loss='mse', experimental_steps_per_execution=8)\n", "TPU401"),
        (TF + "model.compile('sgd', 'mse', metrics=['acc'], distribute=None)\n", "TPU401"),
        (TF + "model.compile(optimizer='sgd', loss='mse', experimental_run_tf_function=False)\n", "TPU401"),
        (TF + "def make():\n    return tf.distribute.get_strategy()\n\nrunner = make()\n\ndef step(x):\n    return x\n\n"
              "runner.run(step, args=(1,))\n", "TPU301"),
        (TF + "runner = tf.distribute.get_strategy()\n\ndef step(x):\n    return x\n\nrunner.run(step, args=(1,))\n", "TPU301"),
    ],
)
def test_what_a_rule_acts_on_goes_to_libcst(source, rule):
    assert needed(source)
    assert rule in [r.rule for r in migrate(source, Options()).reports]


@pytest.mark.parametrize(
    "source",
    [
        # rebound to what a function of this file returns: may be a strategy
        TF + "from absl import app\ndef make_strategy():\n    pass\napp = make_strategy()\napp.run(step)\n",
        TF + "from config import *\nfrom absl import app\napp.run(step)\n",  # a star import may rebind it
        TF + "from . import app\napp.run(step)\n",  # this project's own module
        TF + "app.run(main\n",  # the standard parser refuses it: LibCST reports the error
        TF + "from absl import app\napp.run(main)\ns = tf.distribute.experimental.TPUStrategy(r)\n",  # other evidence
    ],
)
def test_doubt_goes_to_libcst(source):
    assert needed(source)


@pytest.mark.parametrize(
    "source",
    [
        # The receiver may hold a strategy: every way StrategyFacts may find one is followed or let through.
        TF + "from tensorflow.distribute import TPUStrategy as T\nrunner = T(r)\nrunner.run(step)\n",
        TF + "runner = tf.distribute.experimental.TPUStrategy(r)\nrunner.run(step)\n",
        TF + "runner = tf.distribute.get_strategy()\nrunner.run(step)\n",
        TF + "def f(runner: tf.distribute.TPUStrategy):\n    runner.run(step)\n",  # an annotated parameter
        TF + "def f(step, distribution):\n    distribution.run(step)\n",  # named like a strategy
        TF + "runner = other\nrunner.run(step)\n",  # an alias: not followed here
        TF + "runner = a if c else b\nrunner.run(step)\n",
        TF + "def make():\n    pass\nrunner = make()\nrunner.run(step)\n",  # a function of this file: not followed
        TF + "with tf.Session() as runner:\n    pass\nfor runner in runners:\n    runner.run(step)\n",  # one binding unknown
        TF + "a, runner = pair\nrunner.run(step)\n",
        TF + "global runner\nrunner.run(step)\n",
        TF + "from config import *\nrunner.run(step)\n",
        TF + "self.strategy.run(step)\n",  # not a plain name
        TF + "config.strategy.run(step)\n",  # an attribute named like a strategy
        TF + "def f(env):\n    env.runner.run(step)\n",  # an attribute of a parameter: not followed here
        TF + "tf.distribute.get_strategy().run(step)\n",
    ],
)
def test_a_receiver_that_may_be_a_strategy_goes_to_libcst(source):
    from migrate_tpu.codemod.rules.structural.eager_run import EagerPlainFunctionRun

    assert EagerPlainFunctionRun.may_fire(syntax_stage.SourceIndex(syntax_stage.parse(source)))


@pytest.mark.parametrize(
    "source, rule",
    [
        (TF + "if tf.__version__ < '2.2':\n    pass\n", "TPU601"),
        (TF + "x = 1 if tf.version.VERSION.startswith('2.1') else 2\n", "TPU601"),
        (TF + "V = LooseVersion(tf.__version__)\nNEW = V >= LooseVersion('2.2')\nif NEW:\n    pass\n", "TPU601"),
        (TF + "from tensorflow import __version__ as tfv\nif tfv < '2.2':\n    pass\n", "TPU601"),
        (TF + "from tensorflow.version import VERSION\nif VERSION < '2.2':\n    pass\n", "TPU601"),
        (TF + "R = tf.distribute.cluster_resolver.TPUClusterResolver\nr = R('')\n", "TPU202"),
        (TF + "r = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='', zone=z)\n", "TPU202"),
        (TF + "r = tf.distribute.cluster_resolver.TPUClusterResolver(*names)\n", "TPU202"),
    ],
)
def test_what_the_version_and_resolver_rules_may_act_on_goes_to_libcst(source, rule):
    from migrate_tpu.codemod.rules.catalogue import all_rules

    rule_class = next(r for r in all_rules() if r.id == rule)
    assert rule_class.may_fire(syntax_stage.SourceIndex(syntax_stage.parse(source)))


def test_a_factory_of_the_project_counts_with_the_projects_modules():
    """``runner = setup.make()`` where the project's setup.py may return a TPU strategy: asked
    of the project's modules (as StrategyFacts does), never of TensorFlow's; what they say
    gives no TPU strategy (a class, a function returning something else) is none."""
    from migrate_tpu.codemod.rules.structural.eager_run import EagerPlainFunctionRun

    class Lookup:
        def __init__(self, kinds):
            self.kinds, self.asked = kinds, []

        def factory_kinds(self, dotted, path, call=True):
            self.asked.append(dotted)
            return self.kinds

    for source, asked in (
        (TF + "import setup\nrunner = setup.make()\nrunner.run(step)\n", ["setup.make"]),
        (TF + "from setup import make\nrunner = make()\nrunner.run(step)\n", ["setup.make"]),
        (TF + "sess = tf.compat.v1.Session()\nsess.run(step)\n", []),
    ):
        for kinds, expected in ((frozenset({"tpu"}), bool(asked)), (frozenset({"other"}), False), (None, False)):
            lookup = Lookup(kinds)
            index = syntax_stage.SourceIndex(syntax_stage.parse(source), lookup, "train.py")
            assert EagerPlainFunctionRun.may_fire(index) is expected, source
            assert lookup.asked == asked


def test_a_rule_without_a_test_is_not_asked_and_no_tree_is_made():
    # The method tables (TPU101's ``experimental_run_v2``) have no test: the name is the evidence.
    needed_here, tree = syntax_stage.may_fire(TF + "s.experimental_run_v2(f, args=(1,))\n", RULES)
    assert needed_here and tree is None


_STEP = "\n\ndef step(x):\n    return x * 2\n\n\n"


@pytest.mark.parametrize(
    "setup, train",
    [
        # ``from setup import app``: the stage asks the project's modules, as the rule does.
        (TF + "app = tf.distribute.TPUStrategy(resolver)\n", TF + "from setup import app\n" + _STEP + "app.run(step, args=(1,))\n"),
        # ``setup.app``: an attribute of an imported module is asked about, as StrategyFacts asks.
        (TF + "app = tf.distribute.TPUStrategy(resolver)\n", TF + "import setup\n" + _STEP + "setup.app.run(step, args=(1,))\n"),
        # ``runner = make()`` with ``make`` from the project, which returns a TPUStrategy.
        (
            TF + "def make():\n    return tf.distribute.TPUStrategy(resolver)\n",
            TF + "from setup import make\n\nrunner = make()\n" + _STEP + "runner.run(step, args=(1,))\n",
        ),
    ],
    ids=["imported", "module-attribute", "factory"],
)
def test_a_strategy_of_the_project_is_not_skipped(tmp_path, setup, train):
    """The eager run on a TPUStrategy from setup.py is still found, by the CLI on the tree."""
    (tmp_path / "setup.py").write_text(setup)
    (tmp_path / "train.py").write_text(train)
    done = subprocess.run(
        [sys.executable, "-m", "migrate_tpu", "check", "--no-cache", "--format", "json", str(tmp_path)],
        capture_output=True, text=True,
    )
    findings = json.loads(done.stdout)["findings"]
    assert [(f["path"].rsplit("/", 1)[-1], f["rule"]) for f in findings] == [("train.py", "TPU301")]


STRATEGY = TF + "strategy = tf.distribute.get_strategy()\n\n"


@pytest.mark.parametrize(
    "source",
    [
        # `run` inside a function that tf.function traces: the rule passes it by.
        STRATEGY + "@tf.function\ndef train(it):\n    def step(x):\n        return x\n    return strategy.run(step, args=(next(it),))\n",
        STRATEGY + "@tf.function(experimental_relax_shapes=True)\ndef train(it):\n    return strategy.run(lambda x: x, args=(next(it),))\n",
        STRATEGY + "from tensorflow.python.eager import def_function\n\n@def_function.function\ndef train(x):\n    return strategy.run(f, args=(x,))\n",
        TF.replace("tensorflow", "tensorflow.compat.v2") + ("strategy = tf.distribute.get_strategy()\n\n@tf.function\ndef train(x):\n"
                                                            "    return strategy.run(f, args=(x,))\n"),
        # A def handed to tf.function anywhere in the file (`train = tf.function(train)`), a method by `self.name`.
        STRATEGY + "def train(x):\n    return strategy.run(f, args=(x,))\n\nif fast:\n    train = tf.function(train)\n",
        STRATEGY + ("class Loop:\n    def __init__(self):\n        self.step = tf.function(self.train)\n\n"
                    "    def train(self, x):\n        return strategy.run(f, args=(x,))\n"),
        # A step method that a known library base class runs under tf.function.
        STRATEGY + "import orbit\n\nclass Trainer(orbit.StandardTrainer):\n    def train_step(self, it):\n        strategy.run(f, args=(next(it),))\n",
        STRATEGY + ("from orbit import standard_runner\n\nclass Trainer(standard_runner.StandardTrainer, Mixin):\n"
                    "    def train_step(self, it):\n        strategy.run(f, args=(next(it),))\n"),
        STRATEGY + "class Net(tf.keras.Model):\n    def train_step(self, data):\n        return strategy.run(f, args=(data,))\n",
    ],
)
def test_a_run_that_tf_function_traces_skips_libcst(source, monkeypatch):
    assert not needed(source)
    # LibCST, asked anyway, finds nothing either.
    monkeypatch.setattr(syntax_stage, "may_fire", lambda *args, **kwargs: (True, None))
    assert migrate(source, Options()).reports == []


@pytest.mark.parametrize(
    "source",
    [
        # Traced as the analysis sees it, but not by what this stage can tell: on to LibCST.
        STRATEGY + "function = make_wrapper()\n\n@function\ndef train(x):\n    return strategy.run(f, args=(x,))\n",
        # `tf` bound otherwise too, or imported only inside another function (not seen here).
        STRATEGY + "tf = other\n\n@tf.function\ndef train(x):\n    return strategy.run(f, args=(x,))\n",
        "def setup():\n    import tensorflow as tf\n\nstrategy = make()\n\n@tf.function\ndef train(x):\n    return strategy.run(f, args=(x,))\n",
        # A wrapper that is not tf.function, and a method whose name is handed over as a plain name.
        STRATEGY + "@tf.autograph.experimental.do_not_convert\ndef train(x):\n    return strategy.run(f, args=(x,))\n",
        STRATEGY + "class Loop:\n    def train(self, x):\n        return strategy.run(f, args=(x,))\n\nstep = tf.function(train)\n",
        # The run outside the traced body: in a decorator's argument list, or beside it.
        STRATEGY + "@tf.function\ndef helper(x):\n    return x\n\ndef train(x):\n    return strategy.run(f, args=(x,))\n",
        # A library's step that is decorated (the analysis asks what the decorator does), a
        # method the library does not trace, a base not reached through an import.
        STRATEGY + ("import orbit\n\nclass Trainer(orbit.StandardTrainer):\n    @timed\n"
                    "    def train_step(self, it):\n        strategy.run(f, args=(next(it),))\n"),
        STRATEGY + "import orbit\n\nclass Trainer(orbit.StandardTrainer):\n    def train_loop_begin(self):\n        strategy.run(f)\n",
        STRATEGY + "from . import runner\n\nclass Trainer(runner.StandardTrainer):\n    def train_step(self, it):\n        strategy.run(f, args=(next(it),))\n",
        STRATEGY + "import tf_agents\n\nclass Agent(tf_agents.agents.TFAgent):\n    def _train(self, x):\n        strategy.run(f, args=(x,))\n",
    ],
)
def test_a_run_not_known_to_be_traced_goes_to_libcst(source):
    assert needed(source)


def test_the_untraced_runs_keep_their_findings():
    # The same run inside and outside a traced function: only the outside one is found,
    # and the stage lets the file through for it.
    source = (
        STRATEGY + "def step(x):\n    return x\n\n@tf.function\ndef train(x):\n    return strategy.run(step, args=(x,))\n\n"
        "strategy.run(step, args=(1,))\n"
    )
    assert needed(source)
    assert [(r.rule, r.line) for r in migrate(source, Options()).reports] == [("TPU301", 11)]


# -- the text alone: absl's ``app.run(main)`` (``EagerPlainFunctionRun.ruled_out_by_text``) --

ABSL = TF + "from absl import app\nfrom absl import flags\n\n\ndef main(argv):\n    del argv  # run the model here\n    flags.FLAGS.mark_as_parsed()\n\n\n"


def _ast_stage_says(source: str, lookup=None, path: str = "") -> bool:
    """What the ``ast`` stage itself answers for TPU301."""
    from migrate_tpu.codemod.rules.structural.eager_run import EagerPlainFunctionRun

    return EagerPlainFunctionRun.may_fire(syntax_stage.SourceIndex(syntax_stage.parse(source), lookup, path))


@pytest.mark.parametrize(
    "source",
    [
        ABSL + "if __name__ == '__main__':\n    app.run(main)\n",
        ABSL + "if __name__ == '__main__':\n    flags.mark_flag_as_required('x')\n    app.run(main)  # run it\n",
        ABSL.replace("import app\n", "import app as absl_app\n") + "absl_app.run(main)\n",
        ABSL + "@app.call_after_init\ndef later():\n    pass\n\n\napp.run(main)\n",
        # ``run`` as a word elsewhere (a def, a docstring) is no call of ``.run``.
        ABSL + 'def run(x):\n    """Steps to run."""\n\n\napp.run(main)\n',
        # Any absolute import of absl's ``app`` binds it so.
        TF + "from absl import flags, app\n\napp.run(main)\n",
        TF + "import absl.app as app\n\napp.run(main)\n",
    ],
)
def test_absl_app_run_alone_is_ruled_out_without_an_ast_parse(source, monkeypatch):
    from migrate_tpu.codemod.rules.structural.eager_run import EagerPlainFunctionRun

    assert EagerPlainFunctionRun.ruled_out_by_text(source)
    assert not _ast_stage_says(source)  # what the ast stage would have said
    monkeypatch.setattr(syntax_stage, "parse", lambda source: pytest.fail("parsed by ast"))
    assert syntax_stage.may_fire(source, RULES) == (False, None)


@pytest.mark.parametrize(
    "source",
    [
        # ``app`` bound otherwise: a parameter, an assignment, a loop, another import.
        ABSL + "def train(app, step):\n    return app.run(step)\n\n\napp.run(main)\n",
        ABSL + "app = tf.distribute.TPUStrategy(resolver)\napp.run(main)\n",
        ABSL + "for app in strategies:\n    app.run(main)\n",
        TF + "from absl import app\nimport fake as app\n\napp.run(main)\n",
        TF + "from absl import app\nfrom .local import app\n\napp.run(main)\n",
        TF + "from absl import app\nimport app.sub\n\napp.run(main)\n",
        TF + "from absl import app\nimport os, \\\n    app.sub\n\napp.run(main)\n",
        TF + "from absl import app\nfrom setup import *\n\napp.run(main)\n",
        # Another receiver, or ``app`` reached through something else.
        ABSL + "app.run(main)\nstrategy.run(step, args=(1,))\n",
        ABSL + "tf.compat.v1.app.run(main)\n",
        ABSL + "self.app.run(step)\n",
        ABSL + "(app.\n    run(step))\n",
        ABSL + "app .run(step)\n",
        ABSL + "xapp.run(step)\n",
        ABSL + "x\u0301app.run(step)\n",  # a combining mark continues the name
        ABSL + "strategy.experimental_run_v2(step)\napp.run(main)\n",
        # An alias a strategy's name: the ast stage takes it for one.
        TF + "from absl import app as strategy\n\nstrategy.run(main)\n",
        # No import of it at all.
        TF + "app.run(main)\n",
    ],
)
def test_anything_else_about_run_is_left_to_the_ast_stage(source):
    from migrate_tpu.codemod.rules.structural.eager_run import EagerPlainFunctionRun

    assert not EagerPlainFunctionRun.ruled_out_by_text(source)


def test_a_project_with_its_own_absl_is_asked(tmp_path):
    """The project's own ``absl/app.py`` could hold a strategy: the lookup is asked, as the
    ast stage asks it, and the file goes on to the ast stage."""
    from migrate_tpu.codemod.rules.structural.eager_run import EagerPlainFunctionRun
    from migrate_tpu.codemod.migration.project.lookup import ProjectLookup
    from migrate_tpu.compose import ProjectFiles

    source = ABSL + "app.run(main)\n"
    (tmp_path / "absl").mkdir()
    (tmp_path / "absl" / "__init__.py").write_text(TF + "app = tf.distribute.TPUStrategy(resolver)\n")
    (tmp_path / "train.py").write_text(source)
    project = ProjectFiles((str(tmp_path),))
    lookup = ProjectLookup(project.resolve_module, project.read_text, project.tree_files)
    path = str(tmp_path / "train.py")
    assert not EagerPlainFunctionRun.ruled_out_by_text(source, lookup, path)
    assert _ast_stage_says(source, lookup, path)
    (tmp_path / "absl" / "__init__.py").write_text("")
    fresh = ProjectLookup(project.resolve_module, project.read_text, project.tree_files)
    assert EagerPlainFunctionRun.ruled_out_by_text(source, fresh, path)


# -- references to old names (``SourceIndex.may_name``): the tables and the rules on one symbol --


@pytest.mark.parametrize(
    "source, rule",
    [
        (TF + "s = tf.distribute.experimental.TPUStrategy(r)\n", "TPU103"),
        ("import tensorflow.compat.v2 as tf\n\ns = tf.distribute.experimental.TPUStrategy(r)\n", "TPU103"),
        (TF + "from tensorflow.distribute import experimental as tde\n\ns = tde.TPUStrategy(r)\n", "TPU103"),
        (TF + "import tensorflow.distribute.experimental as tde\n\ns = tde.TPUStrategy(r)\n", "TPU103"),
        (TF + "dist = tf.distribute\nexp = dist.experimental\ns = exp.TPUStrategy(r)\n", "TPU103"),  # aliases, followed
        (TF + "from tensorflow.distribute.experimental import TPUStrategy as T\n\ns = T(r)\n", "TPU103"),
        (TF + "def f(s: 'tf.distribute.experimental.TPUStrategy'):\n    pass\n", "TPU103"),  # a string annotation
        (TF + "S = getattr(tf.distribute.experimental, 'TPUStrategy')\n", "TPU103"),
        (TF + "try:\n    from tensorflow.distribute import experimental as d\nexcept ImportError:\n    from tf_compat import d\n\n"
              "s = d.TPUStrategy(r)\n", "TPU103"),
        (TF + "if isinstance(s, tf.distribute.experimental.TPUStrategy):\n    pass\n", "TPU104"),
        (TF + "if type(s).__name__ == 'TPUStrategy':\n    pass\n", "TPU104"),
        (TF + "opt = tf.keras.mixed_precision.experimental.LossScaleOptimizer(opt, 'dynamic')\n", "TPU403"),
        (TF + "from tensorflow.keras.mixed_precision.experimental import LossScaleOptimizer as LSO\n\nopt = LSO(opt, 'dynamic')\n", "TPU403"),
        (TF + "s = tf.distribute.experimental.MultiWorkerMirroredStrategy()\n", "TPU106"),
        (TF + "from tensorflow.keras.mixed_precision import experimental as mp\n\nmp.set_policy('mixed_bfloat16')\n", "TPU402"),
        (TF + "mp = tf.keras.mixed_precision.experimental\nmp.set_policy('mixed_bfloat16')\n", "TPU402"),
    ],
)
def test_a_reference_that_may_be_an_old_name_goes_to_libcst(source, rule):
    assert needed(source)
    assert rule in [r.rule for r in migrate(source, Options()).reports]


@pytest.mark.parametrize(
    "source",
    [
        # The new names spell the old ones' last names: the textual stage lets them through.
        TF + "s = tf.distribute.TPUStrategy(r)\n",
        TF + "from tensorflow.distribute import TPUStrategy\n\ns = TPUStrategy(r)\n",
        TF + "opt = tf.keras.mixed_precision.LossScaleOptimizer(opt)\n",
        TF + "s = tf.distribute.MultiWorkerMirroredStrategy()\n",
        TF + "tf.keras.mixed_precision.set_global_policy('mixed_bfloat16')\n",
        # A name of this project, or a parameter: no TensorFlow symbol.
        TF + "from official.common import distribute_utils\n\ns = distribute_utils.TPUStrategy(r)\n",
        TF + "def f(tf):\n    return tf.TPUStrategy(r)\n",
        TF + "from . import experimental\n\ns = experimental.TPUStrategy(r)\n",
        # Only in prose: a comment, a docstring, a message.
        TF + '"""Builds a TPUStrategy or a MultiWorkerMirroredStrategy."""\n# tf.distribute.experimental.TPUStrategy is gone\nprint("use TPUStrategy")\n',
    ],
)
def test_no_reference_to_an_old_name_skips_libcst(source):
    assert not needed(source)
    assert migrate(source, Options()).reports == []


def test_a_name_aliased_through_itself_counts_as_any_name():
    """``a = b.c`` / ``b = a``: no dotted name can be told, so the file goes on to LibCST."""
    index = syntax_stage.SourceIndex(syntax_stage.parse(TF + "a = b.experimental\nb = a\ns = a.TPUStrategy(r)\n"))
    assert index.may_name(["tensorflow.distribute.experimental.TPUStrategy"])
    plain = syntax_stage.SourceIndex(syntax_stage.parse(TF + "a = b.experimental\nb = tf.keras\ns = a.TPUStrategy(r)\n"))
    assert not plain.may_name(["tensorflow.distribute.experimental.TPUStrategy"])
    assert plain.may_name([], ["tensorflow.keras.experimental"])


BOTH = "(tf.distribute.TPUStrategy, tf.distribute.experimental.TPUStrategy)"


@pytest.mark.parametrize(
    "source",
    [
        # A type check that already accepts both classes (tf-models-official 2.5 and later).
        TF + f"if isinstance(s, {BOTH}):\n    pass\n",
        TF + "from tensorflow.distribute import TPUStrategy\n\nok = issubclass(c, (TPUStrategy, tf.distribute.experimental.TPUStrategy))\n",
        # ... in a file whose classes and traced functions the index also reads.
        TF + f"class Trainer(tf.Module):\n    @tf.function\n    def step(self, s):\n        return isinstance(s, {BOTH})\n",
    ],
)
def test_a_type_check_that_accepts_both_classes_skips_libcst(source):
    assert not needed(source)
    assert migrate(source, Options()).reports == []


@pytest.mark.parametrize(
    "source",
    [
        TF + "if isinstance(s, tf.distribute.experimental.TPUStrategy):\n    pass\n",
        # The stable class's name not surely the stable class: a parameter, an import the
        # module runs only in a function.
        TF + "def f(s, T):\n    return isinstance(s, (T, tf.distribute.experimental.TPUStrategy))\n",
        "def f(s):\n    import tensorflow as tf\n    return 1\n\n\nimport tensorflow.distribute.experimental as tde\n\n"
        "def g(s):\n    return isinstance(s, (tf.distribute.TPUStrategy, tde.TPUStrategy))\n",
        TF + "class Trainer(tf.Module):\n    @tf.function\n    def step(self, s):\n        return isinstance(s, tf.distribute.experimental.TPUStrategy)\n",
    ],
)
def test_a_type_check_that_may_miss_the_stable_class_goes_to_libcst(source):
    assert needed(source)
    assert "TPU104" in [r.rule for r in migrate(source, Options()).reports]


# -- the text alone: ``re.compile(...)`` (``CompileArguments.ruled_out_by_text``) ----------

RE = TF + "import re\n\n"


@pytest.mark.parametrize(
    "source",
    [
        RE + "PATTERN = re.compile(r'a+', re.I | re.U)\n",
        RE + "def words(text):\n    return re.compile('[a-z]+', re.I, 0).findall(text)\n",  # three arguments
        TF + "import re as regex\nfrom regex2 import compile as c\n\nP = regex.compile('a', regex.I)\n",
        TF + "from utils import patterns\n\nP = patterns.compile('a', 'b', 'c')\n",  # a module of the tree, imported
    ],
)
def test_compile_on_an_imported_module_alone_is_ruled_out_without_an_ast_parse(source, monkeypatch):
    from migrate_tpu.codemod.rules.structural.compile_arguments import CompileArguments

    assert CompileArguments.ruled_out_by_text(source)
    assert not CompileArguments.may_fire(syntax_stage.SourceIndex(syntax_stage.parse(source)))  # the ast stage agrees
    monkeypatch.setattr(syntax_stage, "parse", lambda source: pytest.fail("parsed by ast"))
    assert syntax_stage.may_fire(source, RULES) == (False, None)


@pytest.mark.parametrize(
    "source",
    [
        RE + "re.compile('a')\nmodel.compile('sgd', 'mse', ['acc'], None)\n",  # another receiver, given four
        RE + "def build(re):\n    return re.compile('sgd', 'mse', ['acc'], None)\n",  # a parameter binds it
        RE + "re = make_model()\nre.compile('sgd', 'mse', ['acc'], None)\n",
        RE + "with scope() as re:\n    re.compile('sgd', 'mse', ['acc'], None)\n",
        RE + "self.model.compile('sgd', 'mse', ['acc'], None)\n",
        RE + "make().compile('sgd', 'mse', ['acc'], None)\n",
        TF + "from . import re\nre.compile('sgd', 'mse', ['acc'], None)\n",  # this project's own module, relative
        TF + "import re\nfrom config import *\nre.compile('sgd', 'mse', ['acc'], None)\n",
        TF + "model.compile('sgd', 'mse', ['acc'], None)\n",  # not imported at all
        RE + "x = 1; re = m\nre.compile('sgd', 'mse', ['acc'], None)\n",
    ],
)
def test_anything_else_about_compile_is_left_to_the_ast_stage(source):
    from migrate_tpu.codemod.rules.structural.compile_arguments import CompileArguments

    assert not CompileArguments.ruled_out_by_text(source)


# -- ``run`` given a function decorated with ``tf.function`` (``SourceIndex.passes_traced_function``) --

TPU = TF + "strategy = tf.distribute.TPUStrategy(resolver)\n\n\n"


@pytest.mark.parametrize(
    "source",
    [
        # A def of the function the call sits in; another function's def of the name is not seen.
        TPU + "def a():\n    @tf.function\n    def step():\n        return 1\n    return strategy.run(step)\n\n\n"
        "def b():\n    @tf.function\n    def step():\n        return 2\n    return strategy.run(step)\n",
        TPU + "@tf.function\ndef step(x):\n    return x\n\n\ndef train(x):\n    return strategy.run(step, args=(x,))\n",
        TPU + "@tf.function(jit_compile=True)\ndef step(x):\n    return x\n\n\nout = strategy.run(fn=step, args=(1,))\n",
        TPU + "def train():\n    @tf.function\n    def step():\n        return 1\n    return [strategy.run(step) for _ in range(3)]\n",
        # ``self.name``: the class body's only binding of it is a decorated method.
        TPU + "class Averager(object):\n    def swap(self):\n        strategy.run(self._swap, args=())\n\n"
        "    @tf.function\n    def _swap(self):\n        return 1\n",
    ],
)
def test_run_given_a_traced_function_skips_libcst(source):
    assert not needed(source)
    assert migrate(source, Options()).reports == []


@pytest.mark.parametrize(
    "source",
    [
        TPU + "def step(x):\n    return x\n\n\nstrategy.run(step, args=(1,))\n",  # plain
        TPU + "@my_decorator\ndef step(x):\n    return x\n\n\nstrategy.run(step, args=(1,))\n",  # may not trace
        # The def is in another function: not where the call looks the name up.
        TPU + "def a():\n    @tf.function\n    def step():\n        return 1\n\n\ndef b():\n    return strategy.run(step)\n",
        # Bound twice where the call finds it, or shadowed on the way there.
        TPU + "@tf.function\ndef step(x):\n    return x\n\n\nstep = make_step()\nstrategy.run(step, args=(1,))\n",
        TPU + "@tf.function\ndef step(x):\n    return x\n\n\ndef train(step):\n    return strategy.run(step, args=(1,))\n",
        TPU + "@tf.function\ndef step(x):\n    return x\n\n\ndef train():\n    global step\n    return strategy.run(step, args=(1,))\n",
        TPU + "from helpers import *\n\n\n@tf.function\ndef step(x):\n    return x\n\n\nstrategy.run(step, args=(1,))\n",
        # A class body is not seen from its methods.
        TPU + "class T(object):\n    @tf.function\n    def step(x):\n        return x\n\n    def train(self):\n        return strategy.run(step)\n",
        # ``self`` of an inner function is not the method's instance.
        TPU + "class T(object):\n    def train(self):\n        def inner(self):\n            return strategy.run(self._swap)\n"
        "        return inner(self)\n\n    @tf.function\n    def _swap(self):\n        return 1\n",
        TPU + "class T(object):\n    def train(self):\n        return strategy.run(self._swap)\n\n    @tf.function\n    def _swap(self):\n"
        "        return 1\n\n    _swap = other\n",
    ],
)
def test_run_given_anything_else_goes_to_libcst(source):
    from migrate_tpu.codemod.rules.structural.eager_run import EagerPlainFunctionRun

    index = syntax_stage.SourceIndex(syntax_stage.parse(source))
    assert EagerPlainFunctionRun.may_fire(index)
    assert needed(source)


@pytest.mark.parametrize(
    "source",
    [
        TF + "model.compile(optimizer=opt, loss='mse', metrics=['accuracy'])\n",
        TF + "model.compile(opt, loss_fn)\nother.compile(\n    optimizer=opt,  # (tuned)\n    loss=')')\n",
    ],
)
def test_compile_given_nothing_tpu401_acts_on_is_ruled_out_without_an_ast_parse(source, monkeypatch):
    from migrate_tpu.codemod.rules.structural.compile_arguments import CompileArguments

    assert CompileArguments.ruled_out_by_text(source)
    assert not CompileArguments.may_fire(syntax_stage.SourceIndex(syntax_stage.parse(source)))
    monkeypatch.setattr(syntax_stage, "parse", lambda source: pytest.fail("parsed by ast"))
    assert syntax_stage.may_fire(source, [CompileArguments]) == (False, None)


@pytest.mark.parametrize(
    "source",
    [
        TF + "model.compile('sgd', 'mse', ['acc'], None)\n",  # a fourth positional argument
        TF + "model.compile(optimizer=opt, loss='mse', experimental_steps_per_execution=8)\n",
        TF + "model.compile(*settings)\n",
        TF + "model.compile(**settings)\n",
        TF + "model.compile(opt, 'mse')\nbuild = model.compile\n",  # one access not called there
    ],
)
def test_compile_given_what_tpu401_may_act_on_goes_to_the_ast_stage(source):
    from migrate_tpu.codemod.rules.structural.compile_arguments import CompileArguments

    assert not CompileArguments.ruled_out_by_text(source)


# -- receivers the tree or the class tells are no strategy -------------------------------


def _index_in_tree(tmp_path, modules, source):
    """The ``ast`` stage's index of ``source`` as a file of a tree holding ``modules``, with the project lookup."""
    from migrate_tpu.codemod.migration.project.lookup import ProjectLookup
    from migrate_tpu.compose import ProjectFiles

    for name, text in modules.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "train.py").write_text(source)
    project = ProjectFiles((str(tmp_path),))
    lookup = ProjectLookup(project.resolve_module, project.read_text, project.tree_files)
    return syntax_stage.SourceIndex(syntax_stage.parse(source), lookup, str(tmp_path / "train.py"))


DRIVERS = {
    "agents/__init__.py": "",
    "agents/drivers.py": "class Driver(object):\n    def run(self, steps):\n        return steps\n",
    "agents/factory.py": "import tensorflow as tf\n\n\ndef make(resolver):\n    return tf.distribute.TPUStrategy(resolver)\n",
}


def test_a_receiver_a_class_of_the_tree_makes_is_no_strategy(tmp_path):
    """``driver = drivers.Driver(); driver.run(...)``: the tree says the callee is a class, which
    gives no strategy (``StrategyFacts`` asks the same question); a function of the tree that
    returns a TPUStrategy still may."""
    from migrate_tpu.codemod.rules.structural.eager_run import EagerPlainFunctionRun

    driver = TF + "from agents import drivers\n\ndriver = drivers.Driver()\ndriver.run(10)\n"
    assert not EagerPlainFunctionRun.may_fire(_index_in_tree(tmp_path / "a", DRIVERS, driver))
    made = TF + "from agents import factory\n\nrunner = factory.make(r)\n\n\ndef step(x):\n    return x\n\n\nrunner.run(step, args=(1,))\n"
    assert EagerPlainFunctionRun.may_fire(_index_in_tree(tmp_path / "b", DRIVERS, made))
    assert [r.rule for r in migrate(made, Options()).reports] == []  # (without the tree in view, nothing is known)


@pytest.mark.parametrize(
    "body, fires",
    [
        ("    def __init__(self):\n        self._session = tf.compat.v1.Session()\n", False),
        ("    def __init__(self):\n        self._session = tf.distribute.TPUStrategy(r)\n", True),
        ("    def __init__(self, session):\n        self._session = session\n", True),  # a name: not followed
        ("    def __init__(self):\n        def later(self):\n            self._session = tf.distribute.TPUStrategy(r)\n", False),  # another self
        ("", False),  # given nothing, and not named like a strategy
    ],
)
def test_a_self_attribute_receiver_is_read_from_the_class(body, fires):
    from migrate_tpu.codemod.rules.structural.eager_run import EagerPlainFunctionRun

    source = TF + "class Policy(object):\n" + body + "\n    def act(self, x):\n        return self._session.run(x)\n"
    assert EagerPlainFunctionRun.may_fire(syntax_stage.SourceIndex(syntax_stage.parse(source))) is fires
    if not fires:
        assert [r for r in migrate(source, Options()).reports if r.rule == "TPU301"] == []


def test_a_self_attribute_named_like_a_strategy_may_be_one():
    from migrate_tpu.codemod.rules.structural.eager_run import EagerPlainFunctionRun

    source = TF + "class Trainer(object):\n    def train(self, step):\n        return self.strategy.run(step)\n"
    assert EagerPlainFunctionRun.may_fire(syntax_stage.SourceIndex(syntax_stage.parse(source)))


VERSION_FLAGS = {
    "config.py": "import tensorflow as tf\n\nIS_OLD = tf.__version__.startswith('2.1')\n",
    "rel/__init__.py": "",
    "rel/compat.py": "import tensorflow as tf\n\nIS_OLD = tf.__version__.startswith('2.1')\n",
    "rel/other.py": "flag = True\n",
}
GUARDED = "\nprint(tf.__version__)\nif {test}:\n    x = 1\nelse:\n    x = 2\n"


@pytest.mark.parametrize(
    "folder, imports, test, guard",
    [
        # A chain through an import: the analysis asks the tree about ``config.IS_OLD`` whole.
        ("", "import config\n", "config.IS_OLD", True),
        ("", "from config import IS_OLD\n", "IS_OLD", True),
        # Relative imports, asked as the analysis names them (``.compat.IS_OLD``).
        ("rel/", "from . import compat\n", "compat.IS_OLD", True),
        ("rel/", "from .compat import IS_OLD as OLD\n", "OLD", True),
        ("rel/", "from .other import flag\n", "flag", False),
        ("rel/", "from . import other\n", "other.flag", False),
    ],
)
def test_a_version_flag_of_the_tree_keeps_its_guard(tmp_path, folder, imports, test, guard):
    """Never silent: an ``if`` on a version flag another module of the tree offers is found,
    however the flag is reached. ``if config.IS_OLD:`` after ``import config`` was ruled out
    by the ``ast`` stage (the chain's head alone, ``config``, was asked of the tree) and its
    branch left as it was; a relative import was always let through, a flag or not."""
    from migrate_tpu.codemod.rules.structural.version_guard import VersionGuard

    source = TF + imports + GUARDED.format(test=test)
    index = _index_in_tree(tmp_path, {**VERSION_FLAGS, folder + "user.py": source}, source)
    index.path = str(tmp_path / folder / "user.py")
    assert VersionGuard.may_fire(index) is guard
    found = [r.rule for r in migrate(source, Options(), lookup=index.lookup, path=index.path).reports]
    assert found == (["TPU601"] if guard else [])
