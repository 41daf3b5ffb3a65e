"""The project lookup (``codemod/project.py``) skips the LibCST parse of a module that cannot
answer (issue 21) and still follows a version read through a chain of modules."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate_tpu.codemod.migration.project.lookup import ProjectLookup
from migrate_tpu.compose import ProjectFiles


def _lookup(root: Path) -> ProjectLookup:
    """The project lookup of a run over ``root``, as the composition root builds it."""
    project = ProjectFiles((str(root),))
    return ProjectLookup(project.resolve_module, project.read_text, project.tree_files)


def _tree(tmp_path: Path) -> ProjectLookup:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "compat.py").write_text("import tensorflow as tf\n\nIS_TF_21 = tf.__version__.startswith('2.1')\n")
    # Names no version itself: it re-exports the one of compat.py under another name.
    (package / "flags.py").write_text("from pkg.compat import IS_TF_21\n\nUSE_OLD_API = IS_TF_21\n")
    # Imports from compat.py, but none of its version names.
    (package / "layers.py").write_text(
        "import tensorflow as tf\nfrom pkg import compat\n\n\ndef dense(x):\n    return tf.keras.layers.Dense(4)(x)\n\n\n"
        "class \\\n        Block(tf.keras.Model):\n    @tf.function\n    def call(self, x):\n        return dense(x)\n"
    )
    (package / "train.py").write_text("from pkg.flags import USE_OLD_API\nfrom pkg.layers import dense\n")
    return _lookup(tmp_path)


def test_a_version_read_through_a_module_that_does_not_name_it_is_followed(tmp_path):
    lookup = _tree(tmp_path)
    train = str(tmp_path / "pkg" / "train.py")
    values = lookup.version_values("pkg.flags.USE_OLD_API", train)
    assert values is not None and values["2.1.0"] is True and values["2.4.1"] is False


def test_a_module_that_cannot_read_the_version_is_not_parsed_for_it(tmp_path):
    lookup = _tree(tmp_path)
    train = str(tmp_path / "pkg" / "train.py")
    assert lookup.version_values("pkg.layers.dense", train) is None
    assert lookup.version_values("pkg.flags.missing", train) is None  # a name the module does not hold
    assert not any(path.endswith(("layers.py", "flags.py")) for path in lookup.walked)
    # Asked what it offers otherwise (a class's traced methods), the module is summarised.
    assert lookup.class_tracing("pkg.layers.Block", train) is not None
    assert any(path.endswith("layers.py") for path in lookup.made("traced_methods"))


def test_a_module_is_not_parsed_for_the_class_tables_of_a_name_it_binds_by_no_class(tmp_path):
    """The traced-methods and compile tables have entries for classes only: a function
    (``create_model``) is not looked for in a summary; a class, written over a line
    continuation, is."""
    lookup = _tree(tmp_path)
    train = str(tmp_path / "pkg" / "train.py")
    assert lookup.class_tracing("pkg.layers.dense", train) is None
    assert lookup.compile_owners("pkg.layers.dense", train) is None
    assert not any(path.endswith("layers.py") for path in lookup.walked)
    # The module was read for the answer: a cached result depends on it.
    assert any(path.endswith("layers.py") for path in lookup.take_consulted())
    assert lookup.compile_owners("pkg.layers.Block", train) == "keras"
    assert "train_step" in lookup.class_tracing("pkg.layers.Block", train)[0]  # as Keras runs it
    assert any(path.endswith("layers.py") for path in lookup.made("compile_owners") & lookup.made("traced_methods"))
    # Made, the summary answers for the function as before: nothing.
    assert lookup.compile_owners("pkg.layers.dense", train) is None


def _optimizer_tree(tmp_path: Path) -> ProjectLookup:
    package = tmp_path / "optim"
    package.mkdir()
    # A package whose __init__ re-exports many modules: asking for one name must not
    # summarise the others (each would be a LibCST parse and analysis).
    (package / "__init__.py").write_text(
        "from optim.adam import WarmAdam\nfrom optim.layers import Dense\nfrom optim.loops import Loop\n"
    )
    (package / "adam.py").write_text(
        "import tensorflow as tf\nfrom optim.base import BaseAdam as WarmAdam\n"
    )
    (package / "base.py").write_text(
        "import tensorflow as tf\n\nclass BaseAdam(tf.keras.optimizers.Adam):\n    pass\n"
    )
    (package / "layers.py").write_text("import tensorflow as tf\n\nclass Dense(tf.keras.layers.Layer):\n    pass\n")
    (package / "loops.py").write_text("class Loop:\n    pass\n")
    # Two modules re-exporting each other's name: a cycle answers nothing, and ends.
    (package / "cycle_a.py").write_text("from optim.cycle_b import Left\n")
    (package / "cycle_b.py").write_text("from optim.cycle_a import Left\n")
    return _lookup(tmp_path)


def _summarised(lookup: ProjectLookup, table=None) -> set:
    """The names of the modules whose ``table`` (any, when None) is made."""
    return {Path(path).name for path in lookup.made(table)}


def test_a_re_exported_optimizer_is_followed_through_two_modules(tmp_path):
    lookup = _optimizer_tree(tmp_path)
    here = str(tmp_path / "train.py")
    verdict = lookup.optimizer_class("optim.WarmAdam", here)
    assert verdict is not None and verdict.kind == "inherited" and verdict.name == "BaseAdam"
    # Only the chain asked about is summarised: not layers.py or loops.py.
    assert _summarised(lookup) == {"__init__.py", "adam.py", "base.py"}


def test_a_cycle_of_re_exports_answers_nothing(tmp_path):
    lookup = _optimizer_tree(tmp_path)
    here = str(tmp_path / "train.py")
    assert lookup.optimizer_class("optim.cycle_a.Left", here) is None
    assert lookup.optimizer_class("optim.Dense", here) is None
    assert {"cycle_a.py", "cycle_b.py"} <= _summarised(lookup)
    # A Keras layer is no optimizer: its base tells, without a summary.
    assert "layers.py" not in _summarised(lookup)


def _package(tmp_path: Path, name: str, modules: dict) -> ProjectLookup:
    """The lookup of a run over ``tmp_path`` holding package ``name`` with ``modules`` (file: text)."""
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for file, text in modules.items():
        (package / file).write_text(text)
    return _lookup(tmp_path)


def _config_tree(tmp_path: Path) -> ProjectLookup:
    return _package(tmp_path, "cfg", {
        "base.py": "import dataclasses\n\n\nclass Config(object):\n    lr: float = 0.1\n",
        "params.py": "from cfg import base\n\n\nclass ParamsDict(base.Config):\n    pass\n",
        "opt.py": "import tensorflow as tf\nfrom cfg import params\n\n\nclass Base(tf.keras.optimizers.Adam):\n    pass\n\n\n"
        "class Warm(Base):\n    pass\n\n\nclass Odd(params.ParamsDict, Base):\n    pass\n",
        "maybe.py": "import tensorflow as tf\n\nif tf.__version__ < '2.4':\n    class Old(tf.keras.optimizers.Adam):\n        pass\n",
        "relative.py": "from .opt import Base\n\n\nclass Rel(Base):\n    pass\n",
    })


def test_a_class_whose_bases_are_no_optimizers_is_not_summarised_for_one(tmp_path):
    """``ParamsDict(base.Config)``, ``Config(object)``: no base can be an optimizer, as the
    modules' ``ast`` tells, so neither module is parsed with LibCST for the question."""
    lookup = _config_tree(tmp_path)
    here = str(tmp_path / "train.py")
    assert lookup.optimizer_class("cfg.params.ParamsDict", here) is None
    assert lookup.optimizer_class("cfg.base.Config", here) is None
    assert _summarised(lookup) == set()
    # Both modules were read for the answer: a cached result depends on them.
    assert {Path(path).name for path in lookup.take_consulted()} >= {"params.py", "base.py"}


