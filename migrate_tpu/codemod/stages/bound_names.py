"""How a module's names are bound, anywhere in it, read from its ``ast`` tree (``BoundNames``):
what a name or a dotted expression may stand for, as the syntax stage asks before any LibCST
parse. ``SourceIndex`` (``source_index.py``) is built on it and fills it in its one walk.

Apart from ``source_index`` because it answers questions about names only: it walks nothing
itself (but the module's top-level imports, once asked), and knows nothing of calls or of
what runs traced.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union, cast

from migrate_tpu.codemod.foundation.receivers import name_and_attributes

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.analysis.walk import ProjectFacts


class BoundNames:
    """How a module's names are bound, anywhere in it, and what a name or a dotted expression
    may stand for (``may_name``, ``surely_names``, ``imported_only``): a superset of what the
    LibCST analysis finds where each name is used. ``SourceIndex`` fills it in its walk."""

    def __init__(self, tree: ast.AST, lookup: Optional[ProjectFacts] = None, path: str = "") -> None:
        self.lookup = lookup
        self.path = path
        # Names bound by an import, with what they import; names bound any other way.
        self._imported: Dict[str, List[Optional[str]]] = {}
        self._relative: Dict[str, List[str]] = {}  # names bound by relative imports -> ``.module.name``
        self._bound: Set[str] = set()
        # Every binding of a name anywhere in the file, whatever its scope (a superset of
        # what the name may hold where it is used): (kind, node) with kind "assign" (node:
        # the value; also ``with value as name``), "param" (node: the annotation or None),
        # "import" (node None) or "other" (a loop target, a def, an unpacking, ...: anything).
        self._bindings: Dict[str, List[Tuple[str, Optional[ast.AST]]]] = {}
        self._star_import = False  # ``from m import *`` may bind any name
        # For ``may_name``: attributes by their last name, the import statements, and the ids
        # of the classes each ``isinstance``/``issubclass`` call checks against.
        self._attributes: Dict[str, List[ast.Attribute]] = {}
        self._imports: List[Union[ast.Import, ast.ImportFrom]] = []
        self._type_checked: Set[int] = set()
        self._stands_for_memo: Dict[str, Optional[Set[str]]] = {}
        self._tree = tree
        self._top_imports: Optional[Set[str]] = None
        self._resolving: Set[str] = set()

    def may_name(self, names: Iterable[str], prefixes: Iterable[str] = (), type_checked: bool = True) -> bool:
        """Whether an expression or import of the file may stand for one of ``names`` (canonical dotted names:
        ``tensorflow.distribute.experimental.TPUStrategy``) or for a name under one of ``prefixes``, as
        ``names.qualified_name`` and ``possible_names`` resolve it in LibCST. Looked at: each attribute
        chain that ends in one of their last names, its head followed through every import and every
        assignment of a dotted expression that binds it anywhere in the file (a superset of what it may hold
        where it is used), and each import statement (``from a.b import C as D``, ``import a.b as c``). A
        bare name stands for an old one only through such an import or assignment, both looked at.
        ``type_checked=False``: a chain that is the class (or one of the classes) an
        ``isinstance``/``issubclass`` call checks against does not count (a rule that leaves those to
        another)."""
        from migrate_tpu.codemod.analysis.names import canonical

        exact = set(names)
        under = tuple(prefixes)

        def matches(dotted: str) -> bool:
            return dotted in exact or any(dotted == p or dotted.startswith(p + ".") for p in under)

        for statement in self._imports:
            if type(statement) is ast.ImportFrom:
                if statement.level or not statement.module:
                    continue  # a module of this project, which names no TensorFlow symbol
                if matches(canonical(statement.module)):
                    return True
                if any(alias.name != "*" and matches(canonical(f"{statement.module}.{alias.name}")) for alias in statement.names):
                    return True
            elif any(matches(canonical(alias.name)) for alias in statement.names):
                return True
        lasts = {name.rpartition(".")[2] for name in (*exact, *under)}
        for last in lasts:
            for attribute in self._attributes.get(last, ()):
                if not type_checked and id(attribute) in self._type_checked:
                    continue
                found = self._stands_for(attribute)
                if found is None or any(matches(name) for name in found):
                    return True
        return False

    def may_name_here(self, expr: ast.expr, names: Iterable[str]) -> bool:
        """Whether ``expr`` itself may stand for one of ``names`` (as ``may_name`` counts)."""
        found = self._stands_for(expr)
        return found is None or not found.isdisjoint(names)

    def surely_names(self, expr: ast.expr, name: str) -> bool:
        """Whether ``expr`` stands for ``name`` wherever it is, as LibCST's ``qualified_name``
        finds it: its head is bound only by absolute imports the module runs at its top level
        (visible in every scope, shadowed nowhere), and each of them makes it ``name``."""
        head = expr
        while type(head) is ast.Attribute:
            head = head.value
        if type(head) is not ast.Name or self.imported_only(head.id) is None:
            return False
        if head.id not in self._module_imports():
            return False
        return self._stands_for(expr) == {name}

    def _module_imports(self) -> Set[str]:
        if self._top_imports is None:
            self._top_imports = _module_level_imports(self._tree)
        return self._top_imports

    def _stands_for(self, expr: ast.expr) -> Optional[Set[str]]:
        """Every canonical dotted name ``expr`` may stand for (``may_name``); None when a name
        is aliased in a cycle through itself (``a = b.c`` / ``b = a``), which counts as anything."""
        from migrate_tpu.codemod.analysis.names import canonical

        if type(expr) is ast.Attribute:
            heads = self._stands_for(expr.value)
            return None if heads is None else {canonical(f"{head}.{expr.attr}") for head in heads}
        if type(expr) is not ast.Name:
            return set()
        name = expr.id
        if name in self._stands_for_memo:
            return self._stands_for_memo[name]
        if name in self._resolving:
            return None
        self._resolving.add(name)
        names = {canonical(target) for target in self._imported.get(name, ()) if target is not None}
        found: Optional[Set[str]] = names
        for kind, value in self._bindings.get(name, ()):
            if kind == "assign" and isinstance(value, (ast.Name, ast.Attribute)):
                more = self._stands_for(value)
                if more is None:
                    found = None
                    break
                names |= more
        self._resolving.discard(name)
        self._stands_for_memo[name] = found
        return found

    def _bind(self, name: str, kind: str, node: Optional[ast.AST] = None) -> None:
        self._bindings.setdefault(name, []).append((kind, node))

    def import_targets(self, name: str) -> List[str]:
        """What the imports binding ``name`` anywhere in the file import, as the analysis names
        it (``Analysis._bind_import_from``): absolute, or relative with its leading dots."""
        return [t for t in self._imported.get(name, ()) if t is not None] + self._relative.get(name, [])

    def bindings(self, name: str) -> List[Tuple[str, object]]:
        """Every way ``name`` is bound anywhere in the file (see ``__init__``), imports
        included as ("import", the dotted target, or None for a relative import); a star
        import adds ("other", None)."""
        found: List[Tuple[str, object]] = list(self._bindings.get(name, ()))
        found.extend(("import", target) for target in self._imported.get(name, ()))
        if self._star_import:
            found.append(("other", None))
        return found

    def imported_only(self, name: str) -> Optional[Sequence[str]]:
        """What ``name`` imports, when every binding of it in the file is an absolute import."""
        targets = self._imported.get(name)
        if not targets or self._star_import or name in self._bound or any(t is None for t in targets):
            return None
        return cast("List[str]", targets)  # none of them is None, just checked

    def imports_other_code(self, name: str) -> bool:
        """``name`` is bound only by imports of modules outside this project's strategy facts
        (``from absl import app``): what it holds is none of this project's strategies."""
        targets = self.imported_only(name)
        if targets is None:
            return False
        if self.lookup is None:
            return True  # without the project's other modules, an import is never a strategy
        return all(self.lookup.factory_kinds(t, self.path, call=False) is None for t in targets)

    def _imported_as(self, expr: ast.expr) -> Optional[List[str]]:
        """Every dotted name ``expr`` may stand for, when it reaches one through imports only,
        and by imports the module runs itself (not one inside a function, which other
        functions do not see)."""
        from migrate_tpu.codemod.analysis.names import canonical

        chain = name_and_attributes(expr)
        if chain is None or chain[0] not in self._module_imports():
            return None
        head, rest = chain
        targets = self.imported_only(head)
        return None if targets is None else [canonical(target + rest) for target in targets]


def _module_level_imports(tree: ast.AST) -> Set[str]:
    """Names bound by the imports the module itself runs: at its top level, or in its
    top-level ``if``/``try``/``with`` blocks (not in a function or class)."""
    names: Set[str] = set()
    statements = list(getattr(tree, "body", ()))
    while statements:
        statement = statements.pop()
        if isinstance(statement, ast.Import):
            names.update(alias.asname or alias.name.partition(".")[0] for alias in statement.names)
        elif isinstance(statement, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in statement.names)
        elif isinstance(statement, (ast.If, ast.Try, ast.With, ast.For, ast.While)) or type(statement).__name__ == "TryStar":
            for field in ("body", "orelse", "finalbody"):
                statements.extend(getattr(statement, field, ()))
            for handler in getattr(statement, "handlers", ()):
                statements.extend(handler.body)
    return names
