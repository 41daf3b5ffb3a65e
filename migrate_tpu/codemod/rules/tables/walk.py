"""What a table rule keeps of the walk: the attributes, names, imports, string annotations
and ``getattr`` lookups that may reference one of its old symbols; and one hook per node
type for all the tables of a run (``TableWalk.batch_hooks``).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple, cast

import libcst as cst

from migrate_tpu.codemod.analysis.names import canonical
from migrate_tpu.codemod.analysis.walk import Analysis, Scope, Site, dotted_name
from migrate_tpu.codemod.foundation import references
from migrate_tpu.codemod.framework.rule import Rule
from migrate_tpu.codemod.rules.tables.entries import Entry


class TableWalk(Rule):
    """The walk of a table rule (its hooks; ``SymbolTableRule`` and ``MethodTableRule`` choose
    which node types), and which entry a dotted name is (``_entry_for``)."""

    kind: str = "symbol"
    entries: Sequence[Entry] = ()

    def __init__(self) -> None:
        super().__init__()
        self._attributes: List[Tuple[cst.Attribute, Scope, Optional[cst.Call], str]] = []
        self._names: List[Tuple[cst.Name, Scope, Optional[cst.Call], str]] = []
        self._imports: List[Tuple[cst.ImportFrom, Scope]] = []
        self._getattrs: List[Tuple[cst.Call, str, Scope]] = []
        self._strings: List[Tuple[cst.SimpleString, Scope]] = []
        self._last = {e.last for e in self.entries}
        self._imported_names: set = set()
        # Shared by the tables walked together (``batch_hooks``): every name any of them imports.
        self._names_watched: Optional[set] = None

    def visit_Attribute(self, node: cst.Attribute, analysis: Analysis) -> None:
        if node.attr.value in self._last:
            parent = analysis.parent
            call = parent if isinstance(parent, cst.Call) and parent.func is node else None
            analysis.remember(call or node)
            if call is not None:
                analysis.remember(node)
            if self.kind == "method":
                analysis.sites[id(node.attr)] = cast(Site, analysis.site(node))  # remembered just above
            self._attributes.append((node, analysis.scope, call, references.position_of(analysis.ancestors())))

    def _visit_name(self, node: cst.Name, analysis: Analysis) -> None:
        if node.value in self._imported_names:
            parent = analysis.parent
            if isinstance(parent, (cst.ImportAlias, cst.AsName, cst.Attribute)) and not (
                isinstance(parent, cst.Attribute) and parent.value is node
            ):
                return
            call = parent if isinstance(parent, cst.Call) and parent.func is node else None
            analysis.remember(call or node)
            if call is not None:
                analysis.remember(node)
            self._names.append((node, analysis.scope, call, references.position_of(analysis.ancestors())))

    def _visit_string(self, node: cst.SimpleString, analysis: Analysis) -> None:
        # The raw text first: most strings name nothing of the catalogue.
        if not any(last in node.value for last in self._last):
            return
        if not references.in_annotation(analysis.ancestors()):
            return
        value = node.evaluated_value
        if isinstance(value, str) and any(last in value for last in self._last):
            analysis.remember(node)
            self._strings.append((node, analysis.scope))

    def _visit_import_from(self, node: cst.ImportFrom, analysis: Analysis) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module) if node.module is not None else None
        if module is None or node.relative:
            return
        if self.kind == "flag" and any(self._matches(e, module) for e in self.entries):
            analysis.remember(node)
            self._imports.append((node, analysis.scope))
            return
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            full = f"{module}.{name}"
            if any(self._matches(e, full) for e in self.entries):
                # An import's ``as`` target is a Name (``AsName`` also serves ``with`` and ``except``).
                bound = cast(cst.Name, alias.asname.name).value if alias.asname is not None else name
                self._imported_names.add(bound)
                if self._names_watched is not None:
                    self._names_watched.add(bound)
                analysis.remember(node)
                self._imports.append((node, analysis.scope))

    def _visit_name_lookup(self, node: cst.Call, analysis: Analysis) -> None:
        """``getattr(s, \"experimental_run_v2\")`` and the like."""
        if not isinstance(node.func, cst.Name):
            return
        if node.func.value in ("getattr", "hasattr", "setattr") and len(node.args) >= 2:
            value = node.args[1].value
            if isinstance(value, cst.SimpleString) and value.evaluated_value in self._last:
                analysis.remember(node)
                self._getattrs.append((node, value.evaluated_value, analysis.scope))

    @staticmethod
    def batch_hooks(rules: Sequence["TableWalk"]) -> Dict[str, object]:
        """One hook per node type for all the tables a run enables, in place of one per table.

        There are a dozen tables and each looks at every name, attribute, call and string;
        almost none of those concern any of them. Each shared hook first asks what every
        table's own hook asks first (an attribute's last name among the tables' names, a name
        one of them imports, ...), with one lookup for all, and only then calls the tables
        that may care, in the order given. A hook a subclass replaces is called as it is.
        """
        by_type: Dict[str, List[Tuple["TableWalk", str]]] = {}
        for rule in rules:
            for node_type, method in type(rule).hooks().items():
                by_type.setdefault(node_type, []).append((rule, method))
        hooks: Dict[str, object] = {}
        for node_type, members in by_type.items():
            plain = [getattr(rule, method) for rule, method in members]
            own = [getattr(type(rule), method) for rule, method in members]
            hooks[node_type] = _batched(node_type, [rule for rule, _ in members], plain, own) or _call_all(plain)
        return hooks

    @staticmethod
    def _matches(entry: Entry, name: Optional[str]) -> bool:
        if name is None:
            return False
        name = canonical(name)
        return name == entry.old or (entry.prefix and name.startswith(entry.old + "."))

    def _entry_for(self, name: Optional[str]) -> Optional[Entry]:
        for entry in self.entries:
            if self._matches(entry, name):
                return entry
        return None


def _call_all(hooks: Sequence) -> object:
    def hook(node: cst.CSTNode, analysis: Analysis) -> None:
        for each in hooks:
            each(node, analysis)

    return hook


_NAME_LOOKUPS = ("getattr", "hasattr", "setattr")


def _batched(node_type: str, rules: Sequence[TableWalk], hooks: Sequence, own: Sequence) -> Optional[object]:
    """The shared hook for ``node_type`` when every table's hook is TableRule's own (whose
    first test is known here); None otherwise."""
    if node_type == "Attribute" and all(f is TableWalk.visit_Attribute for f in own):
        by_last: Dict[str, List] = {}
        for rule, hook in zip(rules, hooks):
            for last in rule._last:
                by_last.setdefault(last, []).append(hook)

        def attribute(node: cst.Attribute, analysis: Analysis) -> None:
            for hook in by_last.get(node.attr.value, ()):
                hook(node, analysis)

        return attribute
    if node_type == "Name" and all(f is TableWalk._visit_name for f in own):
        watched: set = set()
        for rule in rules:
            watched.update(rule._imported_names)
            rule._names_watched = watched

        def name(node: cst.Name, analysis: Analysis) -> None:
            if node.value in watched:
                for hook in hooks:
                    hook(node, analysis)

        return name
    if node_type == "Call" and all(f is TableWalk._visit_name_lookup for f in own):

        def call(node: cst.Call, analysis: Analysis) -> None:
            func = node.func
            if isinstance(func, cst.Name) and func.value in _NAME_LOOKUPS:
                for hook in hooks:
                    hook(node, analysis)

        return call
    if node_type == "SimpleString" and all(f is TableWalk._visit_string for f in own):
        lasts = tuple(sorted({last for rule in rules for last in rule._last}))

        def string(node: cst.SimpleString, analysis: Analysis) -> None:
            value = node.value
            if any(last in value for last in lasts):
                for hook in hooks:
                    hook(node, analysis)

        return string
    return None
