"""Facts one module of a tree offers another: which functions return strategies, which
classes are optimizers honouring ``lr=`` (``optimizers.py``).

The engine knows how to find a module's file from an import; this module knows
what to look for in it. A module's summary is five tables (``_TABLES``: strategies,
optimizers, version names, traced methods, compile owners), each made the first time it
is asked for, once per process: most modules are asked one thing, and each table follows
the module's names into other modules its own way. Cheap tests on a module's text and
``ast`` come first, so that a module that cannot answer is not parsed with LibCST.
"""

from __future__ import annotations

import ast
import os
import re
from contextlib import contextmanager
from functools import lru_cache, partial
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

from migrate_tpu.codemod.outline import GLOBAL_START, IMPORT_START, Import, Outline, outline_of
from migrate_tpu.codemod.receivers import imported_receivers
from migrate_tpu.codemod.spelling import holds_word, is_word_character, word_places


# (dotted module name, path of the importing file) -> path of the module's file.
ModuleResolver = Callable[[str, str], Optional[str]]


# How a module names the TensorFlow version (``version_guards._VERSION_NAMES``: ``tf.__version__``,
# ``tf.version.VERSION``, ``tf.VERSION`` in any spelling or import).
_VERSION_WORD = re.compile(r"VERSION(?<=\bVERSION)\b")
# path of a file -> the Python files of its tree.
TreeFiles = Callable[[str], Tuple[str, ...]]


