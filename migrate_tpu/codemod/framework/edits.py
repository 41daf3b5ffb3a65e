"""Apply the chosen changes to a module, touching only the paths that lead to them.

A change names a node of the original tree. The transformer descends only into
nodes on the way to a changed node, so the cost is the length of those paths,
not the size of the file. Imports the changes need are added once, after the
module's leading imports. A call a change made longer than the file's lines has
its arguments put one to a line, as its own layout or the file's does (``wrap_call``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union, cast

import libcst as cst
from libcst._nodes.internal import CodegenState

from migrate_tpu.codemod.analysis.walk import Analysis
from migrate_tpu.codemod.foundation.helpers import after_argument, followed_by, has_comment
from migrate_tpu.codemod.foundation.lines import leading_lines, line_offsets
from migrate_tpu.codemod.foundation.positions import Span
from migrate_tpu.codemod.framework.rule import Change

if TYPE_CHECKING:  # annotations only: typing has TypeGuard from Python 3.10
    from typing_extensions import TypeGuard


# A file of short lines still takes a fixed line as long as PEP 8 allows.
SHORTEST_LIMIT = 79
# A line that opens a call and goes on on the next: the file writes hanging indents.
_HANGING_OPEN = re.compile(r"\([ \t]*(?:#[^\n]*)?\r?$", re.MULTILINE)


@dataclass(frozen=True)
class Layout:
    """What wrapping a fixed call reads of the source the module was parsed from."""

    lines: Sequence[str]  # the source's lines, without their ends
    spans: Mapping[int, Span]  # where each node a change may wrap is in them (``positions.spans``), by id
    limit: int  # the longest line a fix may leave: the file's longest, or ``SHORTEST_LIMIT``
    hanging: bool  # whether the file opens a call at a line's end (else arguments follow the ``(``)

    @classmethod
    def of(cls, source: str, spans: Mapping[int, Span], other_text: str = "") -> Optional["Layout"]:
        """The layout of ``source``; ``other_text``: the file's text left out of it (``partial_parse``).
        None for lone carriage returns (the spans count lines by ``\\n``)."""
        if "\r" in source.replace("\r\n", ""):
            return None
        lines = [line[:-1] if line.endswith("\r") else line for line in source.split("\n")]
        longest = max(len(line.rstrip("\r")) for text in (lines, other_text.split("\n")) for line in text)
        hanging = _HANGING_OPEN.search(source) is not None or _HANGING_OPEN.search(other_text) is not None
        return cls(lines, spans, max(longest, SHORTEST_LIMIT), hanging)


@dataclass(frozen=True)
class Form:
    """How the lines around a call are written: what ``wrap_call`` keeps."""

    indents: Tuple[str, ...]  # the indentation of the blocks the call is in
    unit: str  # one level of indentation (the module's)
    newline: str
    limit: int
    hanging: bool


def _code(node: cst.CSTNode, form: Form) -> str:
    """``node``'s text where it stands: the lines that continue in its blocks' indentation."""
    state = CodegenState(default_indent=form.unit, default_newline=form.newline)
    state.indent_tokens.extend(form.indents)
    node._codegen(state)
    return "".join(state.tokens)


def _widest(prefix: str, text: str, suffix: str) -> int:
    return max(len(line.rstrip("\r")) for line in (prefix + text + suffix).split("\n"))


def _continuation(whitespace: cst.ParenthesizedWhitespace, form: Form) -> str:
    """What the line a parenthesized line break leads to begins with."""
    return ("".join(form.indents) if whitespace.indent else "") + whitespace.last_line.value


def _line_break(indentation: str, before: Optional[cst.BaseParenthesizableWhitespace] = None) -> cst.ParenthesizedWhitespace:
    """A line break to a line beginning with ``indentation``; the comments of ``before``
    (the whitespace it replaces) kept: at the end of the line and on lines of their own."""
    if isinstance(before, cst.ParenthesizedWhitespace):
        return before.with_changes(indent=False, last_line=cst.SimpleWhitespace(indentation))
    return cst.ParenthesizedWhitespace(last_line=cst.SimpleWhitespace(indentation))


def wrap_call(call: cst.Call, prefix: str, suffix: str, form: Form, may_hang: bool = True) -> cst.Call:
    """``call`` with its arguments one to a line when a line of it is longer than ``form.limit``.

    ``prefix`` is the text before the call on its first line, ``suffix`` the text after it on
    its last. The call's own layout decides first: a hanging indent where its first argument
    begins a line (indented as that line is), else the arguments aligned under the ``(``; a
    call written on one line follows the file (a hanging indent one level in where the file
    writes them, else aligned). Where that leaves a line too long, the other way is taken
    if it makes the call narrower. A ``)`` on a line of its own stays there; comments stay
    at the end of their lines. A call given as an argument whose line is still too long is
    wrapped in turn, aligned only when its arguments are (``may_hang`` False: a hanging
    indent under aligned arguments reads as a block of its own). The call stays as it is
    when that leaves it no narrower.
    """
    widest = _widest(prefix, _code(call, form), suffix)
    if widest <= form.limit or not call.args:
        return call
    head = "".join(_code(paren, form) for paren in call.lpar) + _code(call.func, form) + _code(call.whitespace_after_func, form) + "("
    closer = ")" + "".join(_code(paren, form) for paren in call.rpar)  # what ends the call after its arguments
    if "\n" in head or "\n" in closer:
        return call
    indentation = prefix[: len(prefix) - len(prefix.lstrip(" \t"))]
    lead = call.whitespace_before_args
    hanging = (True, _continuation(lead, form) if isinstance(lead, cst.ParenthesizedWhitespace) else indentation + form.unit)
    aligned = (False, indentation + " " * (len(prefix) + len(head) - len(indentation)))
    if isinstance(lead, cst.ParenthesizedWhitespace):
        choices = [hanging] if has_comment(lead) else [hanging, aligned]  # a comment after the ``(`` ends its line
    elif not may_hang:
        choices = [aligned]
    elif any(isinstance(after_argument(arg), cst.ParenthesizedWhitespace) for arg in call.args[:-1]):
        choices = [aligned, hanging]
    else:
        choices = [hanging, aligned] if form.hanging else [aligned, hanging]
    best: Optional[Tuple[int, cst.Call]] = None
    for hangs, continuation in choices:
        wrapped = _one_per_line(call, hangs, continuation, prefix + head, closer + suffix, form)
        width = _widest(prefix, _code(wrapped, form), suffix)
        if best is None or width < best[0]:
            best = (width, wrapped)
        if width <= form.limit:
            break
    return best[1] if best is not None and best[0] < widest else call


def _one_per_line(call: cst.Call, hangs: bool, continuation: str, opening: str, closing: str, form: Form) -> cst.Call:
    """``call``'s arguments each on a line of its own beginning with ``continuation``; the first
    one after the ``(`` (``opening``: the line's text up to it) unless ``hangs``; the ``)``
    after the last one unless it was on a line of its own (``closing``: the line's text from it)."""
    args = []
    count = len(call.args)
    for index, arg in enumerate(call.args):
        after = after_argument(arg)
        if index < count - 1:
            arg = followed_by(arg, _line_break(continuation, after), True)
            arg = arg.with_changes(comma=cast(cst.Comma, arg.comma).with_changes(whitespace_before=cst.SimpleWhitespace("")))
            tail = ","
        else:
            closed = isinstance(after, cst.ParenthesizedWhitespace)  # the ``)`` on a line of its own
            arg = followed_by(arg, after if closed else cst.SimpleWhitespace(""), isinstance(arg.comma, cst.Comma))
            tail = ("," if isinstance(arg.comma, cst.Comma) else "") + ("" if closed else closing)
        if isinstance(arg.value, cst.Call):
            start = opening if index == 0 and not hangs else continuation
            bare = _code(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=cst.SimpleWhitespace("")), form)
            before = start + bare[: len(bare) - len(_code(arg.value, form))]
            arg = arg.with_changes(value=wrap_call(arg.value, before, tail, form, may_hang=hangs))
        args.append(arg)
    lead = _line_break(continuation, call.whitespace_before_args) if hangs else cst.SimpleWhitespace("")
    return call.with_changes(args=args, whitespace_before_args=lead)


class _PathTransformer(cst.CSTTransformer):
    def __init__(
        self,
        rewrites: Dict[int, List],
        on_path: Optional[Set[int]],
        module: cst.Module,
        wraps: Set[int],
        layout: Optional[Layout],
    ) -> None:
        super().__init__()
        self.rewrites = rewrites
        self.on_path = on_path
        self.module = module
        self.wraps = wraps if layout is not None else set()
        self.layout = layout
        self.blocks: List[Tuple[cst.CSTNode, str]] = []  # the indented blocks the walk is in

    def on_visit(self, node: cst.CSTNode) -> bool:
        visit = self.on_path is None or id(node) in self.on_path
        if visit and self.wraps and isinstance(node, cst.IndentedBlock):
            self.blocks.append((node, self.module.default_indent if node.indent is None else node.indent))
        return visit

    def on_leave(self, original_node, updated_node):
        if self.blocks and self.blocks[-1][0] is original_node:
            self.blocks.pop()
        for rewrite in self.rewrites.get(id(original_node), ()):
            updated_node = rewrite(updated_node)
        if id(original_node) in self.wraps and isinstance(updated_node, cst.Call):
            updated_node = self._wrap(original_node, updated_node)
        return updated_node

    def _wrap(self, original: cst.CSTNode, updated: cst.Call) -> cst.Call:
        layout = cast(Layout, self.layout)  # ``wraps`` is empty without one
        span = layout.spans.get(id(original))
        if span is None or not 0 < span[0] <= span[2] <= len(layout.lines):
            return updated
        form = Form(
            tuple(indent for _, indent in self.blocks), self.module.default_indent, self.module.default_newline, layout.limit, layout.hanging
        )
        return wrap_call(updated, layout.lines[span[0] - 1][: span[1]], layout.lines[span[2] - 1][span[3] :], form)


def apply_changes(module: cst.Module, changes: Sequence[Change], analysis: Analysis, layout: Optional[Layout] = None) -> cst.Module:
    """``module`` with ``changes`` made; ``layout``: the source's, for the changes that may wrap
    the call they rewrite (``Change.wrap``; without it, none is wrapped)."""
    rewrites: Dict[int, List] = {}
    wraps: Set[int] = set()
    seen_keys: Set[Tuple[object, ...]] = set()
    on_path: Optional[Set[int]] = set()
    for change in changes:
        if change.key is not None:
            if change.key in seen_keys:
                continue
            seen_keys.add(change.key)
        rewrites.setdefault(id(change.node), []).append(change.rewrite)
        if change.wrap:
            wraps.add(id(change.node))
        site = analysis.site(change.node)
        if site is None or on_path is None:
            on_path = None  # not located during the walk: fall back to a full walk
        else:
            on_path.update(id(node) for node in site.path)
            on_path.add(id(change.node))
    if not rewrites:
        return module
    if on_path is not None:
        on_path.add(id(module))
    return module.visit(_PathTransformer(rewrites, on_path, module, wraps, layout))


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_import(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def add_imports(module: cst.Module, imports: Iterable[Tuple[str, Optional[str]]]) -> cst.Module:
    """Add ``import module [as alias]`` lines after the leading imports."""
    wanted = []
    for module_name, alias in imports:
        if (module_name, alias) not in wanted:
            wanted.append((module_name, alias))
    if not wanted:
        return module
    body = list(module.body)
    position = 0
    index = 0
    if body and _is_docstring(body[0]):
        position = index = 1
    while index < len(body) and _is_import(body[index]):
        index += 1
        position = index
    new_lines = []
    for module_name, alias in wanted:
        text = f"import {module_name}" + (f" as {alias}" if alias else "")
        new_lines.append(cst.parse_statement(text + module.default_newline, config=module.config_for_parsing))
    if position == 0 and body:
        # Keep the file's leading comments (licence, shebang, coding line) first.
        first = body[0]
        new_lines[0] = new_lines[0].with_changes(leading_lines=first.leading_lines)
        body[0] = first.with_changes(leading_lines=[])
    elif position < len(body) and position > 0 and not _is_import(body[position - 1]):
        # After a docstring: keep one blank line between it and the imports.
        new_lines[0] = new_lines[0].with_changes(leading_lines=[cst.EmptyLine()])
    body[position:position] = new_lines
    return module.with_changes(body=body)


def _bound_names(small: cst.CSTNode):
    if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
        for alias in small.names:
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                yield alias, alias.asname.name.value
            else:
                from migrate_tpu.codemod.analysis.walk import dotted_name

                full = dotted_name(alias.name) or ""
                yield alias, full if isinstance(small, cst.ImportFrom) else full.split(".")[0]


def _is_import_line(statement: cst.CSTNode) -> TypeGuard[cst.SimpleStatementLine]:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], (cst.Import, cst.ImportFrom))
    )


