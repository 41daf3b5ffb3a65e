"""The design's walls, read from the code: every module's imports, parsed with ``ast``.

- ``migrate_tpu/codemod`` imports nothing from the engine or the runtime;
- ``migrate_tpu/runtime`` imports nothing from the engine or the codemod and
  never imports LibCST (it must run on Python 3.7 under old TensorFlow);
- ``migrate_tpu/engine`` imports nothing from the codemod or the runtime and
  names no TensorFlow: no import of it, no string naming the package;
- ``migrate_tpu/verify`` reaches the codemod and the engine only through the
  composition root, and of the runtime only the launcher and the recorder's names
  (no TensorFlow in verify's own process);
- TensorFlow is imported only under ``migrate_tpu/runtime``.

Only the top-level modules (the CLI, the composition root, the settings) may
import from several parts. Imports inside functions count as much as those at
the top: a lazy import still crosses the wall.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "migrate_tpu"

# part -> module prefixes it must not import
FORBIDDEN = {
    "codemod": ("migrate_tpu.engine", "migrate_tpu.runtime", "migrate_tpu.cli", "migrate_tpu.compose", "migrate_tpu.settings", "tensorflow"),
    "runtime": ("migrate_tpu.engine", "migrate_tpu.codemod", "migrate_tpu.cli", "migrate_tpu.compose", "migrate_tpu.settings", "libcst"),
    "engine": ("migrate_tpu.codemod", "migrate_tpu.runtime", "migrate_tpu.cli", "migrate_tpu.compose", "migrate_tpu.settings", "tensorflow"),
    "verify": ("migrate_tpu.codemod", "migrate_tpu.engine", "migrate_tpu.cli", "libcst", "tensorflow"),
}
# What verify may import of the runtime: the launcher, the recorder for its names, the TPU
# machine for its refusals' words, the moves (all import TensorFlow only inside the interpreter that runs
# the program).
VERIFY_MAY_IMPORT_OF_RUNTIME = ("migrate_tpu.runtime.process.launch", "migrate_tpu.runtime.record.recorder", "migrate_tpu.runtime.tpu.tpu_machine",
                                # and the catalogue's moves as data (blame tries other changes than renames first)
                                "migrate_tpu.runtime.surfaces.moves",
                                # and the launcher's half that starts a run in a process of its own (two runs at once)
                                "migrate_tpu.runtime.process.launch_apart",
                                # and the one reading of a program's code (does it read its cluster itself?)
                                "migrate_tpu.runtime.program.program_code")
# Outside the runtime, whatever the part.
NOWHERE_BUT_RUNTIME = ("tensorflow", "tf_keras")


@functools.lru_cache(maxsize=None)
def parse(source: str) -> ast.Module:
    """``ast.parse``, once a text a session: several tests read every module of the package
    (the trees are only read, never changed)."""
    return ast.parse(source)


@functools.lru_cache(maxsize=None)
def _source(path: Path) -> str:
    return path.read_text("utf-8")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, is_package: bool = False) -> Iterator[Tuple[int, str]]:
    """``(line, imported module)`` for every import in ``source``, relative ones made absolute.

    ``importlib.import_module("x")`` and ``__import__("x")`` with a literal name count too.
    """
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield node.lineno, target
            for alias in node.names:  # `from migrate_tpu import engine` imports a part too
                yield node.lineno, f"{target}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
            if name in ("import_module", "__import__"):
                yield node.lineno, node.args[0].value


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _docstrings(tree: ast.AST) -> set:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def _names_a_runtime_module(name: str) -> bool:
    """Whether ``name`` is a module of the runtime (not the package's own constants, which
    its ``__init__`` defines with the standard library alone)."""
    parts = name.split(".")[2:]
    return bool(parts) and ((PACKAGE / "runtime" / f"{parts[0]}.py").exists() or (PACKAGE / "runtime" / parts[0]).is_dir())


def wall_breaks(source: str, module: str, is_package: bool = False) -> List[str]:
    """Each import (or, in the engine, string naming TensorFlow) that breaks a wall, as ``line: why``."""
    parts = module.split(".")
    part = parts[1] if len(parts) > 1 else ""
    breaks = []
    for line, name in imports_of(source, module, is_package):
        forbidden = [prefix for prefix in FORBIDDEN.get(part, ()) if _within(name, prefix)]
        # (`from migrate_tpu.runtime.process import launch` names the folder too: a package, no code of its own)
        allowed_folder = any(allowed.startswith(name + ".") for allowed in VERIFY_MAY_IMPORT_OF_RUNTIME)
        if part == "verify" and _within(name, "migrate_tpu.runtime") and not allowed_folder and not any(
                _within(name, allowed) for allowed in VERIFY_MAY_IMPORT_OF_RUNTIME):
            if _names_a_runtime_module(name):
                forbidden.append("migrate_tpu.runtime")
        if forbidden:
            breaks.append(f"{line}: {part} imports {name}")
        elif part != "runtime" and any(_within(name, prefix) for prefix in NOWHERE_BUT_RUNTIME):
            breaks.append(f"{line}: {name} imported outside the runtime")
    if part == "engine":
        tree = parse(source)
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                if "tensorflow" in node.value.lower():
                    breaks.append(f"{node.lineno}: the engine names TensorFlow ({node.value[:40]!r})")
    return breaks


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_module_keeps_the_walls(path):
    module = _module_name(path)
    assert wall_breaks(_source(path), module, path.name == "__init__.py") == []


def test_every_part_is_checked():
    parts = {path.relative_to(PACKAGE).parts[0] for path in MODULES if len(path.relative_to(PACKAGE).parts) > 1}
    assert parts == set(FORBIDDEN)


@pytest.mark.parametrize(
    "module, source, expected",
    [
        ("migrate_tpu.codemod.migration.migrator", "from migrate_tpu.engine.pipeline import FileError\n", "codemod imports migrate_tpu.engine.pipeline"),
        ("migrate_tpu.codemod.migration.migrator", "def f():\n    from ...engine import source\n", "codemod imports migrate_tpu.engine"),
        ("migrate_tpu.codemod.rules.structural.eager_run.rule", "from .....runtime import launch\n", "codemod imports migrate_tpu.runtime"),
        ("migrate_tpu.codemod.migration.api", "from migrate_tpu import engine\n", "codemod imports migrate_tpu.engine"),
        ("migrate_tpu.runtime.process.runner", "import libcst as cst\n", "runtime imports libcst"),
        ("migrate_tpu.runtime.process.runner", "from migrate_tpu.codemod.analysis.names import x\n", "runtime imports migrate_tpu.codemod.analysis.names"),
        ("migrate_tpu.engine.config", "import tensorflow as tf\n", "engine imports tensorflow"),
        ("migrate_tpu.engine.config", "PACKAGE = 'tensorflow-cpu'\n", "the engine names TensorFlow"),
        ("migrate_tpu.engine.pipeline", "import importlib\nimportlib.import_module('migrate_tpu.codemod.migration.api')\n",
         "engine imports migrate_tpu.codemod.migration.api"),
        ("migrate_tpu.cli", "import tensorflow\n", "tensorflow imported outside the runtime"),
        ("migrate_tpu.verify.runs.plan", "from migrate_tpu.codemod.migration.api import migrate\n", "verify imports migrate_tpu.codemod.migration.api"),
        ("migrate_tpu.verify.judge.compare", "from migrate_tpu.runtime.surfaces.emulation import install\n",
         "verify imports migrate_tpu.runtime.surfaces.emulation"),
    ],
)
def test_a_break_is_found(module, source, expected):
    breaks = wall_breaks(source, module)
    assert any(expected in found for found in breaks), breaks


def test_what_the_walls_allow():
    assert wall_breaks('"""Knows no tensorflow: this docstring may say so."""\nimport re\n', "migrate_tpu.engine.pipeline") == []
    assert wall_breaks("from migrate_tpu.codemod.foundation.targets import TARGETS\nfrom migrate_tpu.engine.config import load_config\n",
                       "migrate_tpu.compose") == []
    assert wall_breaks("import tensorflow as tf\n", "migrate_tpu.runtime.surfaces.emulation") == []


def import_graph(modules) -> dict:
    """``module -> set of package modules it imports`` (lazy imports included), from ``(name, source, is_package)``."""
    names = {name for name, _, _ in modules}
    graph = {}
    for name, source, is_package in modules:
        edges = set()
        for _, target in imports_of(source, name, is_package):
            # `from migrate_tpu.engine import pipeline` names the submodule; a
            # name that is no module (a class) falls back to its module.
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def import_circles(graph: dict) -> List[List[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


# What the command line may import of the package: the wiring (the composition root and
# the other top-level modules), the engine's reporters, the runtime's own entry points.
# Everything else (the codemod, the engine's pipeline) it reaches through compose.
CLI_MAY_IMPORT = ("migrate_tpu.engine.report", "migrate_tpu.runtime.process.launch", "migrate_tpu.runtime.process.envs", "migrate_tpu.verify")


def cli_reaches_around(source: str) -> List[str]:
    """Each import of ``cli.py`` that is neither a top-level module nor in CLI_MAY_IMPORT."""
    top_level = {path.stem for path in PACKAGE.glob("*.py")}
    found = []
    for line, name in imports_of(source, "migrate_tpu.cli"):
        parts = name.split(".")
        if parts[0] != "migrate_tpu" or len(parts) == 1:
            continue
        if parts[1] in top_level or any(_within(name, allowed) for allowed in CLI_MAY_IMPORT):
            continue
        if len(parts) == 2 and name == "migrate_tpu.__version__":
            continue
        found.append(f"{line}: cli imports {name}")
    return found


def test_the_cli_goes_through_the_composition_root():
    assert cli_reaches_around((PACKAGE / "cli.py").read_text("utf-8")) == []
    assert cli_reaches_around("from migrate_tpu.codemod.framework.rule import all_rules\n") == ["1: cli imports migrate_tpu.codemod.framework.rule",
                                                                                               "1: cli imports migrate_tpu.codemod.framework.rule.all_rules"]
    assert cli_reaches_around("def f():\n    from migrate_tpu.engine.pipeline import migrate_isolated\n")[0] == "2: cli imports migrate_tpu.engine.pipeline"


@functools.lru_cache(maxsize=None)
def _package_graph() -> dict:
    """The package's import graph, made once a session (its readers leave it as it is)."""
    return import_graph([(_module_name(path), _source(path), path.name == "__init__.py") for path in MODULES])


