"""Apply the chosen changes to a module, touching only the paths that lead to them.

A change names a node of the original tree. The transformer descends only into
nodes on the way to a changed node, so the cost is the length of those paths,
not the size of the file. Imports the changes need are added once, after the
module's leading imports.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union, cast

import libcst as cst

from migrate_tpu.codemod.analysis import Analysis
from migrate_tpu.codemod.lines import leading_lines, line_offsets
from migrate_tpu.codemod.rule import Change

if TYPE_CHECKING:  # annotations only: typing has TypeGuard from Python 3.10
    from typing_extensions import TypeGuard


class _PathTransformer(cst.CSTTransformer):
    def __init__(self, rewrites: Dict[int, List], on_path: Optional[Set[int]]) -> None:
        super().__init__()
        self.rewrites = rewrites
        self.on_path = on_path

    def on_visit(self, node: cst.CSTNode) -> bool:
        return self.on_path is None or id(node) in self.on_path

    def on_leave(self, original_node, updated_node):
        for rewrite in self.rewrites.get(id(original_node), ()):
            updated_node = rewrite(updated_node)
        return updated_node


def apply_changes(module: cst.Module, changes: Sequence[Change], analysis: Analysis) -> cst.Module:
    rewrites: Dict[int, List] = {}
    seen_keys: Set[Tuple[object, ...]] = set()
    on_path: Optional[Set[int]] = set()
    for change in changes:
        if change.key is not None:
            if change.key in seen_keys:
                continue
            seen_keys.add(change.key)
        rewrites.setdefault(id(change.node), []).append(change.rewrite)
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
    return module.visit(_PathTransformer(rewrites, on_path))


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
                from migrate_tpu.codemod.analysis import dotted_name

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
        pattern = re.compile(r"(?<![\w.])" + re.escape(name) + r"\b")
        if nested is None:
            nested = []
            if _INDENTED_IMPORT.search(code):
                _nested_import_lines(body, nested)
        found = [(s, True) for s in body if _is_import_line(s)] + [(s, False) for s in nested]
        binding = []
        for statement, top in found:
            matches = [alias for alias, bound in _bound_names(statement.body[0]) if bound == name]
            if matches:
                binding.append((statement, top, matches))
        if not binding:
            continue
        own = sum(len(pattern.findall(module.code_for_node(statement))) for statement, _, _ in binding)
        if len(pattern.findall(code)) > own:
            continue
        for statement, top, matches in binding:
            if not top:
                nested_drop.setdefault(id(statement), []).extend(matches)
                changed = True
                continue
            index = next(i for i, s in enumerate(body) if s is statement)
            small = cast("Union[cst.Import, cst.ImportFrom]", statement.body[0])  # ``_is_import_line``
            remaining = [a for a in cast("Sequence[cst.ImportAlias]", small.names) if a not in matches]  # ``_bound_names`` matches nothing in a ``*`` import
            if remaining:
                remaining[-1] = remaining[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                new_small = small.with_changes(names=remaining)
                if isinstance(small, cst.ImportFrom) and small.lpar is not None and len(remaining) == 1:
                    new_small = new_small.with_changes(lpar=None, rpar=None)
                body[index] = statement.with_changes(body=[new_small])
            else:
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
    position = {id(statement): index for index, statement in enumerate(old.body)}
    kept = [position.get(id(statement)) for statement in new.body]
    previous = -1
    for index in kept:
        if index is not None:
            if index <= previous:
                return None
            previous = index
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
