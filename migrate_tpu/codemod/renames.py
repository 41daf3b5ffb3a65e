"""Rules made from the declarative tables in ``rules/*.toml``.

Three kinds of entry:

* ``method``: an attribute renamed on any receiver (``s.experimental_run_v2`` ->
  ``s.run``). The old names exist only on TensorFlow strategies, so the receiver
  does not matter; a file that defines its own method of that name is left alone.
* ``symbol``: a TensorFlow symbol that moved (``tf.distribute.experimental.TPUStrategy``
  -> ``tf.distribute.TPUStrategy``), found through any import alias; keyword
  arguments of calls may be renamed with it, and some uses may need manual work.
* ``flag``: a symbol with no mechanical replacement, reported with guidance.

A rule's id, title, docs and examples sit beside its table in the TOML file.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from migrate_tpu.codemod.analysis import Analysis, dotted_name
from migrate_tpu.codemod.locations import rules_directory
from migrate_tpu.codemod.names import expression_for, lookup, qualified_name
from migrate_tpu.codemod.rule import Change, Example, Rule, Safety, register

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass
class Entry:
    old: str
    new: Optional[str] = None
    calls_only: bool = False
    keywords: Dict[str, str] = field(default_factory=dict)
    manual_if_keywords: Tuple[str, ...] = ()
    max_positional: Optional[int] = None
    manual_message: str = ""
    prefix: bool = False
    message: str = ""

    @property
    def last(self) -> str:
        return self.old.rsplit(".", 1)[-1]


class TableRule(Rule):
    kind: str = "symbol"
    entries: Sequence[Entry] = ()

    def __init__(self) -> None:
        super().__init__()
        self._attributes: List[Tuple[cst.Attribute, object, Optional[cst.Call]]] = []
        self._names: List[Tuple[cst.Name, object, Optional[cst.Call]]] = []
        self._imports: List[Tuple[cst.ImportFrom, object]] = []
        self._getattrs: List[Tuple[cst.Call, str]] = []
        self._last = {e.last for e in self.entries}
        self._imported_names: set = set()

    # -- walk ---------------------------------------------------------------------

    def visit_Attribute(self, node: cst.Attribute, analysis: Analysis) -> None:
        if node.attr.value in self._last:
            parent = analysis.parent
            call = parent if isinstance(parent, cst.Call) and parent.func is node else None
            analysis.remember(call or node)
            if call is not None:
                analysis.remember(node)
            if self.kind == "method":
                analysis.sites[id(node.attr)] = analysis.site(node)
            self._attributes.append((node, analysis.scope, call))

    def visit_Name(self, node: cst.Name, analysis: Analysis) -> None:
        if self.kind != "method" and node.value in self._imported_names:
            parent = analysis.parent
            if isinstance(parent, (cst.ImportAlias, cst.AsName, cst.Attribute)) and not (
                isinstance(parent, cst.Attribute) and parent.value is node
            ):
                return
            call = parent if isinstance(parent, cst.Call) and parent.func is node else None
            analysis.remember(call or node)
            if call is not None:
                analysis.remember(node)
            self._names.append((node, analysis.scope, call))

    def visit_ImportFrom(self, node: cst.ImportFrom, analysis: Analysis) -> None:
        if self.kind == "method" or isinstance(node.names, cst.ImportStar):
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
                bound = alias.asname.name.value if alias.asname is not None else name
                self._imported_names.add(bound)
                analysis.remember(node)
                self._imports.append((node, analysis.scope))

    def visit_Call(self, node: cst.Call, analysis: Analysis) -> None:
        if self.kind != "method" or not isinstance(node.func, cst.Name):
            return
        if node.func.value in ("getattr", "hasattr", "setattr") and len(node.args) >= 2:
            value = node.args[1].value
            if isinstance(value, cst.SimpleString) and value.evaluated_value in self._last:
                analysis.remember(node)
                self._getattrs.append((node, value.evaluated_value))

    # -- decisions ------------------------------------------------------------------

    @staticmethod
    def _matches(entry: Entry, name: Optional[str]) -> bool:
        if name is None:
            return False
        from migrate_tpu.codemod.names import canonical

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
        for node, scope, _call in self._attributes:
            entry = next(e for e in self.entries if e.last == node.attr.value)
            if entry.last in analysis.defined_names:
                continue  # the file has its own method of that name
            new = entry.new

            def rename(updated, new=new):
                return updated.with_changes(attr=updated.attr.with_changes(value=new))

            self.report(
                node.attr,
                f"`{entry.old}` was renamed to `{new}`" + (f" ({entry.message})" if entry.message else ""),
                analysis=analysis,
                changes=[Change(node, rename)],
                fix_title=f"Rename to `{new}`",
            )
        for call, old in self._getattrs:
            entry = next(e for e in self.entries if e.last == old)
            self.report(
                call,
                f"`{old}` looked up by name: it was renamed to `{entry.new}`; update the string "
                "(and any fallback) by hand",
                analysis=analysis,
                suggestion=f'"{entry.new}"',
            )

    def _finish_flags(self, analysis: Analysis) -> None:
        for node, scope, call in self._attributes + self._names:
            entry = self._entry_for(qualified_name(node, scope))
            if entry is None:
                continue
            self.report(node, entry.message, analysis=analysis, suggestion=entry.new)
        for node, scope in self._imports:
            self.report(node, next(e for e in self.entries if self._imports_entry(node, e)).message, analysis=analysis)

    def _imports_entry(self, node: cst.ImportFrom, entry: Entry) -> bool:
        module = dotted_name(node.module) or ""
        if self._matches(entry, module):
            return True
        return any(self._matches(entry, f"{module}.{dotted_name(a.name)}") for a in node.names)

    def _finish_symbols(self, analysis: Analysis) -> None:
        # Names bound by ``from ... import`` of a moved symbol: rewrite the import
        # when every use can follow it; otherwise rewrite the calls in place.
        import_rewrites: Dict[str, bool] = {}
        uses: Dict[str, List] = {}
        for node, scope, call in self._names:
            found = lookup(scope, node.value)
            if found is None:
                continue
            qualified = qualified_name(node, scope)
            entry = self._entry_for(qualified)
            if entry is None:
                continue
            uses.setdefault(node.value, []).append((node, scope, call, entry))
        for name, items in uses.items():
            import_rewrites[name] = all(call is not None or not entry.calls_only for _, _, call, entry in items)

        for node, scope, call in self._attributes:
            entry = self._entry_for(qualified_name(node, scope))
            if entry is None:
                continue
            if entry.calls_only and call is None:
                continue
            self._rename_reference(node, scope, call, entry, analysis, in_place=True)
        for name, items in uses.items():
            for node, scope, call, entry in items:
                if entry.calls_only and call is None:
                    continue
                self._rename_reference(node, scope, call, entry, analysis, in_place=not import_rewrites[name])
        for node, scope in self._imports:
            self._rewrite_import(node, scope, import_rewrites, analysis)

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

    def _rename_reference(self, node, scope, call, entry: Entry, analysis: Analysis, in_place: bool) -> None:
        reason = self._manual_reason(entry, call)
        old_short, new_short = _short(entry.old), _short(entry.new)
        if reason is not None:
            self.report(call or node, f"`{old_short}` moved to `{new_short}`, but {reason}", analysis=analysis)
            return
        replacement: Optional[cst.BaseExpression] = None
        imports = []
        if in_place:
            try:
                text, needed = expression_for(entry.new, scope)
            except LookupError:
                self.report(node, f"`{old_short}` moved to `{new_short}`", analysis=analysis)
                return
            replacement = cst.parse_expression(text)
            if needed:
                imports.append(needed)
        elif entry.last != entry.new.rsplit(".", 1)[-1] and isinstance(node, cst.Name):
            bound_as_alias = node.value != entry.last
            if not bound_as_alias:
                replacement = cst.Name(entry.new.rsplit(".", 1)[-1])

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
        renamed = [k for k in keywords if call is not None and any(a.keyword is not None and a.keyword.value == k for a in call.args)]
        detail = "".join(f"; `{k}=` is now `{keywords[k]}=`" for k in renamed)
        finding = self.report(
            node,
            f"`{old_short}` moved to `{new_short}`{detail}",
            analysis=analysis,
            changes=changes,
            imports=imports,
            fix_title=f"Use `{new_short}`",
        )
        if replacement is not None:
            finding.releases.append(_head(node))

    def _rewrite_import(self, node: cst.ImportFrom, scope, import_rewrites: Dict[str, bool], analysis: Analysis) -> None:
        module = dotted_name(node.module)
        staying, moving = [], []
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            bound = alias.asname.name.value if alias.asname is not None else name
            entry = self._entry_for(f"{module}.{name}")
            if entry is None or not import_rewrites.get(bound, True):
                staying.append(alias)
            else:
                moving.append((alias, entry))
        if not moving:
            return
        destinations: Dict[str, List[str]] = {}
        for alias, entry in moving:
            new_module, _, new_name = entry.new.rpartition(".")
            text = new_name
            if alias.asname is not None:
                text += f" as {alias.asname.name.value}"
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


def _head(node: cst.CSTNode) -> str:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""


def _short(name: Optional[str]) -> str:
    if not name:
        return ""
    return "tf" + name[len("tensorflow") :] if name.startswith("tensorflow") else name


def _entries(raw: dict) -> List[Entry]:
    entries = []
    for item in raw.get("rename", []) + raw.get("symbol", []):
        entries.append(
            Entry(
                old=item["old"],
                new=item.get("new"),
                calls_only=item.get("calls_only", False),
                keywords=dict(item.get("keywords", {})),
                manual_if_keywords=tuple(item.get("manual_if_keywords", ())),
                max_positional=item.get("max_positional"),
                manual_message=item.get("manual_message", ""),
                prefix=item.get("prefix", False),
                message=item.get("message", ""),
            )
        )
    return entries


def load_tables(directory: Optional[Path] = None) -> List[type]:
    """Build and register one rule class per ``[[rule]]`` table."""
    directory = directory or rules_directory()
    created = []
    for path in sorted(directory.glob("*.toml")):
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
        for raw in document.get("rule", []):
            attributes = {
                "id": raw["id"],
                "name": raw["name"],
                "title": raw["title"],
                "kind": raw["kind"],
                "safety": Safety(raw.get("safety", "manual" if raw["kind"] == "flag" else "safe")),
                "since": raw.get("since", document.get("release", "2.4")),
                "targets": tuple(raw.get("targets", ("2.4", "latest"))),
                "source": raw.get("source", ""),
                "what": raw.get("what", ""),
                "why": raw.get("why", ""),
                "use_instead": raw.get("use_instead", ""),
                "fix_safety": raw.get("fix_safety", ""),
                "examples": tuple(
                    Example(e["before"], e.get("after"), e.get("unsafe_fixes", False), e.get("target", "2.4"))
                    for e in raw.get("example", [])
                ),
                "entries": tuple(_entries(raw)),
                "table": path.name,
            }
            attributes["triggers"] = tuple(sorted({e.last for e in attributes["entries"]}))
            rule_class = type(f"Table_{raw['id']}", (TableRule,), attributes)
            register(rule_class)
            created.append(rule_class)
    return created