def test_no_import_circle_in_the_package():
    # Lazy imports included: a newcomer can read every part bottom-up.
    assert import_circles(_package_graph()) == []


# The codemod's layers, bottom first: one package each under ``migrate_tpu/codemod/``. A
# module may import its own layer or one below, never one above, lazily or not. A new
# module goes into the package of its layer; a new package must be placed here.
CODEMOD_LAYERS = (
    # Leaves: text, positions, options, what the text alone tells; no LibCST analysis.
    ("foundation", "text, positions and their maps, options, what the text alone tells"),
    # One walk of a module: what names are bound to, where code is traced, what a strategy is.
    ("analysis", "scopes, bindings, names, tracing, strategies, side effects, optimizers"),
    # The speed stages before LibCST's parse: the text, the stdlib ``ast``, the partial parse.
    ("stages", "what each stage spares a file: the prefilter, the syntax stage, the partial parse"),
    # What a rule, a finding, a change and an example are; how fixes are built and applied.
    ("framework", "rules, findings, changes, examples; building and applying fixes"),
    # The rules themselves: catalogue tables, version guards, structural rules; the catalogue on top.
    ("rules", "the table rules, the version guards, the structural rules, the catalogue"),
    # Running rules over a module, across the tree's modules, and migrating a file.
    ("migration", "running the rules, the project lookup, doctests, migrating a file"),
)
CODEMOD_PACKAGES = tuple(package for package, _ in CODEMOD_LAYERS)