def test_a_class_that_may_be_an_optimizer_is_still_summarised(tmp_path):
    lookup = _config_tree(tmp_path)
    here = str(tmp_path / "train.py")
    for name in ("Base", "Warm", "Odd"):  # a Keras base, a base of the module, one base of two
        verdict = lookup.optimizer_class(f"cfg.opt.{name}", here)
        assert verdict is not None and verdict.kind == "inherited", name
    # A class bound in a block, and one whose base comes by a relative import: left to the summary.
    lookup.optimizer_class("cfg.maybe.Old", here)
    assert "maybe.py" in _summarised(lookup)
    lookup.optimizer_class("cfg.relative.Rel", here)
    assert "relative.py" in _summarised(lookup)


def test_the_stand_in_scan_parses_only_files_that_may_bind_the_method(tmp_path, monkeypatch):
    import ast

    (tmp_path / "calls.py").write_text("def step(strategy, f):\n    return strategy.experimental_run_v2(f)\n")
    (tmp_path / "keyword.py").write_text("make(experimental_run_v2=None)\n")  # may bind: parsed, finds no class
    (tmp_path / "stand_in.py").write_text(
        "class Single:\n    def experimental_run_v2(self, fn, args=()):\n        return fn(*args)\n"
    )
    (tmp_path / "alias.py").write_text("class Aliased:\n    experimental_run_v2 \\\n        = print\n")
    lookup = _lookup(tmp_path)
    parsed = []
    real_parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda text, *a, **k: parsed.append(text) or real_parse(text, *a, **k))
    found = lookup.stand_in_classes("experimental_run_v2", "run", str(tmp_path / "calls.py"))
    assert sorted(name for name, _ in found) == ["Aliased", "Single"]
    assert len(parsed) == 3 and not any("strategy.experimental_run_v2(f)" in text for text in parsed)


