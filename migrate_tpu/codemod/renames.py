"""Rules made from the catalogue of moved symbols in ``rules/*.toml``.

Three kinds of entry:

* ``method``: an attribute renamed on any receiver (``s.experimental_run_v2`` ->
  ``s.run``). The old names exist only on TensorFlow strategies, so the receiver
  does not matter, unless the file or its tree defines a class of its own with the
  old name and not the new one (a stand-in strategy): a call on an instance of it is
  left alone, one on what may be either is an unsafe fix that says to give the class
  the new name too, one on what can only be a strategy is renamed.
* ``symbol``: a TensorFlow symbol that moved (``tf.distribute.experimental.TPUStrategy``
  -> ``tf.distribute.TPUStrategy``), found through any import alias and in every
  position (see ``references.py``). What each position may do follows from how the
  old symbol relates to the new one (``relation``): the same object is renamed
  everywhere; a subclass of the new class is renamed where only its type matters
  (``isinstance``, annotations); a base class is renamed only as an unsafe fix when
  the constructors differ; anything else is reported with what to do.
* ``flag``: a symbol with no mechanical replacement, reported with guidance in
  every position.

A rule's id, title, docs and examples sit beside its table in the TOML file.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Type, Union, cast

import libcst as cst

from migrate_tpu.codemod import references
from migrate_tpu.codemod.analysis import Analysis, Scope, Site, dotted_name
from migrate_tpu.codemod.locations import rules_directory
from migrate_tpu.codemod.names import canonical, expression_for, lookup, possible_names, qualified_name
from migrate_tpu.codemod.rule import Change, Evidence, Example, Expected, Rule, Safety, register
from migrate_tpu.codemod.spelling import may_name
from migrate_tpu.codemod.strategies import surely_strategy
from migrate_tpu.codemod.table_schema import check_document

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# What the old symbol is to the new one, checked on the real TF 2.4.1.
SAME = "same"  # the very same object under two names
SUBCLASS = "subclass"  # every old object is also an instance of the new class
SIBLING = "sibling"  # unrelated classes: neither is an instance of the other
REPLACED = "replaced"  # no drop-in: the new form is called differently
RELATIONS = (SAME, SUBCLASS, SIBLING, REPLACED)

# What a fix may do at one reference.
RENAME = "rename"
UNSAFE_RENAME = "unsafe rename"
MANUAL = "manual"
DELEGATED = "delegated"  # another rule (named in the entry) handles this position


@dataclass
class Entry:
    """One moved symbol of the catalogue, with its own facts and provenance."""

    old: str
    new: Optional[str] = None
    since: str = ""
    removed: str = ""
    source: str = ""
    relation: str = SAME
    # Rule ids that take over a position a table cannot express
    # (``calls = "TPU403"``: the structural rule rewrites the constructor calls).
    calls: str = ""
    type_checks: str = ""
    keywords: Dict[str, str] = field(default_factory=dict)
    manual_if_keywords: Tuple[str, ...] = ()
    max_positional: Optional[int] = None
    manual_message: str = ""
    prefix: bool = False
    message: str = ""
    # How old and new differ, for the messages of positions that need a person.
    difference: str = ""

    @property
    def last(self) -> str:
        return self.old.rsplit(".", 1)[-1]


class TableRule(Rule):
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

    @classmethod
    def action(cls, entry: Entry, position: str) -> str:
        """What a fix may do to a reference of ``entry`` at ``position``."""
        if cls.kind == "flag":
            return MANUAL
        if position == references.CALL:
            return DELEGATED if entry.calls else RENAME
        if position == references.TYPE_CHECK:
            if entry.type_checks:
                return DELEGATED
            return RENAME if entry.relation in (SAME, SUBCLASS) else MANUAL
        if position in (references.ANNOTATION, references.STRING):
            return RENAME
        if entry.relation == SAME:
            return RENAME
        if position == references.BASE:
            return UNSAFE_RENAME
        return MANUAL

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
            lines.append(f"- `{_short(entry.old)}{'.*' if entry.prefix else ''}` -> `{_short(entry.new)}` ({', '.join(facts)}{source})")
        return super().docs().rstrip() + "\n" + "\n".join(lines) + "\n"

    # -- walk ---------------------------------------------------------------------

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
    def batch_hooks(rules: Sequence["TableRule"]) -> Dict[str, object]:
        """One hook per node type for all the tables a run enables, in place of one per table.

        There are a dozen tables and each looks at every name, attribute, call and string;
        almost none of those concern any of them. Each shared hook first asks what every
        table's own hook asks first (an attribute's last name among the tables' names, a name
        one of them imports, ...), with one lookup for all, and only then calls the tables
        that may care, in the order given. A hook a subclass replaces is called as it is.
        """
        by_type: Dict[str, List[Tuple["TableRule", str]]] = {}
        for rule in rules:
            for node_type, method in type(rule).hooks().items():
                by_type.setdefault(node_type, []).append((rule, method))
        hooks: Dict[str, object] = {}
        for node_type, members in by_type.items():
            plain = [getattr(rule, method) for rule, method in members]
            own = [getattr(type(rule), method) for rule, method in members]
            hooks[node_type] = _batched(node_type, [rule for rule, _ in members], plain, own) or _call_all(plain)
        return hooks

    # -- decisions ------------------------------------------------------------------

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

    def finish(self, analysis: Analysis):
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

            def rename(updated, new=new):
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

    def _report_if_maybe(self, node: cst.Attribute, scope, analysis: Analysis) -> None:
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
            f"`{analysis.module.code_for_node(node)}` may be `{_short(entry.old)}` (`{_head(node)}` is bound by more "
            f"than one import here), {gone}: use `{_short(entry.new)}` where it exists",
            analysis=analysis,
            suggestion=_short(entry.new),
        )

    def _report_name_lookups(self, analysis: Analysis) -> None:
        """``getattr(tf.distribute.experimental, "TPUStrategy")``: reported, never rewritten."""
        for call, name, scope in self._getattrs:
            owner = qualified_name(call.args[0].value, scope)
            entry = self._entry_for(f"{owner}.{name}") if owner else None
            if entry is not None:
                message = entry.message if self.kind == "flag" else self._manual_message(entry, references.NAME_LOOKUP)
                self.report(call, message, analysis=analysis, suggestion=_short(entry.new))

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
        uses: Dict[str, List] = {}
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
                self._handle(node, scope, call, entry, position, analysis, in_place=True)
            else:
                self._report_if_maybe(node, scope, analysis)
        for name, items in uses.items():
            for node, scope, call, entry, _action, position in items:
                self._handle(node, scope, call, entry, position, analysis, in_place=not import_follows[name])
        for node, scope in self._strings:
            self._rename_string(node, scope, analysis)
        self._report_name_lookups(analysis)
        for node, scope in self._imports:
            self._rewrite_import(node, scope, import_follows, uses, analysis)

    def _handle(self, node, scope, call, entry: Entry, position: str, analysis: Analysis, in_place: bool) -> None:
        action = self.action(entry, position)
        if action == DELEGATED:
            return
        if action == MANUAL:
            self.report(node, self._manual_message(entry, position), analysis=analysis, suggestion=_short(entry.new))
            return
        self._rename_reference(node, scope, call, entry, analysis, in_place, unsafe=action == UNSAFE_RENAME)

    @staticmethod
    def _manual_message(entry: Entry, position: str) -> str:
        old, new = _short(entry.old), _short(entry.new)
        difference = f" ({entry.difference})" if entry.difference else ""
        if entry.relation == REPLACED:
            removed = f" in TF {entry.removed}" if entry.removed else ""
            return f"`{old}` was removed{removed}{difference}; this {position} needs rewriting by hand: use `{new}`"
        if position == references.TYPE_CHECK:
            return f"`{old}` moved to `{new}`{difference}; make this check accept both classes"
        return (
            f"`{old}` moved to `{new}`{difference}; this {position} keeps the old symbol: "
            f"point it at `{new}` once everything it reaches suits the new one"
        )

    def _manual_reason(self, entry: Entry, call: Optional[cst.Call]) -> Optional[str]:
        if call is None:
            return None
        for arg in call.args:
            if arg.star:
                return "arguments passed with * or ** cannot be checked"
            if arg.keyword is not None and arg.keyword.value in entry.manual_if_keywords:
                return entry.manual_message or f"`{arg.keyword.value}=` has no equivalent in the new API"
        positional = [a for a in call.args if a.keyword is None]
        if entry.max_positional is not None and len(positional) > entry.max_positional:
            return entry.manual_message or "extra positional arguments have no equivalent in the new API"
        return None

    def _rename_reference(self, node, scope, call, entry: Entry, analysis: Analysis, in_place: bool, unsafe: bool = False) -> None:
        reason = self._manual_reason(entry, call)
        old_short, new_short = _short(entry.old), _short(entry.new)
        if reason is not None:
            self.report(call or node, f"`{old_short}` moved to `{new_short}`, but {reason}", analysis=analysis)
            return
        replacement: Optional[cst.BaseExpression] = None
        imports = []
        new = cast(str, entry.new)  # an entry whose references are renamed names the new symbol
        if in_place:
            try:
                text, needed = renamed_expression(node, scope, new, analysis)
            except LookupError:
                self.report(node, f"`{old_short}` moved to `{new_short}`", analysis=analysis)
                return
            replacement = cst.parse_expression(text)
            if needed:
                imports.append(needed)
        elif entry.last != new.rsplit(".", 1)[-1] and isinstance(node, cst.Name):
            bound_as_alias = node.value != entry.last
            if not bound_as_alias:
                replacement = cst.Name(new.rsplit(".", 1)[-1])

        keywords = entry.keywords

        def rewrite_reference(updated, replacement=replacement):
            if replacement is None:
                return updated
            return replacement.with_changes(lpar=updated.lpar, rpar=updated.rpar)

        def rewrite_call(updated, replacement=replacement):
            new_args = [
                arg.with_changes(keyword=arg.keyword.with_changes(value=keywords[arg.keyword.value]))
                if arg.keyword is not None and arg.keyword.value in keywords
                else arg
                for arg in updated.args
            ]
            return updated.with_changes(func=rewrite_reference(updated.func), args=new_args)

        if call is not None and (keywords or replacement is not None):
            changes = [Change(call, rewrite_call)]
        elif replacement is not None:
            changes = [Change(node, rewrite_reference)]
        else:
            return  # the import rewrite covers this use
        if unsafe and keywords:
            # The subclass's calls of the base constructor (``super().__init__(r,
            # device_assignment=da)``) follow the new class's keywords, or the
            # renamed base would fail with ``TypeError``.
            for constructor in _base_constructor_calls(node, analysis, keywords):
                changes.append(Change(constructor, lambda updated: _rename_keywords(cast(cst.Call, updated), keywords)))  # the change is on a call
        renamed = [k for k in keywords if call is not None and any(a.keyword is not None and a.keyword.value == k for a in call.args)]
        detail = "".join(f"; `{k}=` is now `{keywords[k]}=`" for k in renamed)
        if unsafe:
            difference = f": {entry.difference}" if entry.difference else ""
            detail += f"; as a base class the constructor changes{difference}; check the subclass's `__init__` and the calls that build it"
        finding = self.report(
            node,
            f"`{old_short}` moved to `{new_short}`{detail}",
            analysis=analysis,
            changes=changes,
            imports=imports,
            safety=Safety.UNSAFE if unsafe else None,
            suggestion=new_short if unsafe else None,
            fix_title=f"Use `{new_short}`",
        )
        if replacement is not None:
            finding.releases.append(_head(node))

    # -- string annotations ---------------------------------------------------------

    def _string_references(self, node: cst.SimpleString, scope):
        """(expression, entry) for each moved symbol the annotation string names."""
        try:
            parsed = cst.parse_expression(cast(str, node.evaluated_value))  # only a str is kept (``_visit_string``)
        except Exception:  # any text may sit in a string: it is then no annotation we can read
            return None, []
        found = []
        for candidate in _dotted_parts(parsed):
            entry = self._entry_for(qualified_name(candidate, scope))
            if entry is not None:
                found.append((candidate, entry))
        return parsed, found

    def _string_entries(self, node: cst.SimpleString, scope) -> List[Entry]:
        return [entry for _candidate, entry in self._string_references(node, scope)[1]]

    def _rename_string(self, node: cst.SimpleString, scope, analysis: Analysis) -> None:
        parsed, found = self._string_references(node, scope)
        if not found:
            return
        texts = {}
        needed: Union[Tuple[str, Optional[str]], bool, None]  # the import the name needs; True: it cannot be written
        for candidate, entry in found:
            try:
                text, needed = renamed_expression(candidate, scope, entry.new, analysis)
            except LookupError:
                text, needed = None, True
            if needed:  # the string would name something the file does not import
                self.report(node, self._manual_message(found[0][1], references.STRING), analysis=analysis, suggestion=_short(entry.new))
                return
            texts[id(candidate)] = text

        class Replace(cst.CSTTransformer):
            def on_leave(self, original, updated):
                text = texts.get(id(original))
                return cst.parse_expression(text) if text is not None else updated

        new_text = cst.Module([]).code_for_node(parsed.visit(Replace()))
        quote = node.quote
        prefix = node.prefix
        if quote in new_text or "\\" in new_text:
            self.report(node, self._manual_message(found[0][1], references.STRING), analysis=analysis)
            return
        new_string = cst.SimpleString(f"{prefix}{quote}{new_text}{quote}")
        olds = ", ".join(f"`{_short(e.old)}`" for _c, e in found)

        def replace_string(updated, new_string=new_string):
            return new_string

        self.report(
            node,
            f"{olds} moved: the annotation names `{new_text}`",
            analysis=analysis,
            changes=[Change(node, replace_string)],
            fix_title="Use the new name",
        )

    def _rewrite_import(self, node: cst.ImportFrom, scope, import_follows: Dict[str, bool], uses: Dict[str, List], analysis: Analysis) -> None:
        # Only imports from a named module, of named members, are kept (``_visit_import_from``).
        module = dotted_name(cast(cst.CSTNode, node.module))
        staying, moving = [], []
        for alias in cast("Sequence[cst.ImportAlias]", node.names):
            name = dotted_name(alias.name) or ""
            bound = cast(cst.Name, alias.asname.name).value if alias.asname is not None else name
            entry = self._entry_for(f"{module}.{name}")
            if entry is None or not import_follows.get(bound, True):
                staying.append(alias)
                # A use left for a person keeps the old symbol, and so this import,
                # alive. Uses fixed in place (an unsafe fix too, which then releases
                # the import) or handed to another rule do not need it reported.
                if entry is not None and any(action == MANUAL for *_, action, _p in uses.get(bound, ())):
                    self.report(node, self._manual_message(entry, references.IMPORT), analysis=analysis, suggestion=_short(entry.new))
            else:
                moving.append((alias, entry))
        if not moving:
            return
        destinations: Dict[str, List[str]] = {}
        for alias, entry in moving:
            new_module, _, new_name = cast(str, entry.new).rpartition(".")  # a moved symbol's entry names the new one
            text = new_name
            if alias.asname is not None:
                text += f" as {cast(cst.Name, alias.asname.name).value}"
            destinations.setdefault(new_module, []).append(text)
        statement = analysis.statement_of(node)
        newline = analysis.module.default_newline

        def new_lines(updated_statement):
            lines = []
            if staying:
                kept = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) if i == len(staying) - 1 else a for i, a in enumerate(staying)]
                first_import = updated_statement.body[0].with_changes(names=kept)
                if first_import.lpar is not None and len(kept) == 1:
                    first_import = first_import.with_changes(lpar=None, rpar=None)
                lines.append(updated_statement.with_changes(body=[first_import]))
            for destination, names in destinations.items():
                line = cst.parse_statement(f"from {destination} import {', '.join(names)}{newline}")
                if not lines:
                    line = line.with_changes(
                        leading_lines=updated_statement.leading_lines,
                        trailing_whitespace=updated_statement.trailing_whitespace,
                    )
                lines.append(line)
            return cst.FlattenSentinel(lines) if len(lines) > 1 else lines[0]

        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            self.report(node, "this import of a moved symbol shares its line; update it by hand", analysis=analysis)
            return
        moved = ", ".join(f"`{_short(e.old)}`" for _, e in moving)
        self.report(
            node,
            f"{moved} moved: import from `{'`, `'.join(destinations)}`",
            analysis=analysis,
            changes=[Change(statement, new_lines)],
            fix_title="Import from the new module",
        )


def _call_all(hooks: Sequence) -> object:
    def hook(node: cst.CSTNode, analysis: Analysis) -> None:
        for each in hooks:
            each(node, analysis)

    return hook


_NAME_LOOKUPS = ("getattr", "hasattr", "setattr")


def _batched(node_type: str, rules: Sequence[TableRule], hooks: Sequence, own: Sequence) -> Optional[object]:
    """The shared hook for ``node_type`` when every table's hook is TableRule's own (whose
    first test is known here); None otherwise."""
    if node_type == "Attribute" and all(f is TableRule.visit_Attribute for f in own):
        by_last: Dict[str, List] = {}
        for rule, hook in zip(rules, hooks):
            for last in rule._last:
                by_last.setdefault(last, []).append(hook)

        def attribute(node: cst.Attribute, analysis: Analysis) -> None:
            for hook in by_last.get(node.attr.value, ()):
                hook(node, analysis)

        return attribute
    if node_type == "Name" and all(f is TableRule._visit_name for f in own):
        watched: set = set()
        for rule in rules:
            watched.update(rule._imported_names)
            rule._names_watched = watched

        def name(node: cst.Name, analysis: Analysis) -> None:
            if node.value in watched:
                for hook in hooks:
                    hook(node, analysis)

        return name
    if node_type == "Call" and all(f is TableRule._visit_name_lookup for f in own):

        def call(node: cst.Call, analysis: Analysis) -> None:
            func = node.func
            if isinstance(func, cst.Name) and func.value in _NAME_LOOKUPS:
                for hook in hooks:
                    hook(node, analysis)

        return call
    if node_type == "SimpleString" and all(f is TableRule._visit_string for f in own):
        lasts = tuple(sorted({last for rule in rules for last in rule._last}))

        def string(node: cst.SimpleString, analysis: Analysis) -> None:
            value = node.value
            if any(last in value for last in lasts):
                for hook in hooks:
                    hook(node, analysis)

        return string
    return None


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


def _stand_in_instance(receiver: cst.BaseExpression, scope, local: Dict[str, str], tree: Dict[str, str], depth: int = 0) -> bool:
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
    def ruled_out_by_text(cls, source: str, lookup=None, path: str = "") -> bool:
        """Whether the text names none of the old symbols (``spelling.may_name``): every way
        the walk above finds one (a reference, an import, a string annotation, ``getattr``)
        spells the old name's last two parts there, so a file that uses the new names only
        needs no ``ast`` parse for the table."""
        return not may_name(source, [e.old for e in cls.entries if not e.prefix], [e.old for e in cls.entries if e.prefix])

    @classmethod
    def may_fire(cls, index) -> bool:
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


def renamed_expression(node: cst.CSTNode, scope, new: str, analysis: Optional[Analysis] = None) -> Tuple[str, Optional[Tuple[str, Optional[str]]]]:
    """Source text for ``new`` in place of ``node``, keeping the spelling written there.

    ``tf.compat.v2.keras.mixed_precision.experimental.set_policy`` becomes
    ``tf.compat.v2.keras.mixed_precision.set_global_policy``: the longest written
    prefix that already names a parent of ``new`` is kept; otherwise the file's
    aliases are used (and TensorFlow imported when it has none).
    """
    current = node
    while isinstance(current, cst.Attribute):
        current = current.value
        written = qualified_name(current, scope)
        if written is None:
            break
        written = canonical(written)
        if new.startswith(written + "."):
            return cst.Module([]).code_for_node(current) + new[len(written) :], None
    return expression_for(new, scope, None if analysis is None else (lambda name: analysis.name_ready(name, node)))


def _dotted_parts(expression: cst.CSTNode) -> List[cst.CSTNode]:
    """The outermost dotted names (``a.b.c``, ``x``) inside a parsed annotation."""
    found: List[cst.CSTNode] = []

    def walk(node: cst.CSTNode) -> None:
        if isinstance(node, (cst.Attribute, cst.Name)):
            found.append(node)
            return
        for child in node.children:
            walk(child)

    walk(expression)
    return found


def _rename_keywords(call: cst.Call, keywords: Dict[str, str]) -> cst.Call:
    return call.with_changes(
        args=[
            arg.with_changes(keyword=arg.keyword.with_changes(value=keywords[arg.keyword.value]))
            if arg.keyword is not None and arg.keyword.value in keywords
            else arg
            for arg in call.args
        ]
    )


def _passes_keyword(call: cst.Call, keywords: Dict[str, str]) -> bool:
    return any(arg.keyword is not None and arg.keyword.value in keywords for arg in call.args)


def _base_constructor_calls(base: cst.CSTNode, analysis: Analysis, keywords: Dict[str, str]) -> List[cst.Call]:
    """Calls that reach the constructor of the base class ``base`` with one of its old
    ``keywords``: ``super().__init__(...)``, ``super(C, self).__init__(...)`` and
    ``Base.__init__(self, ...)`` in the class's own methods, and, when the class
    defines no ``__init__``, the calls of the class itself in this file."""
    site = analysis.site(base)
    path = site.path if site is not None else ()
    if len(path) < 3 or not isinstance(path[-3], cst.ClassDef):
        return []
    klass = path[-3]
    base_code = analysis.module.code_for_node(base)
    found: List[cst.Call] = []
    has_init = False
    for statement in klass.body.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        if statement.name.value == "__init__":
            has_init = True
        for inner in _walk_calls(statement):
            func = inner.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "__init__"):
                continue
            receiver = func.value
            is_super = isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super"
            if (is_super or analysis.module.code_for_node(receiver) == base_code) and _passes_keyword(inner, keywords):
                found.append(inner)
    if not has_init:
        for call, scope in analysis.calls_by_name.get(klass.name.value, []):
            bound = lookup(scope, klass.name.value)
            if bound is not None and any(b.node is klass for b in bound[1]) and _passes_keyword(call, keywords):
                found.append(call)
    return found


def _walk_calls(node: cst.CSTNode):
    """Every call under ``node`` (nested functions and classes included)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            yield current
        stack.extend(current.children)


