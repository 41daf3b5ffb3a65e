"""The table rules' decisions, kind by kind (``TableRule.finish``): a renamed method on any
receiver (unless the tree has a stand-in class with the old name only), a moved symbol in
every position, a flag reported everywhere; and the two classes a table becomes
(``MethodTableRule``, ``SymbolTableRule``), with what they tell before LibCST.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Sequence, Tuple, cast

import libcst as cst

from migrate_tpu.codemod.analysis.names import lookup, possible_names, qualified_name
from migrate_tpu.codemod.analysis.strategies import surely_strategy
from migrate_tpu.codemod.analysis.walk import Analysis, ProjectFacts, Scope, dotted_name
from migrate_tpu.codemod.foundation import references
from migrate_tpu.codemod.foundation.spelling import may_name
from migrate_tpu.codemod.framework.rule import Change, Finding, Safety
from migrate_tpu.codemod.rules.tables.entries import DELEGATED, MANUAL, RENAME, SAME, UNSAFE_RENAME, Entry, head, short
from migrate_tpu.codemod.rules.tables.rewrites import Reference, TableRewrites

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.stages.source_index import SourceIndex


class TableRule(TableRewrites):
    """A rule made from one table of the catalogue (``loading.load_tables``)."""

    @classmethod
    def docs(cls) -> str:
        """The rule's docs, with its catalogue entries and their provenance."""
        lines = ["", "## Catalogue entries"]
        for entry in cls.entries:
            facts = [f"since TF {entry.since}"]
            if entry.removed:
                facts.append(f"removed in TF {entry.removed}")
            if cls.kind != "flag":
                facts.append(f"relation: {entry.relation}")
            if entry.calls:
                facts.append(f"calls: {entry.calls}")
            if entry.type_checks:
                facts.append(f"isinstance: {entry.type_checks}")
            source = f"; source: {entry.source}" if entry.source and entry.source != cls.source else ""
            lines.append(f"- `{short(entry.old)}{'.*' if entry.prefix else ''}` -> `{short(entry.new)}` ({', '.join(facts)}{source})")
        return super().docs().rstrip() + "\n" + "\n".join(lines) + "\n"

    def finish(self, analysis: Analysis) -> Iterable[Finding]:
        if self.kind == "method":
            self._finish_methods(analysis)
        elif self.kind == "flag":
            self._finish_flags(analysis)
        else:
            self._finish_symbols(analysis)
        return self.findings

    def _finish_methods(self, analysis: Analysis) -> None:
        stand_ins: Dict[str, Tuple[Dict[str, str], Dict[str, str]]] = {}
        for node, scope, call, position in self._attributes:
            entry = next(e for e in self.entries if e.last == node.attr.value)
            if call is not None and entry.calls:
                continue  # another rule rewrites the calls
            if entry.relation != SAME:
                if entry.last in analysis.defined_names:
                    continue  # the file has its own method of that name
                self.report(node.attr, self._manual_message(entry, position), analysis=analysis, suggestion=entry.new)
                continue
            if entry.last not in stand_ins:
                stand_ins[entry.last] = _stand_ins(entry.last, cast(str, entry.new), analysis)  # a renamed method's entry names the new one
            local, tree = stand_ins[entry.last]
            safety = None
            message = f"`{entry.old}` was renamed to `{entry.new}`" + (f" ({entry.message})" if entry.message else "")
            if local or tree:
                if _stand_in_instance(node.value, scope, local, tree):
                    continue  # the class's own method: renaming the call would break it
                if not surely_strategy(node.value, scope, analysis):
                    names = ", ".join(f"`{name}` ({where})" for name, where in sorted({**tree, **local}.items()))
                    receiver = analysis.module.code_for_node(node.value)
                    message += (
                        f"; `{receiver}` may be an instance of the tree's {names}, which defines `{entry.last}` and "
                        f"no `{entry.new}`: add `{entry.new} = {entry.last}` to that class (or rename both), "
                        f"or this call raises AttributeError on it"
                    )
                    safety = Safety.UNSAFE
            new = entry.new

            def rename(updated: cst.Attribute, new: Optional[str] = new) -> cst.Attribute:
                return updated.with_changes(attr=updated.attr.with_changes(value=new))

            self.report(
                node.attr,
                message,
                analysis=analysis,
                changes=[Change(node, rename)],
                safety=safety,
                fix_title=f"Rename to `{new}`",
            )
        for call, old, _scope in self._getattrs:
            entry = next(e for e in self.entries if e.last == old)
            became = f"it was renamed to `{entry.new}`" if entry.relation == SAME else f"it is gone: use `{entry.new}`"
            self.report(
                call,
                f"`{old}` looked up by name: {became}; update the string (and any fallback) by hand",
                analysis=analysis,
                suggestion=f'"{entry.new}"',
            )

    def _finish_flags(self, analysis: Analysis) -> None:
        node: cst.CSTNode  # an attribute or a name, then a string, then an import
        matched = []
        for node, scope, _call, _position in self._attributes + self._names:
            entry = self._entry_for(qualified_name(node, scope))
            if entry is not None:
                matched.append((node, entry))
        for node, scope, _call, _position in self._attributes:
            if self._entry_for(qualified_name(node, scope)) is None:
                self._report_if_maybe(node, scope, analysis)
        # ``tf.mixed_precision.experimental.FixedLossScale`` is one reference, not two.
        inner = {id(node.value) for node, _entry in matched if isinstance(node, cst.Attribute)}
        for node, entry in matched:
            if id(node) not in inner:
                self.report(node, entry.message, analysis=analysis, suggestion=entry.new)
        for node, scope in self._strings:
            for entry in self._string_entries(node, scope):
                self.report(node, entry.message, analysis=analysis, suggestion=entry.new)
        self._report_name_lookups(analysis)
        for node, _scope in self._imports:
            self.report(node, next(e for e in self.entries if self._imports_entry(node, e)).message, analysis=analysis)

    def _report_if_maybe(self, node: cst.Attribute, scope: Scope, analysis: Analysis) -> None:
        """A reference whose head name more than one import binds (``try: from a import m /
        except ImportError: from b import m``): no fix, since which module it is depends on
        where the code runs, but a note when one of them is a moved symbol."""
        if qualified_name(node.value, scope) is not None:
            return  # its head is known: this is simply not a moved symbol
        candidates = sorted(c for c in possible_names(node, scope) if self._entry_for(c) is not None)
        if not candidates:
            return
        entry = cast(Entry, self._entry_for(candidates[0]))  # every candidate has one
        gone = f"gone from TF {entry.removed}" if entry.removed else "the old API"
        self.report(
            node,
            f"`{analysis.module.code_for_node(node)}` may be `{short(entry.old)}` (`{head(node)}` is bound by more "
            f"than one import here), {gone}: use `{short(entry.new)}` where it exists",
            analysis=analysis,
            suggestion=short(entry.new),
        )

    def _report_name_lookups(self, analysis: Analysis) -> None:
        """``getattr(tf.distribute.experimental, "TPUStrategy")``: reported, never rewritten."""
        for call, name, scope in self._getattrs:
            owner = qualified_name(call.args[0].value, scope)
            entry = self._entry_for(f"{owner}.{name}") if owner else None
            if entry is not None:
                message = entry.message if self.kind == "flag" else self._manual_message(entry, references.NAME_LOOKUP)
                self.report(call, message, analysis=analysis, suggestion=short(entry.new))

    def _imports_entry(self, node: cst.ImportFrom, entry: Entry) -> bool:
        # Only imports from a named module, of named members, are kept (``_visit_import_from``).
        module = dotted_name(cast(cst.CSTNode, node.module)) or ""
        if self._matches(entry, module):
            return True
        return any(self._matches(entry, f"{module}.{dotted_name(a.name)}") for a in cast("Sequence[cst.ImportAlias]", node.names))

    def _finish_symbols(self, analysis: Analysis) -> None:
        # Names bound by ``from ... import`` of a moved symbol: rewrite the import
        # when every use can follow it; otherwise each use is handled in place.
        node: cst.CSTNode  # a name, then an attribute, a string and an import
        uses: Dict[str, List[Tuple[cst.Name, Scope, Optional[cst.Call], Entry, str, str]]] = {}
        for node, scope, call, position in self._names:
            if lookup(scope, node.value) is None:
                continue
            entry = self._entry_for(qualified_name(node, scope))
            if entry is None:
                continue
            uses.setdefault(node.value, []).append((node, scope, call, entry, self.action(entry, position), position))
        import_follows = {
            name: all(action == RENAME for *_, action, _position in items) for name, items in uses.items()
        }

        for node, scope, call, position in self._attributes:
            entry = self._entry_for(qualified_name(node, scope))
            if entry is not None:
                self._handle(Reference(node, scope, call), entry, position, analysis, in_place=True)
            else:
                self._report_if_maybe(node, scope, analysis)
        for name, items in uses.items():
            for node, scope, call, entry, _action, position in items:
                self._handle(Reference(node, scope, call), entry, position, analysis, in_place=not import_follows[name])
        for node, scope in self._strings:
            self._rename_string(node, scope, analysis)
        self._report_name_lookups(analysis)
        for node, scope in self._imports:
            self._rewrite_import(node, scope, import_follows, uses, analysis)

    def _handle(self, reference: Reference, entry: Entry, position: str, analysis: Analysis, in_place: bool) -> None:
        action = self.action(entry, position)
        if action == DELEGATED:
            return
        if action == MANUAL:
            self.report(reference.node, self._manual_message(entry, position), analysis=analysis, suggestion=short(entry.new))
            return
        self._rename_reference(reference, entry, analysis, in_place, unsafe=action == UNSAFE_RENAME)