# The runtime's layers, bottom first, as its folders (``migrate_tpu/runtime/__init__.py`` and
# docs/architecture.md say the same). Beside them the package's own modules: ``__init__``
# (constants, the standard library only) and ``__main__``.
RUNTIME_LAYERS = (
    # Whose code a frame runs, what a line calls, what AutoGraph converts.
    ("program", "whose code a frame runs, what a line of it calls, what AutoGraph converts"),
    # The emulated TPU and its machine: system calls, strategies, the compile step, its rules.
    ("tpu", "the TPU system, topology, resolver, strategies, the compile step and its rules, the machine"),
    # What the program sees of TensorFlow: the emulation installed, the releases' surfaces.
    ("surfaces", "the emulation installed, API paths, the releases' surfaces, the record of moved APIs"),
    # What verify records of a run.
    ("record", "the recorder, the seeds, verify's power runs"),
    # Processes: the runner, the launcher, warm interpreters, pods, the interpreters.
    ("process", "the runner, the launcher, warm interpreters, pods, the interpreters, the noise"),
)

# verify's layers, bottom first (``migrate_tpu/verify/__init__.py`` says the same). Its package
# module is the door on top: it re-exports what the CLI calls, and no folder imports it.
VERIFY_LAYERS = (
    ("values", "the verdict's types, when two values agree, the one walk of two records, the changes as hunks"),
    ("runs", "the two copies, one run, two runs at once, a program's own cluster"),
    ("judge", "the verdict on two records, the spread, repeatability and power, the advice"),
    ("blame", "which change is to blame, the suspects first"),
    ("command", "the whole command, the report"),
)

