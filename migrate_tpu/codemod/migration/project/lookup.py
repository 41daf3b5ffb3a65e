"""The project lookup's questions, and the tables of a module's summary they read (see the
package's docstring): ``ProjectLookup``.
"""

from __future__ import annotations

import ast
import os
from typing import Callable, Dict, FrozenSet, List, Optional, Set, Tuple

from migrate_tpu.codemod.migration.project.classes import ClassGates, class_attributes, may_bind
from migrate_tpu.codemod.migration.project.reading import ModuleResolver, TreeFiles
from migrate_tpu.codemod.migration.project.versions import VersionReach


class ProjectLookup(ClassGates, VersionReach):
    """What the tree's modules offer the file being migrated: ``stand_in_classes``,
    ``factory_kinds``, ``optimizer_class``, ``version_values``, ``class_tracing``,
    ``compile_owners``; ``take_consulted``, the files their answers read."""

    def __init__(self, resolve_module: ModuleResolver, read_text: Callable[[str], str], tree_files: Optional[TreeFiles] = None) -> None:
        super().__init__(resolve_module, read_text, tree_files)
        # What each module offers its importers, table by table (``_TABLES``): a table is made
        # the first time a lookup asks for it, from the module's analysis (``_analysis``).
        self._tables: Dict[str, Dict[str, Optional[object]]] = {name: {} for name in _TABLES}
        self._analyses: Dict[str, object] = {}  # walked modules some of whose tables are not made yet
        self.walked: Set[str] = set()  # the modules parsed with LibCST for a table (what a test may ask)
        self._trees: Dict[str, Tuple[str, ...]] = {}
        self._following: Set[str] = set()  # re-exported optimizer names being followed
        self._stand_ins: Dict[Tuple[Tuple[str, ...], str, str], List[Tuple[str, str]]] = {}

    def made(self, table: Optional[str] = None) -> Set[str]:
        """The modules whose ``table`` (any table, when None) is made and offers something."""
        names = (table,) if table is not None else tuple(_TABLES)
        return {path for name in names for path, made in self._tables[name].items() if made is not None}

    def stand_in_classes(self, method: str, instead: str, importing_path: str) -> List[Tuple[str, str]]:
        """(class name, path) of every class of the tree (imported or not) that defines
        ``method`` and no ``instead``: a stand-in for a TensorFlow object with the old name
        only (a ``SingleDeviceStrategy`` with ``experimental_run_v2``). Once per tree and
        process; a file is parsed (by ``ast``) only when its text may bind ``method`` (a
        ``def``/``class`` of that name or the name before ``=``/``:``): a file that only calls
        ``strategy.method(...)`` is not. On TF 2.21's 1,847 files (31 MB), CPU: 0.1-0.2 s to
        read them for one name, 0.1-0.3 s to list them. On 300 generated files that all call
        the method and define none, the gate takes the scan from 2.8 s to 0.1 s."""
        if self._tree_files is None:
            return []
        folder = os.path.dirname(os.path.abspath(importing_path))
        files = self._trees.get(folder)
        if files is None:
            files = self._trees[folder] = self._tree_files(importing_path)
        key = (files, method, instead)
        found = self._stand_ins.get(key)
        if found is not None:
            self._used(("stand-ins", key))
            return found
        found = self._stand_ins[key] = []
        with self._computing(("stand-ins", key)):
            for path in files:
                try:
                    text = self._read_text(path)
                except Exception:  # a file we cannot read offers nothing
                    continue
                if method not in text or not may_bind(method).search(text):  # the cheap tests first
                    continue
                try:
                    tree = ast.parse(text)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    continue
                for node in ast.walk(tree):
                    if isinstance(node, ast.ClassDef):
                        names = class_attributes(node)
                        if method in names and instead not in names:
                            found.append((node.name, path))
        return found

    def factory_kinds(self, dotted: str, importing_path: str, call: bool = True) -> Optional[FrozenSet[str]]:
        """Kinds of strategy that ``dotted(...)`` (or ``dotted`` itself) yields, if known.

        The strategy tables hold only names a ``def`` or an assignment binds: a name the
        module binds only as a class or by imports has no entry, and its module is not
        parsed for it (on tf-models-official 2.6.0, a chain of six summaries of config
        modules followed ``ExperimentConfig = config_definitions.ExperimentConfig``)."""
        found = self._summary_of(dotted, importing_path, "strategies", lambda path, symbol: not self._bound_only_as(path, symbol, ("class", "import")))
        if found is None:
            return None
        tables, symbol = found
        return tables["factories" if call else "values"].get(symbol)

    def optimizer_class(self, dotted: str, importing_path: str):
        """The ``optimizers.OptimizerClass`` that the tree's class ``dotted`` is, if it is one."""
        found = self._summary_of(dotted, importing_path, "optimizers", self._may_be_optimizer_class)
        if found is None:
            return None
        (classes, reexports), symbol = found
        verdict = classes.get(symbol)
        reexported = reexports.get(symbol)
        if verdict is None and reexported is not None and reexported not in self._following:
            # A name the module imports from the tree: asked of the module it comes from, as
            # that module would be asked (a cycle of re-exports answers nothing).
            module_path = self._module_file(dotted, importing_path)
            if module_path is not None:
                self._following.add(reexported)
                try:
                    verdict = self.optimizer_class(reexported, module_path)
                finally:
                    self._following.discard(reexported)
        return verdict

    def version_values(self, dotted: str, importing_path: str):
        """The tree's ``dotted`` name reading the TensorFlow version: {release: value},
        "unknown" (it reads it in a way not evaluated), or None (it does not, or is not in view)."""
        path = self._module_file(dotted, importing_path)
        if path is None:
            return None
        symbol = dotted.rpartition(".")[2]
        if path not in self._tables["versions"]:
            # As ``_summary_of``: the word first, then whether the module's outline lets the
            # name read the version at all (``_may_offer_version``): only then is the module
            # parsed with LibCST for its table.
            if not self._names(path, symbol) or not self._may_offer_version(path, symbol):
                return None
        table = self._version_table(path)
        return None if table is None else table.get(symbol)

    def class_tracing(self, dotted: str, importing_path: str):
        """For the tree's class ``dotted``: (methods it or its bases run under tf.function, and
        those they may: {method: why}), or None when it is not in view (``tracing.py``)."""
        found = self._summary_of(dotted, importing_path, "traced_methods",
                                 lambda path, symbol: self._may_define_class(path, symbol) and self._may_trace_methods(path, symbol))
        if found is None:
            return None
        table, symbol = found
        return table.get(symbol)

    def compile_owners(self, dotted: str, importing_path: str) -> Optional[str]:
        """For the tree's class ``dotted``: whose ``compile`` it has (``compile_arguments.py``:
        "keras", "own", "none" or "unknown"), or None when it is not in view."""
        found = self._summary_of(dotted, importing_path, "compile_owners", self._may_define_class)
        if found is None:
            return None
        table, symbol = found
        return table.get(symbol)

    def _summary_of(self, dotted: str, importing_path: str, table: str, may_offer: Optional[Callable[[str, str], bool]] = None):
        """(the ``table`` of the module defining ``dotted``, the symbol's name), when it is in the tree."""
        path = self._module_file(dotted, importing_path)
        if path is None:
            return None
        symbol = dotted.rpartition(".")[2]
        if path not in self._tables[table]:
            # Every table of a summary is keyed by a name the module binds at its top level,
            # which its text then holds as a word: a module without the word has nothing on
            # the symbol, and is not parsed for it (``flags_core`` looked up in a package's
            # ``__init__`` that does not name it). ``may_offer``: the query's own test that
            # the module can answer anything (benchmarks/README.md).
            if not self._names(path, symbol) or (may_offer is not None and not may_offer(path, symbol)):
                return None
        made = self._table(path, table)
        return None if made is None else (made, symbol)

    def _version_table(self, path: str) -> Optional[dict]:
        """The module's names that read the version (``version_guards.module_version_summary``)."""
        table = self._table(path, "versions")
        return table if isinstance(table, dict) else None  # a dict where it is made

    def _walked(self, path: str):
        """The module's analysis, walked, for its summary's tables; None when it cannot be read
        or parsed (it offers nothing)."""
        from migrate_tpu.codemod.analysis.walk import Analysis
        from migrate_tpu.codemod.foundation.parsing import parse_module

        try:
            # The parse the main path uses (``parsing.py``): a third cheaper, the same tree.
            module = parse_module(self._read_text(path))
        except Exception:  # a module we cannot read or parse offers nothing
            return None
        analysis = Analysis(module, (), lookup=self, path=path)
        # The walk alone: no table reads the module's version guards, and finding them asked
        # about every test's imported names, each question a module's summary away (on
        # tf-models-official 2.4.0, classifier_trainer.py's guards cost 0.2 s through
        # dataset_factory.py's summary). What finding them left for the version table
        # stays: ``Klass.X`` finds its class where the module has a branch or a ``getattr``.
        analysis.walk()
        if analysis.branch_points or "getattr" in analysis.calls_by_name:
            analysis.module_scope.memo["scopes_by_node"] = analysis.scopes_by_node
        return analysis

    def _table(self, path: str, name: str) -> Optional[object]:
        """The module's table ``name`` (``_TABLES``), made once for the run."""
        return self._made(self._tables[name], name, path, lambda path: self._make_table(path, name))

    def _make_table(self, path: str, name: str) -> Optional[object]:
        """One table of the module, from its analysis. Each is made only when asked for: a
        module is asked one thing most of the time, and its tables follow its names into other
        modules of the tree each its own way (on tf-models-official 2.6.0 a question about
        one class's traced methods made the strategy tables of five config modules)."""
        analysis = self._analysis(path)
        if analysis is None:
            return None
        made = _TABLES[name](analysis)
        if all(path in self._tables[other] for other in _TABLES if other != name):
            self._analyses.pop(path, None)  # every table is made (this one is, once returned)
        return made

    def _analysis(self, path: str):
        """The module's analysis, walked (``_walked``), kept while some of its tables are not
        made: at most ``_KEPT_ANALYSES`` of them (the oldest is let go, and walked again if
        asked for again). What it read counts for each table made from it."""
        key = ("analysis", path)
        if path in self._analyses:
            self._used(key)
            return self._analyses[path]
        with self._computing(key):
            analysis = self._walked(path)
        self.walked.add(path)
        if analysis is not None:
            if len(self._analyses) >= _KEPT_ANALYSES:
                del self._analyses[next(iter(self._analyses))]
            self._analyses[path] = analysis
        return analysis