def _stand_ins(old: str, new: str, analysis: Analysis) -> Tuple[Dict[str, str], Dict[str, str]]:
    """Classes defining ``old`` and not ``new``: {name: where} of this file's, and of the
    tree's other modules (``project.ProjectLookup.stand_in_classes``)."""
    local: Dict[str, str] = {}
    if old in analysis.defined_names:
        for scope in analysis.scopes_by_node.values():
            if scope.kind == "class" and old in scope.bindings and new not in scope.bindings and isinstance(scope.node, cst.ClassDef):
                local[scope.node.name.value] = "this file"
    places: Dict[str, List[str]] = {}
    found = analysis.lookup.stand_in_classes(old, new, analysis.path) if analysis.lookup is not None and analysis.path else []
    if found:
        here = Path(analysis.path).resolve()
        for name, path in found:
            if Path(path).resolve() != here:
                places.setdefault(name, []).append(_relative(path, here))
    # Where each class is, the nearest first (a project may have one per sub-project).
    tree: Dict[str, str] = {}
    for name, paths in places.items():
        paths.sort(key=lambda path: (path.count("/"), path))
        tree[name] = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return local, tree


def _relative(path: str, here: Path) -> str:
    """``path`` as the user reads it: relative to the file's folder's tree where it can be."""
    target = Path(path).resolve()
    for folder in here.parents:
        if folder in target.parents:
            return target.relative_to(folder).as_posix()
    return target.as_posix()