def _suites(statement: cst.CSTNode):
    """The blocks of a compound statement: its body, ``elif``/``else``, handlers, ``finally``, cases."""
    body = getattr(statement, "body", None)
    if body is not None:
        yield body
    for handler in getattr(statement, "handlers", ()):
        yield handler.body
    orelse = getattr(statement, "orelse", None)
    while orelse is not None:  # an ``elif`` is an ``If`` with its own ``orelse``
        yield orelse.body
        orelse = getattr(orelse, "orelse", None)
    final = getattr(statement, "finalbody", None)
    if final is not None:
        yield final.body
    for case in getattr(statement, "cases", ()):
        yield case.body


def _nested_import_lines(body: Sequence[cst.CSTNode], out: List[cst.SimpleStatementLine]) -> None:
    """Every one-import statement line inside the compound statements of ``body``, at any depth."""
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            continue
        for suite in _suites(statement):
            if isinstance(suite, cst.IndentedBlock):
                out.extend(s for s in suite.body if _is_import_line(s))
                _nested_import_lines(suite.body, out)


# An import statement that is not at column 0: only then is the nested walk worth its cost.
_INDENTED_IMPORT = re.compile(r"^[ \t]+(?:from|import)\b", re.MULTILINE)


class _DropImports(cst.CSTTransformer):
    """Removes aliases from nested import statements, as the top-level pass does for the module's.

    Comments above a removed statement move to the next statement of its block;
    a block left empty gets a ``pass`` (with those comments).
    """

    def __init__(self, drop: Dict[int, List[cst.ImportAlias]]) -> None:
        super().__init__()
        self.drop = drop

    def leave_IndentedBlock(self, original_node, updated_node):
        if not any(id(statement) in self.drop for statement in original_node.body):
            return updated_node
        body: List[cst.BaseStatement] = []
        carried: List[cst.EmptyLine] = []
        for original, updated in zip(original_node.body, updated_node.body):
            matches = self.drop.get(id(original))
            if matches is not None:
                small = original.body[0]
                remaining = [a for a in small.names if not any(a is m for m in matches)]
                if not remaining:
                    if any(line.comment is not None for line in original.leading_lines):
                        carried.extend(original.leading_lines)
                    continue
                remaining[-1] = remaining[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                new_small = small.with_changes(names=remaining)
                if isinstance(small, cst.ImportFrom) and small.lpar is not None and len(remaining) == 1:
                    new_small = new_small.with_changes(lpar=None, rpar=None)
                updated = updated.with_changes(body=[new_small])
            if carried:
                updated = updated.with_changes(leading_lines=carried + list(updated.leading_lines))
                carried = []
            body.append(updated)
        if not body:
            body.append(cst.SimpleStatementLine([cst.Pass()], leading_lines=carried or original_node.body[0].leading_lines))
        elif carried:
            footer = updated_node.footer if hasattr(updated_node, "footer") else ()
            return updated_node.with_changes(body=body, footer=list(carried) + list(footer))
        return updated_node.with_changes(body=body)


# An import statement found for a name: the statement, whether it is at the top level, and the aliases that bind the name.
_Binding = Tuple[cst.SimpleStatementLine, bool, List[cst.ImportAlias]]


def _unused_bindings(module: cst.Module, code: str, name: str, found: Sequence[Tuple[cst.SimpleStatementLine, bool]]) -> List[_Binding]:
    """The statements of ``found`` that import ``name``, each with its aliases that bind it; none
    when ``code`` mentions ``name`` anywhere but in them (every import of it must then be unused)."""
    binding: List[_Binding] = []
    for statement, top in found:
        matches = [alias for alias, bound in _bound_names(statement.body[0]) if bound == name]
        if matches:
            binding.append((statement, top, matches))
    if not binding:
        return []
    pattern = re.compile(r"(?<![\w.])" + re.escape(name) + r"\b")
    own = sum(len(pattern.findall(module.code_for_node(statement))) for statement, _, _ in binding)
    return [] if len(pattern.findall(code)) > own else binding


def _drop_top_level(
    module: cst.Module, body: List[Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]], statement: cst.SimpleStatementLine, drop: List[cst.ImportAlias]
) -> cst.Module:
    """Removes the aliases ``drop`` from the top-level import ``statement`` of ``body`` (edited in
    place), or the whole statement when nothing is left of it; returns ``module``, whose footer
    takes the statement's comments where it was the last statement."""
    index = next(i for i, s in enumerate(body) if s is statement)
    small = cast("Union[cst.Import, cst.ImportFrom]", statement.body[0])  # ``_is_import_line``
    remaining = [a for a in cast("Sequence[cst.ImportAlias]", small.names) if a not in drop]  # ``_bound_names`` matches nothing in a ``*`` import
    if remaining:
        remaining[-1] = remaining[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        new_small = small.with_changes(names=remaining)
        if isinstance(small, cst.ImportFrom) and small.lpar is not None and len(remaining) == 1:
            new_small = new_small.with_changes(lpar=None, rpar=None)
        body[index] = statement.with_changes(body=[new_small])
        return module
    following = index + 1
    if any(line.comment is not None for line in statement.leading_lines):
        # The comments above the import stay where they were.
        if following < len(body):
            body[following] = body[following].with_changes(
                leading_lines=list(statement.leading_lines) + list(body[following].leading_lines)
            )
        else:
            module = module.with_changes(footer=list(statement.leading_lines) + list(module.footer))
    del body[index]
    return module


def drop_unused_imports(module: cst.Module, code: str, names: Iterable[str]) -> Optional[cst.Module]:
    """Remove imports of ``names`` that ``code`` no longer mentions elsewhere.

    Only names whose uses the changes replaced are candidates, so imports the
    user left unused on purpose stay. An import nested in a function, class or
    ``if`` block goes too when no other text of the module mentions the name
    (every import of the name, at any depth, must then be unused). Returns None
    when nothing is removed.
    """
    body = list(module.body)
    changed = False
    nested_drop: Dict[int, List[cst.ImportAlias]] = {}
    nested: Optional[List[cst.SimpleStatementLine]] = None  # found once: the loop below never edits them
    for name in dict.fromkeys(names):
        if nested is None:
            nested = []
            if _INDENTED_IMPORT.search(code):
                _nested_import_lines(body, nested)
        found = [(s, True) for s in body if _is_import_line(s)] + [(s, False) for s in nested]
        for statement, top, matches in _unused_bindings(module, code, name, found):
            if top:
                module = _drop_top_level(module, body, statement, matches)
            else:
                nested_drop.setdefault(id(statement), []).extend(matches)
            changed = True
    if not changed:
        return None
    module = module.with_changes(body=body)
    if nested_drop:
        module = module.visit(_DropImports(nested_drop))
    return module


def _empty_line(line: cst.EmptyLine, default_newline: str) -> str:
    """A top-level blank or comment line as LibCST writes it (its indentation is empty
    at the top level), without a code generation state per line; the caller checks the
    result against the source."""
    comment = line.comment.value if line.comment is not None else ""
    newline = line.newline.value if line.newline.value is not None else default_newline
    return line.whitespace.value + comment + newline


def statement_starts(module: cst.Module, source: str, tree: Optional[ast.Module] = None) -> Optional[List[int]]:
    """Offset in ``source`` where each top-level statement's text begins, and where the footer does.

    The line of each statement's first token comes from the standard library's
    parser (about ten times cheaper than a LibCST code generation); the statement's
    text begins its leading comment and blank lines earlier. Each start is checked:
    the first token sits at column 0 of that line and the text just before it is
    exactly the statement's leading lines as LibCST generates them. None when
    anything does not line up: the caller then generates the whole module.
    ``tree``: the standard library's tree of ``source``, when the caller has it.
    """
    if tree is None:
        try:
            tree = cast(ast.Module, compile(source, "<source>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True))  # "exec" gives a Module
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
    line_starts = line_offsets(source)
    nodes = tree.body
    newline = module.default_newline
    starts = []
    index = 0
    for statement in module.body:
        if index >= len(nodes):
            return None
        node = nodes[index]
        leading = leading_lines(statement)
        decorators = getattr(statement, "decorators", ())
        if decorators:
            if not getattr(node, "decorator_list", None):
                return None
            line = cast("Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]", node).decorator_list[0].lineno  # only these have decorators
        else:
            if node.col_offset != 0:
                return None
            line = node.lineno
        if line >= len(line_starts) - 1:  # (the last entry is the text's end)
            return None
        first_token = line_starts[line]
        if decorators and not source.startswith("@", first_token):
            return None
        text = "".join(_empty_line(empty, newline) for empty in leading)
        start = first_token - len(text)
        if start < 0 or not source.startswith(text, start):
            return None
        starts.append(start)
        index += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    if index != len(nodes):
        return None
    footer = "".join(_empty_line(empty, newline) for empty in module.footer)
    end = len(source) - len(footer)
    if not source.endswith(footer) or any(a > b for a, b in zip(starts, starts[1:] + [end])):
        return None
    return starts + [end]


def _statement_code(module: cst.Module, statement: cst.CSTNode, texts: Optional[Dict[int, Tuple[cst.CSTNode, str]]]) -> str:
    if texts is None:
        return module.code_for_node(statement)
    known = texts.get(id(statement))
    if known is not None and known[0] is statement:
        return known[1]
    text = module.code_for_node(statement)
    texts[id(statement)] = (statement, text)
    return text


def _kept_positions(old: cst.Module, new: cst.Module) -> Optional[List[Optional[int]]]:
    """The index in ``old`` of each statement of ``new`` (None for a new one); None when the kept ones are not in their old order."""
    position = {id(statement): index for index, statement in enumerate(old.body)}
    kept = [position.get(id(statement)) for statement in new.body]
    indices = [index for index in kept if index is not None]
    return kept if all(a < b for a, b in zip(indices, indices[1:])) else None


def splice_code(
    old: cst.Module,
    new: cst.Module,
    source: str,
    starts: Optional[List[int]] = None,
    generated: Optional[List[str]] = None,
    texts: Optional[Dict[int, Tuple[cst.CSTNode, str]]] = None,
) -> Optional[str]:
    """``new.code``, generating only the top-level statements that changed.

    ``new`` must come from ``old`` (parsed from ``source``) by replacing, inserting
    or removing top-level statements; every statement it shares with ``old`` is the
    same object, and is copied from ``source``. ``starts``: what
    ``statement_starts(old, source)`` returned, when the caller has it. Returns
    None where this does not apply (the caller generates the whole module).
    ``generated`` receives the text of each statement generated; ``texts`` keeps
    them by statement between calls (a statement is immutable, and is kept with its
    text so that its id cannot be reused).
    """
    if (
        list(new.header) != list(old.header)  # CST nodes compare by identity
        or list(new.footer) != list(old.footer)
        or not old.has_trailing_newline
        or not new.has_trailing_newline
        or new.default_newline != old.default_newline
        or new.default_indent != old.default_indent
        or "\r" in source.replace("\r\n", "")  # lone carriage returns: lines counted differently
    ):
        return None
    kept = _kept_positions(old, new)
    if kept is None:
        return None
    if starts is None:
        starts = statement_starts(old, source)
    if starts is None:
        return None
    # Each run of new statements replaces the old ones between two kept statements.
    pieces: List[str] = []
    copied_to = 0
    inserted: List[cst.CSTNode] = []
    next_old = 0
    for statement, index in list(zip(new.body, kept)) + [(None, len(old.body))]:
        if index is None:
            inserted.append(cast(cst.CSTNode, statement))  # only the closing pair lacks a statement, and it has an index
            continue
        if inserted or index > next_old:
            pieces.append(source[copied_to : starts[next_old]])
            made = [_statement_code(new, s, texts) for s in inserted]
            pieces.extend(made)
            if generated is not None:
                generated.extend(made)
            copied_to = starts[index]
            inserted = []
        next_old = index + 1
    pieces.append(source[copied_to:])
    return "".join(pieces)