class ProjectLookup:
    def __init__(self, resolve_module: ModuleResolver, read_text: Callable[[str], str], tree_files: Optional[TreeFiles] = None) -> None:
        self._resolve = resolve_module
        self._read = read_text
        self._tree_files = tree_files
        # What each module offers its importers, table by table (``_TABLES``): a table is made
        # the first time a lookup asks for it, from the module's analysis (``_analysis``).
        self._tables: Dict[str, Dict[str, Optional[object]]] = {name: {} for name in _TABLES}
        self._analyses: Dict[str, object] = {}  # walked modules some of whose tables are not made yet
        self.walked: Set[str] = set()  # the modules parsed with LibCST for a table (what a test may ask)
        self._trees: Dict[str, Tuple[str, ...]] = {}
        # Whether names may read the version (``_reaches``): the answers kept, the questions
        # being answered (key -> depth), the "no"s that relied on an open one (key -> the
        # lowest such depth), and per question under way the lowest depth it relied on.
        self._reached: Dict[object, bool] = {}
        self._reaching: Dict[object, int] = {}
        self._reach_provisional: Dict[object, int] = {}
        self._reach_low: List[int] = []
        self._outlines: Dict[str, Optional[Outline]] = {}
        self._imports: Dict[str, Tuple[bool, Tuple[str, ...]]] = {}
        self._following: Set[str] = set()  # re-exported optimizer names being followed
        self._stand_ins: Dict[Tuple[Tuple[str, ...], str, str], List[Tuple[str, str]]] = {}
        self._bindings_of: Dict[str, Optional[Dict[str, List[Tuple[str, object]]]]] = {}
        # Which files each answer read (its own and those of the answers it used), so that
        # a file's result can name every other file it depends on: the engine's cache checks
        # them before reusing the result. The innermost record is the answer being computed;
        # the outermost, the migration of one file (``take_consulted``).
        self._recording: List[Set[str]] = [set()]
        self._depends: Dict[object, FrozenSet[str]] = {}

    def made(self, table: Optional[str] = None) -> Set[str]:
        """The modules whose ``table`` (any table, when None) is made and offers something."""
        names = (table,) if table is not None else tuple(_TABLES)
        return {path for name in names for path, made in self._tables[name].items() if made is not None}

    def take_consulted(self) -> Tuple[str, ...]:
        """The files read to answer the lookups since the last call (for the file just
        migrated), cached answers included; and a fresh record for the next file."""
        consulted = tuple(sorted(self._recording[0]))
        self._recording = [set()]
        return consulted

    def _read_text(self, path: str) -> str:
        for record in self._recording:
            record.add(path)
        return self._read(path)

    def _used(self, key: object) -> None:
        """A cached answer is used: what it read counts as read now."""
        files = self._depends.get(key, frozenset())
        for record in self._recording:
            record.update(files)

    @contextmanager
    def _computing(self, key: object) -> Iterator[None]:
        record: Set[str] = set()
        self._recording.append(record)
        try:
            yield
        finally:
            self._recording.pop()
            self._depends[key] = frozenset(record)
            for outer in self._recording:
                outer.update(record)

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
                if method not in text or not _may_bind(method).search(text):  # the cheap tests first
                    continue
                try:
                    tree = ast.parse(text)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    continue
                for node in ast.walk(tree):
                    if isinstance(node, ast.ClassDef):
                        names = _class_attributes(node)
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
        found = self._summary_of(dotted, importing_path, "traced_methods", lambda path, symbol: self._may_define_class(path, symbol) and self._may_trace_methods(path, symbol))
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

    def _module_file(self, dotted: str, importing_path: str) -> Optional[str]:
        """The tree file of the module defining ``dotted`` (``pkg.mod.Symbol``), if any."""
        if dotted.startswith("tensorflow") or "." not in dotted.strip("."):
            return None
        module_name = dotted.rpartition(".")[0] or "."
        return self._resolve(module_name, importing_path)

    def _may_offer_version(self, path: str, name: str) -> bool:
        """Whether the module's top-level ``name`` may read the TensorFlow version, as its
        outline tells (``outline.py``), without parsing anything with LibCST: a statement
        binding it spells a word that may (``_words_may_read``), or an import binding it
        imports a name that may. False means the module's version table has no ``name``.

        Asked name by name, where the module's whole table was asked for before: on
        transformers 3.0.2, ``file_utils.cached_path`` reads the version (a user-agent
        string), and every module importing it had its table made, with a LibCST parse,
        to learn that none of the names asked about reads it."""
        return self._reaches(("offers", path, name), lambda: self._offers(path, name))

    def _offers(self, path: str, name: str) -> bool:
        direct, imported = self._version_facts(path)
        if not direct and not imported:
            return False  # it reads no version and imports nothing of the tree that may
        outline = self._outline(path)
        if outline is None:
            return False  # as its table: a module not parsed offers nothing
        if outline.star_import:
            return True
        if any(self._import_may_offer(path, target) for target in outline.imports.get(name, ())):
            return True
        return any(
            self._words_may_read(path, outline, outline.words(index), direct)
            for index in outline.bound.get(name, ())
            if not outline.statements[index].is_class  # a class is no value the table holds
        )

    def _words_may_read(self, path: str, outline: Outline, words: FrozenSet[str], direct: bool) -> bool:
        """Whether one of a statement's ``words`` may read the version: ``__version__`` or
        ``VERSION`` where the module reads TensorFlow's (``direct``), a name of the module that
        may (``_may_offer_version``), or a class of it whose body may (``Klass.X``)."""
        for word in sorted(words):  # in one order, run after run: the same questions asked, at the same cost
            if word == "__version__" or word == "VERSION":
                if direct:
                    return True
                continue
            if (word in outline.imports or word in outline.bound) and self._may_offer_version(path, word):
                return True
            classes = [index for index in outline.bound.get(word, ()) if outline.statements[index].is_class]
            if classes and self._reaches(("class", path, word), partial(self._statements_may_read, path, outline, classes, direct)):
                return True
        return False

    def _statements_may_read(self, path: str, outline: Outline, statements: List[int], direct: bool) -> bool:
        return any(self._words_may_read(path, outline, outline.words(index), direct) for index in statements)

    def _import_may_offer(self, path: str, target: Import) -> bool:
        """Whether what ``target`` imports into the module may read the version: a module of
        the tree that may (``import pkg.compat as compat``), a name of one that may, or a name
        spelled ``__version__``/``VERSION``. TensorFlow's own names are read by the words that
        spell them (``tf.__version__``), and other packages offer none."""
        if target.name is None:
            resolved = self._resolve(target.module, path)
            if resolved is None:
                return False
            # A package is read as ``pkg.mod.X``, from any module of it: it may.
            return os.path.basename(resolved) == "__init__.py" or self._module_may_offer(resolved)
        if target.name in ("__version__", "VERSION"):
            return True
        joined = f"{target.module}.{target.name}" if target.module.strip(".") else f"{target.module}{target.name}"
        submodule = self._resolve(joined, path)
        if submodule is not None:
            return self._module_may_offer(submodule)
        base = self._resolve(target.module, path)
        return base is not None and self._may_offer_version(base, target.name)

    def _module_may_offer(self, path: str) -> bool:
        """Whether a module imported whole may offer a name that reads the version."""

        def offers() -> bool:
            outline = self._outline(path)
            if outline is None:
                return False
            names = set(outline.bound) | set(outline.imports)
            return outline.star_import or any(self._may_offer_version(path, name) for name in sorted(names))

        return self._reaches(("module", path), offers)

    def _reaches(self, key: Tuple[str, str, str] | Tuple[str, str], compute: Callable[[], bool]) -> bool:
        """``compute()`` for ``key``, kept for the run: whether a name may read the version.

        The questions follow names from module to module, and an import cycle (or a name read
        in its own definition) asks a question while it is being answered: that one counts as
        "no" for now, as a cycle reads nothing by itself. A "no" that relied on a question
        still open is not kept until that question is answered (a "no" then settles it; a
        "yes" leaves it to be asked again): the answers do not depend on the order of the
        questions. ``_reach_low`` holds, per question under way, the lowest depth of an open
        question it relied on."""
        known = self._reached.get(key)
        if known is not None:
            self._used(("reaches", key))
            return known
        pending = self._reaching.get(key, self._reach_provisional.get(key))
        if pending is not None:
            if key not in self._reaching:
                self._used(("reaches", key))  # what that "no" read counts for this file too
            if self._reach_low:
                self._reach_low[-1] = min(self._reach_low[-1], pending)
            return False
        depth = len(self._reach_low)
        self._reaching[key] = depth
        self._reach_low.append(depth)
        try:
            with self._computing(("reaches", key)):
                result = compute()
        finally:
            low = self._reach_low.pop()
            del self._reaching[key]
        if self._reach_low:
            self._reach_low[-1] = min(self._reach_low[-1], low)
        if result or low >= depth:
            self._reached[key] = result
        # The "no"s that relied on this question: settled with it ("no"), asked again
        # ("yes"), or, where it is itself open, relying on what it relies on.
        for other in [k for k, relied in self._reach_provisional.items() if relied >= depth]:
            if result:
                del self._reach_provisional[other]
            elif low >= depth:
                del self._reach_provisional[other]
                self._reached[other] = False
                # It rested on this question: what this one read counts for it too (the
                # engine's cache checks those files before reusing a result that used it).
                self._depends[("reaches", other)] = self._depends.get(("reaches", other), frozenset()) | self._depends[("reaches", key)]
            else:
                self._reach_provisional[other] = low
        if not result and low < depth:
            self._reach_provisional[key] = low
        return result

    def _outline(self, path: str) -> Optional[Outline]:
        """The module's outline (``outline.py``), read once for the run; None when it cannot
        be read or parsed."""
        if path in self._outlines:
            for record in self._recording:
                record.add(path)
            return self._outlines[path]
        try:
            found = outline_of(self._read_text(path))
        except Exception:  # as ``_walked``: a module we cannot read offers nothing
            found = None
        self._outlines[path] = found
        return found

    def _version_table(self, path: str) -> Optional[dict]:
        """The module's names that read the version (``version_guards.module_version_summary``)."""
        return self._table(path, "versions")  # type: ignore[return-value]

    def _walked(self, path: str):
        """The module's analysis, walked, for its summary's tables; None when it cannot be read
        or parsed (it offers nothing)."""
        from migrate_tpu.codemod.analysis import Analysis
        from migrate_tpu.codemod.parsing import parse_module

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

    def _version_facts(self, path: str) -> Tuple[bool, Tuple[str, ...]]:
        """(names the version or imports a tree package whole, the tree modules it imports from)."""
        known = self._imports.get(path)
        if known is not None:
            self._used(("imports", path))
            return known
        with self._computing(("imports", path)):
            facts = self._read_version_facts(path)
        self._imports[path] = facts
        return facts

    def _read_version_facts(self, path: str) -> Tuple[bool, Tuple[str, ...]]:
        facts: Tuple[bool, Tuple[str, ...]] = (False, ())
        try:
            text = self._read_text(path)
        except Exception:  # not read: its summary is not made either
            text = ""
        if not text:
            return facts
        statements = _import_statements(text)
        if _may_read_tensorflow_version(text, statements):
            return (True, ())
        return self._imported_tree_modules(statements, path)

    def _imported_tree_modules(self, statements: List[ast.stmt], path: str) -> Tuple[bool, Tuple[str, ...]]:
        found: List[str] = []
        for node in statements:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.partition(".")[0]
                    if self._resolve(top, path) is not None or self._resolve(alias.name, path) is not None:
                        return True, ()
            elif isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")
                candidates = [base] + [f"{base}.{a.name}" if node.module else f"{base}{a.name}" for a in node.names if a.name != "*"]
                for module in candidates:
                    resolved = self._resolve(module, path) if module.strip(".") or module else None
                    if resolved is not None:
                        found.append(resolved)
        return False, tuple(found)

    def _may_be_optimizer_class(self, path: str, symbol: str, seen: Optional[Set[Tuple[str, str]]] = None) -> bool:
        """Whether the module's ``symbol`` may be an optimizer class, read from its ``ast``
        (``optimizers.class_verdict`` is the answer): a class of the module is one only
        through a base that is (a class ``KNOWN`` there, ``extend_with_decoupled_weight_decay``,
        a class of the tree that is one). False only for a class each of whose bases surely
        is none: a name bound nowhere (``object``), a TensorFlow name not ``KNOWN``, a name
        outside the tree, or a class of the tree that is none by the same test. Anything else
        (an import re-exported, an alias, a relative import, a base made by a call) is left
        to the summary. On tf-models-official 2.6.0, a config class given ``lr=`` was followed
        through six summaries of its base classes (``ParamsDict``, ``Config``, Orbit's trainers)."""
        from migrate_tpu.codemod.optimizers import KNOWN

        lone = self._lone_class(path, symbol, set() if seen is None else seen)
        if isinstance(lone, bool):
            return lone
        class_def, bindings, seen = lone
        # A base made by a call may be ``extend_with_decoupled_weight_decay(Adam)``.
        return self._bases_may(path, class_def, bindings, KNOWN.__contains__, self._may_be_optimizer_class, seen, made_by_call=True)

    def _lone_class(self, path: str, symbol: str, seen: Set[Tuple[str, str]]):
        """(the module's class ``symbol``, the module's bindings, ``seen``) when its ``ast``
        tells the name is bound once, by a class; else the gates' answer: False in a cycle of
        bases (the analysis's own guards answer nothing there) or where the module does not
        bind the name, True where the module cannot be told or binds it otherwise (left to
        the summary)."""
        if (path, symbol) in seen:
            return False
        seen.add((path, symbol))
        bindings = self._module_bindings(path)
        if bindings is None:
            return True
        found = bindings.get(symbol, [])
        if len(found) != 1 or found[0][0] != "class":
            return bool(found)
        return found[0][1], bindings, seen

    def _may_trace_methods(self, path: str, symbol: str, seen: Optional[Set[Tuple[str, str]]] = None) -> bool:
        """Whether the module's class ``symbol`` may have methods run under ``tf.function``
        (``tracing.class_tracing`` is the answer), read from its ``ast``: through a base
        (a library class ``LIBRARY_TRACED_METHODS`` names, or a class of the tree or module
        that may), or a call in its body of what may be ``tf.function`` (every name in
        ``TRACING`` ends in ``function``: an attribute ``.function``, or a name that an import
        of a ``function``, an alias or the class itself may bind). False only when none of
        these can hold; what cannot be told is left to the summary. On tf-models-official
        2.6.0 the summaries of ``ParamsDict``, ``Config`` and ``OneOfConfig`` were made to
        learn that a task's config class runs nothing traced."""
        from migrate_tpu.codemod.tracing import LIBRARY_MAYBE_TRACED_METHODS, LIBRARY_TRACED_METHODS

        lone = self._lone_class(path, symbol, set() if seen is None else seen)
        if isinstance(lone, bool):
            return lone
        class_def, bindings, seen = lone
        # What the class binds anywhere in it to a dotted name (a method's local alias of
        # ``tf.function``): as ``names.qualified_name`` follows them, only an assignment of
        # a name or an attribute (or a tuple, unpacked) makes an alias; an import in it may.
        aliases: Dict[str, List[ast.expr]] = {}
        imported_here: Set[str] = set()
        calls: List[ast.Call] = []
        for node in ast.walk(class_def):
            value = getattr(node, "value", None) if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) else None
            if isinstance(node, ast.withitem):
                value = node.context_expr
            if isinstance(value, (ast.Name, ast.Attribute, ast.Tuple, ast.List)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.optional_vars if isinstance(node, ast.withitem) else node.target]  # type: ignore[attr-defined]
                for target in targets:
                    for sub in ast.walk(target) if target is not None else ():
                        if isinstance(sub, ast.Name):
                            aliases.setdefault(sub.id, []).append(value)
            elif isinstance(node, ast.alias):
                imported_here.add(node.asname or node.name.partition(".")[0])
            elif isinstance(node, ast.Call):
                calls.append(node)

        def may_trace(expr: ast.expr, followed: Set[str]) -> bool:
            """Whether ``expr`` may stand for one of ``TRACING``: every one ends in ``function``."""
            if isinstance(expr, ast.Attribute):
                return expr.attr == "function"
            if isinstance(expr, (ast.Tuple, ast.List)):
                return any(may_trace(element, followed) for element in expr.elts)
            if not isinstance(expr, ast.Name) or expr.id in followed:
                return False
            if expr.id in imported_here:
                return True
            followed = followed | {expr.id}
            if any(may_trace(value, followed) for value in aliases.get(expr.id, ())):
                return True
            return any(
                kind == "other" or (kind == "import" and (value is None or str(value).rpartition(".")[2] == "function"))
                for kind, value in bindings.get(expr.id, ())
            )

        if any(may_trace(call.func, set()) for call in calls):
            return True
        traced = {*LIBRARY_TRACED_METHODS, *LIBRARY_MAYBE_TRACED_METHODS}
        return self._bases_may(path, class_def, bindings, traced.__contains__, self._may_trace_methods, seen, made_by_call=False)

    def _bases_may(
        self,
        path: str,
        class_def: ast.ClassDef,
        bindings: Dict[str, List[Tuple[str, object]]],
        known: Callable[[str], bool],
        ask: Callable[[str, str, Set[Tuple[str, str]]], bool],
        seen: Set[Tuple[str, str]],
        made_by_call: bool,
    ) -> bool:
        """Whether a base of the module's ``class_def`` may be what the caller looks for: a
        library class ``known`` names, or a class of the module or of the tree that ``ask``
        says may be. A base bound nowhere (``object``) or outside the tree is not; one bound
        otherwise (an alias, a relative import) may be; one made by a call (or subscripted)
        may be when ``made_by_call``. ``*bases`` are passed by, as the analysis does."""
        from migrate_tpu.codemod.names import canonical

        for base in class_def.bases:
            if type(base) is ast.Starred:
                continue
            parts: List[str] = []
            head = base
            while type(head) is ast.Attribute:
                parts.append(head.attr)
                head = head.value
            if type(head) is not ast.Name:
                if made_by_call:
                    return True
                continue
            rest = "".join("." + part for part in reversed(parts))
            for kind, value in bindings.get(head.id, ()):
                if kind == "class" and not parts:
                    if ask(path, head.id, seen):
                        return True
                elif kind == "import" and value is not None:
                    name = canonical(str(value) + rest)
                    if known(name):
                        return True
                    module = None if name.startswith("tensorflow") else self._module_file(name, path)
                    if module is not None and ask(module, name.rpartition(".")[2], seen):
                        return True
                else:
                    return True
        return False

    def _module_bindings(self, path: str) -> Optional[Dict[str, List[Tuple[str, object]]]]:
        """How the module binds names in its own scope, from its ``ast``: ("class", the
        ClassDef) for a top-level class, ("import", the dotted target; None for a relative
        one) for a top-level import, ("other", None) for anything else, a superset: every name
        bound anywhere in a top-level statement other than a class, import or def (a loop,
        an ``if``: a function nested there counts its own names too), and the ``global``s of
        a def. None when the module cannot be read or parsed, or binds names it does not
        spell (a star import, an import inside a block)."""
        if path in self._bindings_of:
            return self._bindings_of[path]
        found: Optional[Dict[str, List[Tuple[str, object]]]] = {}
        try:
            tree = ast.parse(self._read_text(path))
        except Exception:  # as ``_walked``: a module we cannot read or parse offers nothing we can tell
            found = None
        for statement in tree.body if found is not None else ():
            if isinstance(statement, ast.ClassDef):
                found.setdefault(statement.name, []).append(("class", statement))  # type: ignore[union-attr]
            elif isinstance(statement, ast.Import):
                for alias in statement.names:
                    bound = alias.asname or alias.name.partition(".")[0]
                    found.setdefault(bound, []).append(("import", alias.name if alias.asname else bound))  # type: ignore[union-attr]
            elif isinstance(statement, ast.ImportFrom):
                if any(alias.name == "*" for alias in statement.names):
                    found = None
                    break
                for alias in statement.names:
                    target = f"{statement.module}.{alias.name}" if statement.module and not statement.level else None
                    found.setdefault(alias.asname or alias.name, []).append(("import", target))  # type: ignore[union-attr]
            else:
                defined = isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
                names: Set[str] = {statement.name} if defined else set()  # type: ignore[attr-defined]
                for node in ast.walk(statement):
                    if isinstance(node, (ast.Global, ast.Nonlocal)):
                        names.update(node.names)
                    elif defined:
                        continue  # a def's other names are its own
                    elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                        names.add(node.id)
                    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        names.add(node.name)
                    elif isinstance(node, (ast.alias, ast.arg, ast.ExceptHandler)) or type(node).__name__.startswith("Match"):
                        found = None  # bound in a block in ways not spelled out here: anything
                        break
                if found is None:
                    break
                for name in names:
                    found.setdefault(name, []).append(("other", None))
        self._bindings_of[path] = found
        return found

    def _bound_only_as(self, path: str, symbol: str, kinds: Tuple[str, ...]) -> bool:
        """Whether the module's own scope binds ``symbol``, and binds it only as ``kinds``
        ("class", "import"), as its ``ast`` tells (``_module_bindings``, a superset of the
        bindings the analysis finds there). A module whose text holds ``global`` or ``:=``
        is not told: a ``global`` in a method, or a walrus, binds a module's name from
        inside a class, where ``_module_bindings`` does not look."""
        bindings = self._module_bindings(path)
        if bindings is None:
            return False
        found = bindings.get(symbol)
        if not found or any(kind not in kinds for kind, _ in found):
            return False
        text = self._read_text(path)
        return ":=" not in text and ("global" not in text or GLOBAL_START.search(text) is None)

    def _may_define_class(self, path: str, symbol: str) -> bool:
        """Whether the module's text may hold ``class symbol``: the class and compile tables
        have an entry only for a class (``create_model``, a function, is not looked for in
        a summary: on tf-models-official 2.4.0, ``transformer.py``'s cost 0.03 s)."""
        try:
            text = self._read_text(path)
        except Exception:  # as ``_walked``: a module we cannot read offers nothing
            return False
        return "class" in text and _holds_class_statement(text, symbol)

    def _names(self, path: str, symbol: str) -> bool:
        """Whether the module's text holds ``symbol`` as a word (a module not read holds nothing)."""
        try:
            text = self._read_text(path)
        except Exception:  # as ``_walked``: a module we cannot read offers nothing
            return False
        return holds_word(text, symbol)

    def _table(self, path: str, name: str) -> Optional[object]:
        """The module's table ``name`` (``_TABLES``), made once for the run."""
        return self._made(self._tables[name], name, path, lambda path: self._make_table(path, name))

    def _made(self, made: Dict[str, Optional[object]], kind: str, path: str, make: Callable[[str], Optional[object]]) -> Optional[object]:
        """``made[path]`` (a table of the module), made once by ``make`` for the run."""
        if path in made:
            self._used((kind, path))
            return made[path]
        made[path] = None  # guards import cycles
        with self._computing((kind, path)):
            result = make(path)
        made[path] = result
        return result

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
    from migrate_tpu.codemod.strategies import module_strategy_summary

    return module_strategy_summary(analysis)


