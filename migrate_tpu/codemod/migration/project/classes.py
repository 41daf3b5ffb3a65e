"""Whether a class of the tree may be what a question looks for, read from its module's
``ast`` without LibCST: an optimizer class (``_may_be_optimizer_class``), one whose methods
may run traced (``_may_trace_methods``), a class at all (``_may_define_class``); and how a
module binds its names (``_module_bindings``). False only where the answer is surely no;
what cannot be told is left to the module's summary.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from typing import Callable, Dict, List, NamedTuple, Optional, Set, Tuple, Union, cast

from migrate_tpu.codemod.foundation.outline import GLOBAL_START
from migrate_tpu.codemod.foundation.spelling import is_word_character, word_places
from migrate_tpu.codemod.migration.project.reading import ModuleResolver, TreeFiles, TreeReader


class _Class(NamedTuple):
    """A class of the tree as the gates read it (``ClassGates._lone_class``)."""

    path: str  # its module
    class_def: ast.ClassDef
    bindings: Dict[str, List[Tuple[str, object]]]  # how its module binds names (``_module_bindings``)
    seen: Set[Tuple[str, str]]  # the (module, class) pairs asked about on the way: a cycle of bases ends


class ClassGates(TreeReader):
    """The ``ast`` gates of the class questions (``ProjectLookup.optimizer_class``,
    ``class_tracing``, ``compile_owners``) and of the strategy table (``_bound_only_as``)."""

    def __init__(self, resolve_module: ModuleResolver, read_text: Callable[[str], str], tree_files: Optional[TreeFiles] = None) -> None:
        super().__init__(resolve_module, read_text, tree_files)
        self._bindings_of: Dict[str, Optional[Dict[str, List[Tuple[str, object]]]]] = {}

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
        from migrate_tpu.codemod.analysis.optimizers import KNOWN

        lone = self._lone_class(path, symbol, set() if seen is None else seen)
        if isinstance(lone, bool):
            return lone
        # A base made by a call may be ``extend_with_decoupled_weight_decay(Adam)``.
        return self._bases_may(lone, KNOWN.__contains__, self._may_be_optimizer_class, made_by_call=True)

    def _lone_class(self, path: str, symbol: str, seen: Set[Tuple[str, str]]) -> Union[bool, _Class]:
        """The module's class ``symbol`` (with the module's bindings and ``seen``) when its ``ast``
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
        return _Class(path, cast(ast.ClassDef, found[0][1]), bindings, seen)  # a "class" binding holds its ClassDef

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
        from migrate_tpu.codemod.analysis.tracing import LIBRARY_MAYBE_TRACED_METHODS, LIBRARY_TRACED_METHODS

        lone = self._lone_class(path, symbol, set() if seen is None else seen)
        if isinstance(lone, bool):
            return lone
        class_def, bindings = lone.class_def, lone.bindings
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
                for target in _alias_targets(node):
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
        return self._bases_may(lone, traced.__contains__, self._may_trace_methods, made_by_call=False)

    def _bases_may(
        self, lone: _Class, known: Callable[[str], bool], ask: Callable[[str, str, Set[Tuple[str, str]]], bool], made_by_call: bool
    ) -> bool:
        """Whether a base of the class ``lone`` may be what the caller looks for: a
        library class ``known`` names, or a class of the module or of the tree that ``ask``
        says may be. A base bound nowhere (``object``) or outside the tree is not; one bound
        otherwise (an alias, a relative import) may be; one made by a call (or subscripted)
        may be when ``made_by_call``. ``*bases`` are passed by, as the analysis does."""
        from migrate_tpu.codemod.analysis.names import canonical

        path, class_def, bindings, seen = lone
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
        found: Optional[Dict[str, List[Tuple[str, object]]]]
        try:
            tree = ast.parse(self._read_text(path))
        except Exception:  # as ``_walked``: a module we cannot read or parse offers nothing we can tell
            found = None
        else:
            found = _module_scope_bindings(tree)
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


def _module_scope_bindings(tree: ast.Module) -> Optional[Dict[str, List[Tuple[str, object]]]]:
    """``ClassGates._module_bindings`` of a parsed module."""
    found: Dict[str, List[Tuple[str, object]]] = {}
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef):
            found.setdefault(statement.name, []).append(("class", statement))
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                bound = alias.asname or alias.name.partition(".")[0]
                found.setdefault(bound, []).append(("import", alias.name if alias.asname else bound))
        elif isinstance(statement, ast.ImportFrom):
            if any(alias.name == "*" for alias in statement.names):
                return None
            for alias in statement.names:
                target = f"{statement.module}.{alias.name}" if statement.module and not statement.level else None
                found.setdefault(alias.asname or alias.name, []).append(("import", target))
        else:
            defined = isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
            names: Set[str] = {statement.name} if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()
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
                    return None  # bound in a block in ways not spelled out here: anything
            for name in names:
                found.setdefault(name, []).append(("other", None))
    return found


def _alias_targets(node: ast.AST) -> List[Optional[ast.expr]]:
    """What an assignment, an annotated assignment, a walrus or a ``with`` item (its ``as``
    part, perhaps None) binds; nothing for any other node."""
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, ast.withitem):
        return [node.optional_vars]
    if isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
        return [node.target]
    return []


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
def may_bind(name: str) -> "re.Pattern[str]":
    """Text that may bind ``name`` in a class body the ways ``class_attributes`` counts:
    ``def name``, ``class name``, ``name =`` or ``name:`` (a line continuation between them
    included). It may match more (a keyword argument, ``self.name = ``): it only gates a parse."""
    word = re.escape(name)
    return re.compile(rf"(?:def(?<=\bdef)|class(?<=\bclass))(?:\s|\\)+{word}\b|{word}(?<=\b{word})(?:\s|\\)*(?::|=(?!=))")


def class_attributes(node: ast.ClassDef) -> set:
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