def test_module_resolution_is_asked_once_per_folder(tmp_path, monkeypatch):
    from migrate_tpu.engine import discover

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("")
    project = ProjectFiles((str(tmp_path),))
    calls = []
    real = discover.resolve_from
    monkeypatch.setattr(discover, "resolve_from", lambda *a: calls.append(a) or real(*a))
    for name in ("a.py", "b.py", "a.py"):
        assert project.resolve_module("pkg.mod", str(tmp_path / name)) == str(tmp_path / "pkg" / "mod.py")
        assert project.resolve_module("pkg.gone", str(tmp_path / name)) is None
    assert len(calls) == 2
    # A copy sent to a worker starts with nothing resolved.
    import pickle

    assert pickle.loads(pickle.dumps(project))._resolved == {}


def test_import_statements_are_found_without_parsing_the_module():
    import ast

    from migrate_tpu.codemod.migration.project.versions import _import_statements

    text = (
        "import a.b as c\n"
        "from . import (x,\n   y)  # a comment\n"
        "try: import z\n"
        "except ImportError: from w import v; import q\n"
        "def f():\n    from .. import r\n"
        "value = 1 \\\n  ; import cont\n"
        "from m import \\\n   n\n"
        "print('import this')\n"  # no statement starts there
        "broken = (\n"  # the rest of the module does not parse: the imports above still count
    )
    found = [ast.unparse(node) for node in _import_statements(text)]
    assert found == [
        "import a.b as c", "from . import x, y", "import z", "from w import v", "import q",
        "from .. import r", "import cont", "from m import n",
    ]
    # A docstring that reads like an import is taken too: one more module looked at, never one less.
    assert [ast.unparse(n) for n in _import_statements('"""\nfrom nowhere import thing\n"""\n')] == ["from nowhere import thing"]


def _cycle_tree(tmp_path: Path, with_reader: bool) -> ProjectLookup:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from pkg import a\nfrom pkg import b\n")
    (package / "c.py").write_text("import tensorflow as tf\n\nIS_OLD = tf.__version__.startswith('2.1')\n")
    # a and b import each other (and the package's __init__ both): a cycle. a re-exports
    # c's flag when ``with_reader``; b reads it through a, and b is met first from a.
    reexport = "from pkg.c import IS_OLD\n" if with_reader else "IS_OLD = False\n"
    (package / "a.py").write_text("from pkg import b\n" + reexport)
    (package / "b.py").write_text("from pkg import a\nfrom pkg.a import IS_OLD\n\nUSE_OLD = IS_OLD\n")
    return _lookup(tmp_path)


