"""What a table rule's fix may do at each position of a reference (``action``), and the
rewrites: a reference renamed in place or through its import, a string annotation, an
import of moved symbols; or the message that leaves a position to a person.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union, cast

import libcst as cst

from migrate_tpu.codemod.analysis.names import canonical, expression_for, lookup, qualified_name
from migrate_tpu.codemod.analysis.walk import Analysis, Scope, dotted_name
from migrate_tpu.codemod.foundation import references
from migrate_tpu.codemod.framework.rule import Change, Safety
from migrate_tpu.codemod.rules.tables.entries import DELEGATED, MANUAL, RENAME, REPLACED, SAME, SUBCLASS, UNSAFE_RENAME, Entry, head, short
from migrate_tpu.codemod.rules.tables.walk import TableWalk


class Reference(NamedTuple):
    """A reference to a table's symbol, as the walk met it."""

    node: Union[cst.Attribute, cst.Name]
    scope: Scope
    call: Optional[cst.Call]  # the call ``node`` is the callee of, if any


class TableRewrites(TableWalk):
    """The fixes of a table rule, position by position (``action``), over its walk."""

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

    @staticmethod
    def _manual_message(entry: Entry, position: str) -> str:
        old, new = short(entry.old), short(entry.new)
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

    @staticmethod
    def _moved(entry: Entry) -> str:
        """What a renamed reference's finding says: "`old` moved to `new`", or the entry's own
        ``message`` where that would not be true (an old name that no release had, such as
        the half-migrated ``tf.keras.mixed_precision.set_policy``)."""
        return entry.message or f"`{short(entry.old)}` moved to `{short(entry.new)}`"

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

    def _rename_reference(self, reference: Reference, entry: Entry, analysis: Analysis, in_place: bool, unsafe: bool = False) -> None:
        node, _, call = reference
        reason = self._manual_reason(entry, call)
        new_short = short(entry.new)
        moved = self._moved(entry)
        if reason is not None:
            self.report(call or node, f"{moved}, but {reason}", analysis=analysis)
            return
        found = _new_reference(reference, entry, analysis, in_place)
        if found is None:
            self.report(node, moved, analysis=analysis)
            return
        replacement, imports = found
        keywords = entry.keywords
        changes = _reference_changes(reference, replacement, keywords)
        if not changes:
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
            f"{moved}{detail}",
            analysis=analysis,
            changes=changes,
            imports=imports,
            safety=Safety.UNSAFE if unsafe else None,
            suggestion=new_short if unsafe else None,
            fix_title=f"Use `{new_short}`",
        )
        if replacement is not None:
            finding.releases.append(head(node))

    def _string_references(self, node: cst.SimpleString, scope: Scope) -> Tuple[Optional[cst.BaseExpression], List[Tuple[cst.CSTNode, Entry]]]:
        """(expression, entry) for each moved symbol the annotation string names."""
        try:
            parsed = cst.parse_expression(cast(str, node.evaluated_value))  # only a str is kept (``_visit_string``)
        except Exception:  # any text may sit in a string: it is then no annotation we can read
            return None, []
        found: List[Tuple[cst.CSTNode, Entry]] = []
        for candidate in _dotted_parts(parsed):
            entry = self._entry_for(qualified_name(candidate, scope))
            if entry is not None:
                found.append((candidate, entry))
        return parsed, found

    def _string_entries(self, node: cst.SimpleString, scope: Scope) -> List[Entry]:
        return [entry for _candidate, entry in self._string_references(node, scope)[1]]

    def _rename_string(self, node: cst.SimpleString, scope: Scope, analysis: Analysis) -> None:
        parsed, found = self._string_references(node, scope)
        if parsed is None or not found:  # nothing is found in a string that does not parse
            return
        texts = {}
        needed: Union[Tuple[str, Optional[str]], bool, None]  # the import the name needs; True: it cannot be written
        for candidate, entry in found:
            try:
                text, needed = renamed_expression(candidate, scope, cast(str, entry.new), analysis)  # a moved symbol's entry names the new one
            except LookupError:
                text, needed = None, True
            if needed:  # the string would name something the file does not import
                self.report(node, self._manual_message(found[0][1], references.STRING), analysis=analysis, suggestion=short(entry.new))
                return
            texts[id(candidate)] = text

        class Replace(cst.CSTTransformer):
            def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> Any:  # a node, or the name's replacement
                text = texts.get(id(original))
                return cst.parse_expression(text) if text is not None else updated

        new_text = cst.Module([]).code_for_node(cast(cst.BaseExpression, parsed.visit(Replace())))  # an expression for an expression
        quote = node.quote
        prefix = node.prefix
        if quote in new_text or "\\" in new_text:
            self.report(node, self._manual_message(found[0][1], references.STRING), analysis=analysis)
            return
        new_string = cst.SimpleString(f"{prefix}{quote}{new_text}{quote}")
        olds = ", ".join(f"`{short(e.old)}`" for _c, e in found)

        def replace_string(updated: cst.SimpleString, new_string: cst.SimpleString = new_string) -> cst.SimpleString:
            return new_string

        self.report(
            node,
            f"{olds} moved: the annotation names `{new_text}`",
            analysis=analysis,
            changes=[Change(node, replace_string)],
            fix_title="Use the new name",
        )

    def _rewrite_import(self, node: cst.ImportFrom, scope: Scope, import_follows: Dict[str, bool], uses: Dict[str, List], analysis: Analysis) -> None:
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
                    self.report(node, self._manual_message(entry, references.IMPORT), analysis=analysis, suggestion=short(entry.new))
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

        def new_lines(updated_statement: cst.SimpleStatementLine) -> Union[cst.BaseStatement, cst.FlattenSentinel[cst.BaseStatement]]:
            lines: List[cst.BaseStatement] = []
            if staying:
                kept = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) if i == len(staying) - 1 else a for i, a in enumerate(staying)]
                first_import = cast(cst.ImportFrom, updated_statement.body[0]).with_changes(names=kept)  # the line holds the import alone (checked below)
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
        moved = ", ".join(f"`{short(e.old)}`" for _, e in moving)
        self.report(
            node,
            f"{moved} moved: import from `{'`, `'.join(destinations)}`",
            analysis=analysis,
            changes=[Change(statement, new_lines)],
            fix_title="Import from the new module",
        )