# part -> (its layer folders bottom first, the plain modules it may hold beside them)
FOLDER_LAYERS = {
    "codemod": (CODEMOD_PACKAGES, ["__init__.py"]),
    "runtime": (tuple(folder for folder, _ in RUNTIME_LAYERS), ["__init__.py", "__main__.py", "patches.py"]),
    "verify": (tuple(folder for folder, _ in VERIFY_LAYERS), ["__init__.py"]),
}
# parts whose package module is above every folder (a door), not below (constants)
DOOR_ON_TOP = ("verify",)


def layer_of(module: str) -> int:
    """The layer index of a module of a part whose folders are its layers: that of the folder
    it is in (-1: the part's own modules, below every folder)."""
    parts = module.split(".")
    folders = FOLDER_LAYERS[parts[1]][0]
    if parts[2:] == ["__main__"] or (len(parts) == 2 and parts[1] in DOOR_ON_TOP):
        return len(folders)  # the entry point or the door, above them all
    if len(parts) == 2 or (len(parts) == 3 and parts[2] not in folders and (PACKAGE / parts[1] / f"{parts[2]}.py").exists()):
        return -1  # the package itself, or a plain module beside its folders
    if parts[2] in folders:
        return folders.index(parts[2])
    raise AssertionError(f"{module} is in no layer of {parts[1]}: place it in one of the folders {', '.join(folders)}")


def codemod_layer(module: str) -> int:
    """The layer index of a ``migrate_tpu.codemod`` module: that of the package it is in."""
    return layer_of(module)


@pytest.mark.parametrize("part", sorted(FOLDER_LAYERS))
def test_the_folders_are_the_layers(part):
    """``migrate_tpu/<part>/`` holds its layer packages and its plain modules and nothing else;
    each package says, in its ``__init__`` docstring and nothing more, what it holds and what it
    may import."""
    root = PACKAGE / part
    folders, plain = FOLDER_LAYERS[part]
    modules = sorted(path.name for path in root.glob("*.py"))
    packages = sorted(path.name for path in root.iterdir() if path.is_dir() and (path / "__init__.py").exists())
    assert modules == sorted(plain)
    assert packages == sorted(folders)
    for package in folders:
        tree = ast.parse((root / package / "__init__.py").read_text("utf-8"))
        assert ast.get_docstring(tree), f"{part}/{package}/__init__.py says nothing of what it holds"
        assert len(tree.body) == 1, f"{part}/{package}/__init__.py holds more than its docstring"
        assert "may import" in ast.get_docstring(tree).lower(), f"{part}/{package}/__init__.py does not say what it may import"


def test_the_runtime_package_module_imports_no_folder():
    """The runtime's own module holds the constants every folder reads: it imports none of them
    (or the bottom folder would load the top one)."""
    graph = _package_graph()
    assert sorted(target for target in graph["migrate_tpu.runtime"] if target.startswith("migrate_tpu.runtime.")) == []