def _head(node: cst.CSTNode) -> str:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""


def _short(name: Optional[str]) -> str:
    if not name:
        return ""
    return "tf" + name[len("tensorflow") :] if name.startswith("tensorflow") else name


def _entries(raw: dict, since: str, source: str) -> List[Entry]:
    entries = []
    for item in raw.get("rename", []) + raw.get("symbol", []):
        relation = item.get("relation", SAME)
        if relation not in RELATIONS:
            raise ValueError(f"{raw['id']}: unknown relation {relation!r} for {item['old']}")
        entries.append(
            Entry(
                old=item["old"],
                new=item.get("new"),
                since=item.get("since", since),
                removed=item.get("removed", ""),
                source=item.get("source", source),
                relation=relation,
                calls=item.get("calls", ""),
                type_checks=item.get("type_checks", ""),
                difference=item.get("difference", ""),
                keywords=dict(item.get("keywords", {})),
                manual_if_keywords=tuple(item.get("manual_if_keywords", ())),
                max_positional=item.get("max_positional"),
                manual_message=item.get("manual_message", ""),
                prefix=item.get("prefix", False),
                message=item.get("message", ""),
            )
        )
    return entries


def load_tables(directory: Optional[Path] = None) -> List[Type[TableRule]]:
    """Build and register one rule class per ``[[rule]]`` table."""
    directory = directory or rules_directory()
    created: List[Type[TableRule]] = []
    for path in sorted(directory.glob("*.toml")):
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
        check_document(document, str(path))
        for raw in document.get("rule", []):
            since = raw.get("since", document.get("release", "2.4"))
            attributes = {
                "id": raw["id"],
                "name": raw["name"],
                "title": raw["title"],
                "kind": raw["kind"],
                "safety": Safety(raw.get("safety", "manual" if raw["kind"] == "flag" else "safe")),
                "since": since,
                "targets": tuple(raw.get("targets", ("2.4", "latest"))),
                "source": raw.get("source", ""),
                "what": raw.get("what", ""),
                "why": raw.get("why", ""),
                "use_instead": raw.get("use_instead", ""),
                "fix_safety": raw.get("fix_safety", ""),
                "examples": tuple(
                    Example(
                        e["before"],
                        e.get("after"),
                        e.get("unsafe_fixes", False),
                        e.get("target", "2.4"),
                        e.get("findings"),
                        tuple(Expected(**found) for found in e.get("expected", ())),
                        e.get("safe_after"),
                    )
                    for e in raw.get("example", [])
                ),
                "entries": tuple(_entries(raw, since, raw.get("source", ""))),
            }
            attributes["evidence"] = _declared_evidence(raw) or _evidence(raw["kind"], attributes["entries"])
            base = MethodTableRule if raw["kind"] == "method" else SymbolTableRule
            rule_class = type(f"Table_{raw['id']}", (base,), attributes)
            register(rule_class)
            created.append(rule_class)
    return created


def _declared_evidence(raw) -> Tuple[Evidence, ...]:
    """A table's own ``[[rule.evidence]]`` (the fields of :class:`Evidence`), where the last
    names of its symbols are too common a word to filter on (a package named ``experimental``)."""
    # The schema (``table_schema.EVIDENCE``) names exactly Evidence's fields, and the loader
    # has refused any other key: each table passes its own, Evidence's defaults fill the rest.
    return tuple(
        Evidence(**{**e, "targets": tuple(e["targets"])} if "targets" in e else e)
        for e in raw.get("evidence", [])
    )


def _evidence(kind: str, entries: Sequence[Entry]) -> Tuple[Evidence, ...]:
    """What a file must contain for a table to fire: the last name of each old symbol.

    Every reference to ``a.b.C`` names ``C`` somewhere (in the attribute chain or
    the import), however it was imported. Methods need no TensorFlow import: a
    strategy may arrive from another module.
    """
    words = sorted({entry.last for entry in entries})
    return tuple(Evidence(word, without_tensorflow=kind == "method") for word in words)