def _strategy_table(analysis) -> dict:
    """{"factories": functions returning strategies, "values": strategy globals}."""
    from migrate_tpu.codemod.analysis.strategies import module_strategy_summary

    return module_strategy_summary(analysis)


def _optimizer_table(analysis) -> tuple:
    """(optimizer classes by name, names imported from the tree that may be one)."""
    from migrate_tpu.codemod.analysis.optimizers import module_optimizer_summary

    return module_optimizer_summary(analysis)


def _version_table(analysis) -> dict:
    """{name reading the TensorFlow version: {release: value} or "unknown"}."""
    from migrate_tpu.codemod.rules.version_guards.values import module_version_summary

    return module_version_summary(analysis)


def _tracing_table(analysis) -> dict:
    """{class: its methods run, or maybe run, under tf.function}."""
    from migrate_tpu.codemod.analysis.tracing import module_class_tracing

    return module_class_tracing(analysis)


def _compile_table(analysis) -> dict:
    """{class: whose ``compile`` it has}."""
    from migrate_tpu.codemod.rules.structural.compile_arguments import module_compile_owners

    return module_compile_owners(analysis)


# What a module of the tree offers its importers: the tables of its summary, by name.
_TABLES: Dict[str, Callable[[object], object]] = {
    "strategies": _strategy_table,
    "optimizers": _optimizer_table,
    "versions": _version_table,
    "traced_methods": _tracing_table,
    "compile_owners": _compile_table,
}


# Walked modules kept for tables not made yet: a LibCST tree of a large module is tens of
# megabytes, and most modules are asked for one table only.
_KEPT_ANALYSES = 16