def back_edges(graph: dict) -> List[str]:
    """``a -> b`` for each module of a layered part importing one of a layer above its own."""
    found = []
    for module, targets in sorted(graph.items()):
        part = module.split(".")[1] if module.count(".") else ""
        if part not in FOLDER_LAYERS:
            continue
        folders = FOLDER_LAYERS[part][0]
        for target in sorted(targets):
            if _within(target, f"migrate_tpu.{part}") and layer_of(target) > layer_of(module):
                found.append(f"{module} ({folders[layer_of(module)] if 0 <= layer_of(module) < len(folders) else part}) -> {target} "
                             f"({folders[layer_of(target)] if layer_of(target) < len(folders) else part})")
    return found


@pytest.mark.parametrize("part", sorted(FOLDER_LAYERS))
def test_layers_point_down(part):
    assert [edge for edge in back_edges(_package_graph()) if edge.startswith(f"migrate_tpu.{part}.")] == []


def test_a_back_edge_is_found():
    graph = import_graph([
        ("migrate_tpu.codemod.analysis.walk", "def f():\n    from migrate_tpu.codemod.framework.rule import Finding\n", False),
        ("migrate_tpu.codemod.framework.rule", "from migrate_tpu.codemod.analysis.walk import Analysis\n", False),
        ("migrate_tpu.runtime.tpu.strategies", "def f():\n    from migrate_tpu.runtime.process import runner\n", False),
        ("migrate_tpu.runtime.process.runner", "from migrate_tpu.runtime.tpu import strategies\n", False),
    ])
    assert back_edges(graph) == ["migrate_tpu.codemod.analysis.walk (analysis) -> migrate_tpu.codemod.framework.rule (framework)",
                                 "migrate_tpu.runtime.tpu.strategies (tpu) -> migrate_tpu.runtime.process.runner (process)"]
    with pytest.raises(AssertionError, match="in no layer"):
        codemod_layer("migrate_tpu.codemod.newcomer")
    with pytest.raises(AssertionError, match="in no layer"):
        codemod_layer("migrate_tpu.codemod.helpers.newcomer")
    with pytest.raises(AssertionError, match="in no layer"):
        layer_of("migrate_tpu.runtime.helpers.newcomer")
    assert codemod_layer("migrate_tpu.codemod.rules.structural.eager_run.rule") == CODEMOD_PACKAGES.index("rules")
    assert layer_of("migrate_tpu.runtime.tpu.tpu_ops") == 1
    # verify's door is on top: a folder that imports it reaches up
    door = import_graph([("migrate_tpu.verify.values.verdict", "from migrate_tpu.verify import compare\n", False),
                         ("migrate_tpu.verify", "", True)])
    assert back_edges(door) == ["migrate_tpu.verify.values.verdict (values) -> migrate_tpu.verify (verify)"]


def test_an_import_circle_is_found():
    modules = [
        ("migrate_tpu.engine.pipeline", "def f():\n    from migrate_tpu.engine.notebook import migrate\n", False),
        ("migrate_tpu.engine.notebook", "from migrate_tpu.engine.pipeline import FileError\n", False),
        ("migrate_tpu.engine.source", "import os\n", False),
    ]
    assert import_circles(import_graph(modules)) == [["migrate_tpu.engine.notebook", "migrate_tpu.engine.pipeline"]]


# The emulated TPU and the surfaces over it, bottom-up: each module imports only the ones before
# it (inside a folder too).
TPU_EMULATION_LAYERS = ("tpu.tpu_system", "tpu.topology", "tpu.resolver", "tpu.strategies", "surfaces.releases", "surfaces.emulation",
                        "surfaces.legacy")


def test_tpu_emulation_modules_import_only_those_below():
    modules = [
        (_module_name(path), _source(path), path.name == "__init__.py")
        for path in MODULES
        if path.relative_to(PACKAGE).parts[0] == "runtime"
    ]
    graph = import_graph(modules)
    names = ["migrate_tpu.runtime." + name for name in TPU_EMULATION_LAYERS]
    upward = [(names[i], target) for i, name in enumerate(names)
              for target in graph.get(name, ()) if target in names[i:]]
    assert upward == []
    # the test sees the imports it checks
    assert "migrate_tpu.runtime.tpu.tpu_system" in graph["migrate_tpu.runtime.tpu.strategies"]