def test_a_version_read_around_an_import_cycle_is_not_ruled_out_by_the_order_of_questions(tmp_path):
    lookup = _cycle_tree(tmp_path, with_reader=True)
    here = str(tmp_path / "train.py")
    # Asking a first computes b's answer while a is still in progress: that "no" is not kept.
    first = lookup.version_values("pkg.a.IS_OLD", here)
    assert first is not None and first["2.1.0"] is True and first["2.4.1"] is False
    assert lookup._may_offer_version(str(tmp_path / "pkg" / "b.py"), "USE_OLD") is True
    # (b's own summary, made while a's was in progress, still lacks the flag: a cycle of
    # summaries answers nothing, as before; asked first, b finds it.)
    fresh = _cycle_tree(tmp_path / "again", with_reader=True) if (tmp_path / "again").mkdir() is None else None
    second = fresh.version_values("pkg.b.USE_OLD", str(tmp_path / "again" / "train.py"))
    assert second is not None and second["2.1.0"] is True and second["2.4.1"] is False


def test_an_import_cycle_that_reads_no_version_is_not_parsed_for_one(tmp_path):
    lookup = _cycle_tree(tmp_path, with_reader=False)
    here = str(tmp_path / "train.py")
    assert lookup.version_values("pkg.a.IS_OLD", here) is None
    assert lookup.version_values("pkg.b.USE_OLD", here) is None
    assert lookup.version_values("pkg.USE_OLD", here) is None
    assert _summarised(lookup) == set()  # before: the package's __init__, a and b, each a LibCST parse


def test_a_no_that_rested_on_an_open_question_waits_for_its_answer(tmp_path):
    """b.E reads b.N, which reads a.A_FLAG, asked first and open while b's names are: E's
    "no" rests on N's and N's on A_FLAG's. A_FLAG then reads c's flag: all three read it,
    and the outline must not have kept E's early "no" (nor the version table miss it)."""
    # Each statement's words are asked in sorted order: N before Z_OLD, A_FLAG before E.
    lookup = _package(
        tmp_path,
        "pkg",
        {
            "c.py": "import tensorflow as tf\n\nZ_OLD = tf.__version__.startswith('2.1')\n",
            "a.py": "from pkg.b import N\nfrom pkg.c import Z_OLD\n\nA_FLAG = N or Z_OLD\n",
            "b.py": "from pkg.a import A_FLAG\n\nN = A_FLAG or E\nE = N\n",
        },
    )
    package = tmp_path / "pkg"
    a, b = str(package / "a.py"), str(package / "b.py")
    assert lookup._may_offer_version(a, "A_FLAG") is True
    assert lookup._may_offer_version(b, "E") is True
    assert lookup._may_offer_version(b, "N") is True
    assert lookup.version_values("pkg.b.E", str(tmp_path / "train.py")) is not None
    assert lookup._may_offer_version(a, "N") is True  # the import of b's N
    assert lookup._may_offer_version(str(package / "c.py"), "tf") is False