def _optimizer_table(analysis) -> tuple:
    """(optimizer classes by name, names imported from the tree that may be one)."""
    from migrate_tpu.codemod.optimizers import module_optimizer_summary

    return module_optimizer_summary(analysis)


def _version_table(analysis) -> dict:
    """{name reading the TensorFlow version: {release: value} or "unknown"}."""
    from migrate_tpu.codemod.version_guards import module_version_summary

    return module_version_summary(analysis)


def _tracing_table(analysis) -> dict:
    """{class: its methods run, or maybe run, under tf.function}."""
    from migrate_tpu.codemod.tracing import module_class_tracing

    return module_class_tracing(analysis)


def _compile_table(analysis) -> dict:
    """{class: whose ``compile`` it has}."""
    from migrate_tpu.codemod.rules.compile_arguments import module_compile_owners

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


def _may_read_tensorflow_version(text: str, statements: List[ast.stmt]) -> bool:
    """Whether the module's text may read TensorFlow's version itself (what
    ``version_guards._VERSION_NAMES`` names): ``__version__`` or ``VERSION`` as an attribute of
    anything but a name that only imports of other packages bind (``torch.__version__``,
    ``transformers.__version__``: ``receivers.imported_receivers``), or imported from
    TensorFlow. A module's own ``__version__ = "3.0.2"`` reads nothing, and one imported from
    another module of the tree is that module's to offer (``_may_offer_version``). Before,
    any ``__version__`` counted: on transformers 3.0.2, which names its own and PyTorch's
    everywhere, the version tables of a dozen modules (a LibCST parse each) were made for
    one file, 2.7 s."""
    for word in ("__version__", "VERSION"):
        # (``in`` first: a pattern that begins with ``\b`` is tried at every position.)
        if word not in text or (word == "VERSION" and _VERSION_WORD.search(text) is None):
            continue
        if ("." + word) not in text and _ATTRIBUTE_OF[word].search(text) is None:
            continue  # no attribute access of it: only the module's own name, or an import
        receivers = imported_receivers(text, word)
        if receivers is None or any(target.startswith("tensorflow") for targets in receivers.values() for target in targets):
            return True
    for node in statements:
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("tensorflow"):
            if any(alias.name in ("__version__", "VERSION", "version", "*") for alias in node.names):
                return True
    return False