def _stand_in_instance(receiver: cst.BaseExpression, scope: Scope, local: Dict[str, str], tree: Dict[str, str], depth: int = 0) -> bool:
    """Whether ``receiver`` can only be an instance of a stand-in class: ``self`` in one of its
    methods, a call of the class, or a name every value of which is one."""
    if depth > 8:
        return False
    if isinstance(receiver, cst.Call):
        func = receiver.func
        if isinstance(func, cst.Name):
            found = lookup(scope, func.value)
            if found is None or len(found[1]) != 1:
                return False
            binding = found[1][0]
            if binding.kind == "class":
                return func.value in local
            return binding.kind == "import" and (binding.target or "").rpartition(".")[2] in tree
        return isinstance(func, cst.Attribute) and func.attr.value in tree and qualified_name(func, scope) is not None
    if isinstance(receiver, cst.Name):
        owner = scope.self_class(receiver.value)
        if owner is not None and isinstance(owner.node, cst.ClassDef):
            return owner.node.name.value in local
        found = lookup(scope, receiver.value)
        return found is not None and all(
            b.kind == "assign" and b.value is not None and _stand_in_instance(b.value, b.scope, local, tree, depth + 1) for b in found[1]
        )
    return False


class MethodTableRule(TableRule):
    """A table of methods: attribute references and name lookups (``getattr``) are walked."""

    visit_Call = TableRule._visit_name_lookup


class SymbolTableRule(TableRule):
    """A table of symbols or flags: names, imports and string annotations are walked too."""

    visit_Name = TableRule._visit_name
    visit_Call = TableRule._visit_name_lookup
    visit_SimpleString = TableRule._visit_string
    visit_ImportFrom = TableRule._visit_import_from

    @classmethod
    def ruled_out_by_text(cls, source: str, lookup: Optional[ProjectFacts] = None, path: str = "") -> bool:
        """Whether the text names none of the old symbols (``spelling.may_name``): every way
        the walk above finds one (a reference, an import, a string annotation, ``getattr``)
        spells the old name's last two parts there, so a file that uses the new names only
        needs no ``ast`` parse for the table."""
        return not may_name(source, [e.old for e in cls.entries if not e.prefix], [e.old for e in cls.entries if e.prefix])

    @classmethod
    def may_fire(cls, index: SourceIndex) -> bool:
        """What the walk above keeps, without LibCST (``syntax_stage.py``): a reference or an
        import that may stand for an old symbol (``SourceIndex.may_name``: an attribute chain
        ending in its last name, through every import and alias of its head), a string
        annotation holding a last name, or ``getattr``/``hasattr``/``setattr`` given one.
        ``tf.distribute.TPUStrategy``, the new name, spells the old one's last name too: on
        tf-models-official 2.6.0 such files were most of those LibCST parsed for nothing.
        Where the entry leaves type checks to another rule (TPU103's to TPU104), a reference
        that is the class an ``isinstance`` checks against does not count."""
        lasts = {entry.last for entry in cls.entries}
        if lasts & index.name_lookups:
            return True
        for annotation in index.annotations:
            for node in ast.walk(annotation):
                if type(node) is ast.Constant and isinstance(node.value, str) and any(last in node.value for last in lasts):
                    return True
        # An entry whose type checks another rule takes over (TPU104) counts only elsewhere.
        everywhere = [e for e in cls.entries if not e.type_checks]
        delegated = [e for e in cls.entries if e.type_checks]
        return any(
            entries and index.may_name([e.old for e in entries if not e.prefix], [e.old for e in entries if e.prefix], type_checked=counted)
            for entries, counted in ((everywhere, True), (delegated, False))
        )