def test_an_outline_rules_out_names_that_read_nothing_without_a_libcst_parse(tmp_path):
    lookup = _package(
        tmp_path,
        "pkg",
        {
            "utils.py": "import tensorflow as tf\n\n"
            "def user_agent():\n    return 'tf/' + tf.__version__\n\n"
            "def fetch(url):\n    return url + user_agent()\n\n"
            "def shape_list(x):\n    return x.shape.as_list()\n\n"
            "class Config:\n    RELEASE = tf.VERSION\n\n"
            "def release():\n    return Config.RELEASE\n\n"
            "class Plain:\n    SIZE = 3\n    def version(self):\n        return tf.__version__\n\n"
            "def size():\n    return Plain.SIZE\n",
            "model.py": "from pkg.utils import fetch, shape_list\n\nLOAD = fetch\nSHAPE = shape_list\n",
        },
    )
    package = tmp_path / "pkg"
    here = str(tmp_path / "train.py")
    utils, model = str(package / "utils.py"), str(package / "model.py")
    assert [lookup._may_offer_version(utils, name) for name in ("user_agent", "fetch", "release")] == [True] * 3
    # A method's body is not what ``Plain.SIZE`` reads; a class is no value of the table.
    assert [lookup._may_offer_version(utils, name) for name in ("shape_list", "size", "Config", "missing")] == [False] * 4
    assert lookup._may_offer_version(model, "LOAD") is True
    assert lookup.version_values("pkg.model.SHAPE", here) is None
    assert lookup.version_values("pkg.utils.shape_list", here) is None
    assert lookup.walked == set()  # neither module was parsed with LibCST to tell
    assert lookup.version_values("pkg.model.LOAD", here) == "unknown"


def _tracing_tree(tmp_path: Path) -> ProjectLookup:
    loop = "class Loop(object):\n    def __init__(self):\n        {}\n\n    def train(self, x):\n        return x\n"
    return _package(tmp_path, "tr", {
        "config.py": "class Config(object):\n    def as_dict(self):\n        return dict(vars(self))\n",
        "task.py": "from tr import config\n\n\nclass TaskConfig(config.Config):\n    pass\n",
        "model.py": "import tensorflow as tf\n\n\nclass Net(tf.keras.Model):\n    pass\n",
        "sub.py": "from tr import model\n\n\nclass Bigger(model.Net):\n    pass\n",
        "own.py": "import tensorflow as tf\n\n\n" + loop.format("self.step = tf.function(self.train)"),
        "alias.py": "from tensorflow import function as compiled\n\n\n" + loop.format("self.step = compiled(self.train)"),
        "local.py": "import tensorflow as tf\n\n\n" + loop.format("wrap = tf.function\n        self.step = wrap(self.train)"),
        "builder.py": "from tr import config\n\n\nclass Builder(object):\n    def build(self, kind):\n        make = config.Config\n"
        "        if kind:\n            make = self.pick(kind)\n        return make()\n",
    })


def test_a_class_that_runs_nothing_traced_is_not_summarised_for_it(tmp_path):
    """``TaskConfig(config.Config)``: no base is a library class that traces, none calls
    ``tf.function``: both modules' ``ast`` tell, and neither is parsed with LibCST."""
    lookup = _tracing_tree(tmp_path)
    here = str(tmp_path / "train.py")
    assert lookup.class_tracing("tr.task.TaskConfig", here) is None
    assert lookup.class_tracing("tr.config.Config", here) is None
    # ``make = config.Config; make()``: a local alias of a class, no tf.function.
    assert lookup.class_tracing("tr.builder.Builder", here) is None
    assert _summarised(lookup) == set()
    assert {Path(path).name for path in lookup.take_consulted()} >= {"task.py", "config.py"}


def test_a_class_that_may_run_methods_traced_is_still_summarised(tmp_path):
    lookup = _tracing_tree(tmp_path)
    here = str(tmp_path / "train.py")
    # A Keras model, and a subclass of one in another module: Keras traces train_step.
    assert "train_step" in lookup.class_tracing("tr.model.Net", here)[0]
    assert "train_step" in lookup.class_tracing("tr.sub.Bigger", here)[0]
    # ``self.train`` given to tf.function, spelled as such or through an imported alias.
    assert "train" in lookup.class_tracing("tr.own.Loop", here)[0]
    assert "train" in lookup.class_tracing("tr.alias.Loop", here)[0]
    assert "train" in lookup.class_tracing("tr.local.Loop", here)[0]  # a method's own alias
    assert {"model.py", "sub.py", "own.py", "alias.py", "local.py"} <= _summarised(lookup)