# An attribute access of each name, however spaced (``tf . __version__``).
_ATTRIBUTE_OF = {word: re.compile(rf"\.(?:\s|\\\n)*{word}\b") for word in ("__version__", "VERSION")}


def _import_statements(text: str) -> List[ast.stmt]:
    """The import statements of a module, without parsing all of it: each place an import
    may begin (``outline.IMPORT_START``) is read to the end of its logical line (brackets and
    backslashes continue it) and that alone is parsed. Text in a string or comment that reads
    as an import is taken too (one more module to look at, never one less); what does not
    parse is skipped. On tf-models-official 2.2.2, 57 modules: 0.26 s with a full ``ast``
    parse and walk each, 0.02 s so."""
    found: List[ast.stmt] = []
    for match in IMPORT_START.finditer(text):
        start = match.end()
        end = _logical_line_end(text, start)
        try:
            module = ast.parse(text[start:end])
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        found.extend(node for node in module.body if isinstance(node, (ast.Import, ast.ImportFrom)))
    return found


def _logical_line_end(text: str, start: int) -> int:
    """Where the logical line from ``start`` ends: at a newline outside brackets and not
    after a backslash, or at ``;`` outside brackets (an import holds no strings)."""
    depth = 0
    index = start
    length = len(text)
    while index < length:
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "\\" and text.startswith("\n", index + 1):
            index += 2
            continue
        elif char == "#" and depth <= 0:
            newline = text.find("\n", index)
            return length if newline < 0 else newline
        elif (char == "\n" and depth <= 0) or (char == ";" and depth <= 0):
            return index
        index += 1
    return length