def _new_reference(
    reference: Reference, entry: Entry, analysis: Analysis, in_place: bool
) -> Optional[Tuple[Optional[cst.BaseExpression], List[Tuple[str, Optional[str]]]]]:
    """What replaces the reference, and the imports it needs. In place: the new symbol as the file
    can spell it there (None when it cannot). Through its import: the new last name where the
    import binds the old one under its own name; no replacement otherwise."""
    node, scope, _ = reference
    replacement: Optional[cst.BaseExpression] = None
    imports: List[Tuple[str, Optional[str]]] = []
    new = cast(str, entry.new)  # an entry whose references are renamed names the new symbol
    if in_place:
        try:
            text, needed = renamed_expression(node, scope, new, analysis)
        except LookupError:
            return None
        replacement = cst.parse_expression(text)
        if needed:
            imports.append(needed)
    elif entry.last != new.rsplit(".", 1)[-1] and isinstance(node, cst.Name):
        bound_as_alias = node.value != entry.last
        if not bound_as_alias:
            replacement = cst.Name(new.rsplit(".", 1)[-1])
    return replacement, imports


def _reference_changes(reference: Reference, replacement: Optional[cst.BaseExpression], keywords: Dict[str, str]) -> List[Change]:
    """The change to the reference's call (its callee replaced, its renamed keywords), or to the
    reference itself; none where there is nothing to replace (the import rewrite covers it)."""
    node, _, call = reference

    def rewrite_reference(updated: cst.BaseExpression, replacement: Optional[cst.BaseExpression] = replacement) -> cst.BaseExpression:
        if replacement is None:
            return updated
        return replacement.with_changes(lpar=updated.lpar, rpar=updated.rpar)

    def rewrite_call(updated: cst.Call, replacement: Optional[cst.BaseExpression] = replacement) -> cst.Call:
        new_args = [
            arg.with_changes(keyword=arg.keyword.with_changes(value=keywords[arg.keyword.value]))
            if arg.keyword is not None and arg.keyword.value in keywords
            else arg
            for arg in updated.args
        ]
        return updated.with_changes(func=rewrite_reference(updated.func), args=new_args)

    if call is not None and (keywords or replacement is not None):
        return [Change(call, rewrite_call)]
    if replacement is not None:
        return [Change(node, rewrite_reference)]
    return []


def renamed_expression(node: cst.CSTNode, scope: Scope, new: str, analysis: Optional[Analysis] = None) -> Tuple[str, Optional[Tuple[str, Optional[str]]]]:
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


def _walk_calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    """Every call under ``node`` (nested functions and classes included)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            yield current
        stack.extend(current.children)