def test_a_modules_version_names_are_made_without_its_other_tables(tmp_path):
    """Asked which names read the version, a module is walked for that table alone: its
    class's base, in another module, is not summarised for a compile or traced-methods
    table nobody asked for. A later class question makes the traced-methods tables of the
    class's module and of its base's, and no other; the version table agrees after it."""
    lookup = _package(tmp_path, "vt", {
        "base.py": "import tensorflow as tf\n\n\nclass Model(tf.keras.Model):\n    pass\n",
        "compat.py": "import tensorflow as tf\nfrom vt import base\n\nIS_TF_21 = tf.__version__.startswith('2.1')\n\n\n"
        "class Net(base.Model):\n    pass\n",
    })
    here = str(tmp_path / "train.py")
    values = lookup.version_values("vt.compat.IS_TF_21", here)
    assert values is not None and values["2.1.0"] is True and values["2.4.1"] is False
    assert _summarised(lookup) == _summarised(lookup, "versions") == {"compat.py"}
    assert "train_step" in lookup.class_tracing("vt.compat.Net", here)[0]
    assert _summarised(lookup, "traced_methods") == {"compat.py", "base.py"}
    assert _summarised(lookup) == {"compat.py", "base.py"}
    assert _summarised(lookup, "compile_owners") == _summarised(lookup, "strategies") == set()
    assert lookup.version_values("vt.compat.IS_TF_21", here) == values


def test_a_name_bound_only_as_a_class_is_not_looked_for_in_the_strategy_and_version_tables(tmp_path):
    """The strategy tables hold names a def or an assignment binds, the version table none a
    class binds: a module binding the name only by ``class`` (and imports, for strategies) is
    not parsed to learn it offers nothing, so ``Config = configs.Config`` re-exported from a
    chain of modules is not followed through their summaries. The answers stay those the
    tables give: a strategy global and a version name beside the class are still found."""
    lookup = _package(tmp_path, "chain", {
        # Each module names the version, so only the binding test keeps it from being parsed.
        "configs.py": "import tensorflow as tf\nfrom chain import base\n\nVERSION = tf.__version__\n\n\n"
        "class Config(base.Base):\n    pass\n",
        "base.py": "import tensorflow as tf\n\nVERSION = tf.__version__\n\n\nclass Base(object):\n    pass\n",
        "trainer.py": "import tensorflow as tf\nfrom chain import configs\n\nConfig = configs.Config\n"
        "STRATEGY = tf.distribute.experimental.TPUStrategy()\nIS_OLD = tf.__version__.startswith('2.1')\n",
    })
    here = str(tmp_path / "train.py")
    assert lookup.factory_kinds("chain.configs.Config", here, call=False) is None
    assert lookup.version_values("chain.configs.Config", here) is None
    assert lookup.walked == set()
    # The strategy table of trainer.py is made; its re-export of the class leads nowhere.
    assert lookup.factory_kinds("chain.trainer.Config", here, call=False) is None
    assert lookup.factory_kinds("chain.trainer.STRATEGY", here, call=False)
    assert lookup.version_values("chain.trainer.IS_OLD", here)["2.1.0"] is True
    assert {Path(path).name for path in lookup.walked} == {"trainer.py"}


def test_a_class_name_a_global_statement_may_also_bind_is_looked_for(tmp_path):
    """A ``global`` in a method names a module's name from inside a class, where the ``ast``
    reading of the bindings does not look: such a module is not told by it, and is parsed.
    (The analysis binds what a ``global`` assigns in the function's own scope, so its table
    offers nothing here either: the test is the cautious side of that.)"""
    lookup = _package(tmp_path, "glob", {
        "made.py": "import tensorflow as tf\n\n\nclass Holder(object):\n    def make(self):\n        global Holder\n"
        "        Holder = tf.distribute.experimental.TPUStrategy()\n",
    })
    here = str(tmp_path / "train.py")
    assert lookup.factory_kinds("glob.made.Holder", here, call=False) is None
    assert {Path(path).name for path in lookup.walked} == {"made.py"}