def _holds_class_statement(text: str, name: str) -> bool:
    """Whether ``text`` holds ``class name``: only blanks and line continuations between them
    (found from each place of the word, as ``word_places`` finds it, no pattern compiled)."""
    for start in word_places(text, name):
        keyword = start
        while keyword and text[keyword - 1] in _BETWEEN_CLASS_AND_NAME:
            keyword -= 1
        if keyword < start and text.endswith("class", 0, keyword) and (keyword == 5 or not is_word_character(text[keyword - 6])):
            return True
    return False


_BETWEEN_CLASS_AND_NAME = frozenset(" \t\n\r\f\v\\")


@lru_cache(maxsize=None)
def _may_bind(name: str) -> "re.Pattern[str]":
    """Text that may bind ``name`` in a class body the ways ``_class_attributes`` counts:
    ``def name``, ``class name``, ``name =`` or ``name:`` (a line continuation between them
    included). It may match more (a keyword argument, ``self.name = ``): it only gates a parse."""
    word = re.escape(name)
    return re.compile(rf"(?:def(?<=\bdef)|class(?<=\bclass))(?:\s|\\)+{word}\b|{word}(?<=\b{word})(?:\s|\\)*(?::|=(?!=))")


def _class_attributes(node: ast.ClassDef) -> set:
    """Names a class body binds: its methods and assigned attributes."""
    names = set()
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, ast.Assign):
            names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            names.add(statement.target.id)
    return names