@pytest.mark.parametrize(
    "text, reads",
    [
        ("__version__ = '3.0.2'\nprint(__version__)\n", False),  # the module's own
        ("import torch\nimport numpy as np\nV = (torch.__version__, np.__version__)\n", False),
        ("from . import __version__\nUA = 'pkg/' + __version__\n", False),  # another module's to offer
        ("VERSION = 2\nimport config\nX = config.VERSION\n", False),
        ("import tensorflow as tf\nOLD = tf.__version__.startswith('2.1')\n", True),
        ("import tensorflow as tf\nOLD = tf.version.VERSION < '2.2'\n", True),
        ("import tensorflow as tf\nOLD = tf.compat.v1.__version__\n", True),  # not on a plain name: doubt
        ("from tensorflow import __version__ as v\n", True),
        ("from tensorflow import version\nOLD = version.VERSION\n", True),
        ("import tensorflow as tf\nt = tf\nOLD = t.__version__\n", True),  # bound otherwise: doubt
        ("from tensorflow import *\nOLD = __version__\n", True),
    ],
)
def test_only_tensorflows_own_version_counts_as_read(text, reads):
    """``__version__`` of another package, or a module's own, reads no TensorFlow version: on
    transformers 3.0.2 every such module's version table was made (a LibCST parse each)."""
    from migrate_tpu.codemod.migration.project.versions import _import_statements, _may_read_tensorflow_version

    assert _may_read_tensorflow_version(text, _import_statements(text)) is reads


# Ways a module's name may read the version, for the outline's gate to let through.
_READERS = '''import tensorflow as tf
from tensorflow import __version__ as tf_release
from pkg import flags
from pkg.flags import IS_OLD as OLD

MAJOR, MINOR = tf.__version__.split(".")[:2]
LOOSE = tf_release
ALIAS = OLD
THROUGH_MODULE = flags.IS_OLD
if (WALRUS := tf.VERSION):
    pass


def default(v=tf.__version__):
    return v


@decorated
def uses_minor():
    return MINOR


def local_import():
    from pkg.flags import IS_OLD as old
    return old


class Settings:
    RELEASE = tf.__version__


def from_class():
    return Settings.RELEASE


def declares():
    global DECLARED
    DECLARED = tf.__version__


try:
    TRIED = tf.__version__ >= "2.2"
except AttributeError:
    pass
for SEEN in tf.__version__:
    LOOPED = SEEN
'''


def test_every_name_a_version_table_holds_passes_the_outline(tmp_path):
    lookup = _package(
        tmp_path,
        "pkg",
        {"flags.py": "import tensorflow as tf\n\nIS_OLD = tf.__version__.startswith('2.1')\n", "readers.py": _READERS},
    )
    readers = str(tmp_path / "pkg" / "readers.py")
    table = lookup._version_table(readers)
    assert table is not None
    expected = {"MAJOR", "MINOR", "LOOSE", "ALIAS", "THROUGH_MODULE", "WALRUS", "uses_minor", "from_class", "TRIED"}
    assert expected <= set(table), sorted(expected - set(table))
    assert [name for name in sorted(table) if not lookup._may_offer_version(readers, name)] == []


def test_a_no_settled_by_an_open_question_names_the_files_that_question_read(tmp_path):
    """b.FB's "no" rests on a.FA, open while b is asked; once a.FA is answered, b's answer
    holds, and a file that later uses it depends on a.py too (the engine's cache checks it)."""
    lookup = _package(
        tmp_path,
        "pkg",
        {"a.py": "from pkg.b import FB\n\nFA = FB\n", "b.py": "from pkg.a import FA\n\nFB = FA\n"},
    )
    a, b = str(tmp_path / "pkg" / "a.py"), str(tmp_path / "pkg" / "b.py")
    assert lookup._may_offer_version(a, "FA") is False
    lookup.take_consulted()
    assert lookup._may_offer_version(b, "FB") is False  # kept: asked again, nothing is read
    assert set(lookup.take_consulted()) == {a, b}
