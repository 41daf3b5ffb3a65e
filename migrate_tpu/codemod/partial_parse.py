"""Which top-level statements of a module LibCST must parse, and a text without the others.

On a file with findings, LibCST's parse is most of what a migration costs, and much of
a real module is code no enabled rule can act on: helpers, settings classes. A top-level
``def`` or ``class`` is left out of the parse (*hidden*) when nothing the rules see can
depend on it:

- its text holds no evidence of an enabled rule (``prefilter.Evidence``): no rule finds
  anything in it;
- no parsed text names it, and it is not a name a fix may import (``names.IMPORT_ALIASES``):
  no lookup reaches it, no new import collides with it;
- it names nothing the parsed code binds: no module-level name, no ``def``/``class`` at
  any depth, no ``global``, no import a rule may rewrite (one whose line holds evidence).
  The analysis looks things up by name (``calls_by_name``: the callers of a function or of
  ``.method``; what a name is bound to): those answers read the same with the statement
  or without it. Other imports only name modules the rules leave alone; an import a fix
  stops using stays when a hidden statement names it (``api``).
The last two tests run again for each statement that joins the parsed part, until
none does. Statements with a ``global`` declaration or a backslash continuation stay
parsed, as does every file with ``:=`` (it may bind at module level from anywhere).

Each hidden statement becomes a placeholder of exactly its lines: ``if 1:`` holding one
string that carries a marker, indented as the statement's body was (LibCST takes its
default indent from the file's first indented block). Every parsed line keeps its number
and its text, so positions, the splice and the ``ast`` tree's lines hold as they are;
``restore`` puts the hidden statements back into the migrated text by their markers.
Whatever does not line up answers None, and the caller parses the whole file.
"""

from __future__ import annotations

import ast
import bisect
import keyword
import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from migrate_tpu.codemod.names import IMPORT_ALIASES
from migrate_tpu.codemod.prefilter import Evidence, Prefilter

_WORD = re.compile(r"[^\W\d]\w*")
# Names a def or class binds wherever it is, and names an import or ``global`` binds
# (a superset: every word of the statement's name list, ``as`` aliases included).
_DEFINED = re.compile(r"\b(?:def|class)\s+([^\W\d]\w*)")
_IMPORTED = re.compile(r"\bimport\s+(\([^)]*\)|(?:[^\n;#\\]|\\\n)*)")
_GLOBAL = re.compile(r"\b(?:global|nonlocal)\s+((?:[^\n;#\\]|\\\n)*)")
_KEYWORDS = frozenset(keyword.kwlist)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# The marker every placeholder's string begins with; a file holding it is parsed whole.
MARKER = "migrate-tpu:unparsed:"


@dataclass
class PartialText:
    """``text``: the module with each hidden statement replaced by a placeholder of the same
    lines; ``tree``: the ``ast`` tree of the original with a stand-in node for each
    placeholder (the same lines: what ``edits.statement_starts`` and ``lines`` read);
    ``hidden_words``: every word of the hidden statements (what a new name must avoid)."""

    text: str
    tree: ast.Module
    hidden_words: FrozenSet[str]
    # (placeholder text, the statement's own text), in order
    replaced: List[Tuple[str, str]]

    def restore(self, code: str) -> Optional[str]:
        """``code`` (migrated from ``text``) with every hidden statement put back; None when a
        placeholder is not found whole."""
        pieces: List[str] = []
        cursor = 0
        for index, (placeholder, original) in enumerate(self.replaced):
            marker = _marker(index)
            at = code.find(marker, cursor)
            if at < 0:
                return None
            start = at - placeholder.index(marker)
            if start < cursor or not code.startswith(placeholder, start):
                return None
            pieces.append(code[cursor:start])
            pieces.append(original)
            cursor = start + len(placeholder)
        pieces.append(code[cursor:])
        restored = "".join(pieces)
        return None if MARKER in restored else restored


def _marker(index: int) -> str:
    return f"{MARKER}{index}:"


_PREFILTERS: Dict[Tuple[type, ...], Optional[Prefilter]] = {}


def _evidence_of(rule_classes: Sequence[type]) -> Optional[Prefilter]:
    """All the evidence of ``rule_classes``; None when a rule declares none (it may fire anywhere)."""
    key = tuple(rule_classes)
    if key not in _PREFILTERS:
        evidence: List[Evidence] = []
        for rule_class in rule_classes:
            declared = getattr(rule_class, "evidence", ())
            if not declared:
                _PREFILTERS[key] = None
                break
            evidence.extend(declared)
        else:
            _PREFILTERS[key] = Prefilter(evidence)
    return _PREFILTERS[key]


def _line_starts(text, newline) -> List[int]:
    """``starts[n]``: the offset of line ``n`` (1-based) in ``text``; one more entry at its end."""
    starts = [0, 0]
    find = text.find
    at = find(newline)
    while at >= 0:
        starts.append(at + 1)
        at = find(newline, at + 1)
    starts.append(len(text))
    return starts


class _EvidenceLines:
    """The lines of a file that hold evidence of the rules (an occurrence spanning lines marks each)."""

    def __init__(self, source: str, evidence: Prefilter) -> None:
        data = source.encode("utf-8", "surrogatepass")
        starts = _line_starts(data, b"\n")
        marked: Set[int] = set()
        for start, end in evidence.places(data):
            first = bisect.bisect_right(starts, start) - 1
            last = bisect.bisect_right(starts, max(start, end - 1)) - 1
            marked.update(range(max(first, 1), last + 1))
        self.lines = sorted(marked)

    def any_in(self, first: int, last: int) -> bool:
        at = bisect.bisect_left(self.lines, first)
        return at < len(self.lines) and self.lines[at] <= last


def leave_out(source: str, tree: Optional[ast.AST], rule_classes: Sequence[type]) -> Optional[PartialText]:
    """The text LibCST need parse for ``rule_classes`` to find what they find in ``source``
    (``tree``: its ``ast`` tree), or None when every statement must be parsed."""
    if not isinstance(tree, ast.Module) or "\r" in source or ":=" in source or MARKER in source:
        return None
    body = tree.body
    if not any(type(statement) in _DEFINITIONS for statement in body):
        return None
    prefilter = _evidence_of(rule_classes)
    if prefilter is None:
        return None
    evidence = _EvidenceLines(source, prefilter)
    line_starts = _line_starts(source, "\n")

    # Each top-level statement's lines, and whether it may be hidden.
    spans: List[Tuple[int, int]] = []
    candidates: Dict[int, str] = {}  # index -> the statement's text
    for index, statement in enumerate(body):
        decorators = getattr(statement, "decorator_list", None)
        first = min(d.lineno for d in decorators) if decorators else statement.lineno
        last = statement.end_lineno or statement.lineno
        spans.append((first, last))
        if type(statement) not in _DEFINITIONS or statement.name in IMPORT_ALIASES or evidence.any_in(first, last):  # type: ignore[attr-defined]
            continue
        text = source[line_starts[first] : line_starts[last + 1]]
        if "\\\n" not in text and not _GLOBAL.search(text):
            candidates[index] = text
    if not candidates:
        return None

    read: Set[str] = set()  # every word the parsed part holds
    bound: Set[str] = set()  # every name the parsed part binds where the analysis looks it up
    for index, statement in enumerate(body):
        if index in candidates:
            continue
        first, last = spans[index]
        text = source[line_starts[first] : line_starts[last + 1]]
        read.update(_WORD.findall(text))
        _bind_by_text(text, first, evidence, bound)
        if type(statement) in _DEFINITIONS:
            bound.add(statement.name)  # type: ignore[attr-defined]
        elif not isinstance(statement, (ast.Import, ast.ImportFrom)) or evidence.any_in(first, last):
            _bind_at_module_level(statement, bound)
    bound -= _KEYWORDS
    words_of = {index: set(_WORD.findall(text)) for index, text in candidates.items()}
    changed = True
    while changed:
        changed = False
        for index in list(candidates):
            statement = body[index]
            words = words_of[index]
            if statement.name in read or not words.isdisjoint(bound):  # type: ignore[attr-defined]
                text = candidates.pop(index)
                read |= words
                bound.add(statement.name)  # type: ignore[attr-defined]
                _bind_by_text(text, spans[index][0], evidence, bound)
                changed = True
    if not candidates:
        return None
    return _placeholders(source, body, spans, candidates, line_starts, words_of)


def _bind_by_text(text: str, first: int, evidence: _EvidenceLines, bound: Set[str]) -> None:
    """Names ``text`` (from line ``first``) binds that a lookup by name may reach from
    anywhere: defs and classes at any depth, ``global`` names, and the names of imports a
    rule may rewrite (an import on lines holding evidence); a superset, read from the text."""
    bound.update(_DEFINED.findall(text))
    for match in _IMPORTED.finditer(text):
        start = first + text.count("\n", 0, match.start())
        if evidence.any_in(start, start + match.group(0).count("\n")):
            bound.update(_WORD.findall(match.group(1)))
    for names in _GLOBAL.findall(text):
        bound.update(_WORD.findall(names))


def _bind_at_module_level(statement: ast.stmt, bound: Set[str]) -> None:
    """Names a top-level statement other than a def or class binds in the module: its
    targets, and those of the statements in its blocks. Expressions bind nothing there (a
    comprehension's and a lambda's names are their own; ``:=`` files are parsed whole)."""
    statements = [statement]
    while statements:
        node = statements.pop()
        kind = type(node)
        if kind is ast.Assign:
            for target in node.targets:  # type: ignore[attr-defined]
                _bind_target(target, bound)
        elif kind is ast.AugAssign or kind is ast.AnnAssign:
            _bind_target(node.target, bound)  # type: ignore[attr-defined]
        elif kind is ast.Import or kind is ast.ImportFrom:
            for alias in node.names:  # type: ignore[attr-defined]
                bound.add(alias.asname or alias.name.partition(".")[0])
        elif kind in _DEFINITIONS:
            bound.add(node.name)  # type: ignore[attr-defined]
        elif kind is ast.Global or kind is ast.Nonlocal:
            bound.update(node.names)  # type: ignore[attr-defined]
        elif kind.__name__ == "TypeAlias":  # ``type X = ...`` (Python 3.12)
            _bind_target(node.name, bound)  # type: ignore[attr-defined]
        elif kind is ast.Delete:
            for target in node.targets:  # type: ignore[attr-defined]
                _bind_target(target, bound)
        else:
            if kind is ast.For or kind is ast.AsyncFor:
                _bind_target(node.target, bound)  # type: ignore[attr-defined]
            elif kind is ast.With or kind is ast.AsyncWith:
                for item in node.items:  # type: ignore[attr-defined]
                    if item.optional_vars is not None:
                        _bind_target(item.optional_vars, bound)
            elif kind.__name__ == "Match":
                for sub in ast.walk(node):  # capture patterns bind at any depth
                    name = getattr(sub, "name", None) or getattr(sub, "rest", None)
                    if isinstance(name, str):
                        bound.add(name)
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(node, field, ()):
                    if type(child) is ast.ExceptHandler:
                        if child.name:
                            bound.add(child.name)
                        statements.extend(child.body)
                    elif isinstance(child, ast.stmt):
                        statements.append(child)
                    else:  # a match case
                        statements.extend(getattr(child, "body", ()))


def _bind_target(target: ast.expr, bound: Set[str]) -> None:
    if type(target) is ast.Name:
        bound.add(target.id)
    elif type(target) is ast.Starred:
        _bind_target(target.value, bound)
    elif type(target) is ast.Tuple or type(target) is ast.List:
        for element in target.elts:
            _bind_target(element, bound)


def _placeholders(
    source: str,
    body: List[ast.stmt],
    spans: List[Tuple[int, int]],
    hidden: Dict[int, str],
    line_starts: List[int],
    words_of: Dict[int, Set[str]],
) -> Optional[PartialText]:
    pieces: List[str] = []
    replaced: List[Tuple[str, str]] = []
    layout: List[ast.stmt] = []
    cursor = 0
    for index, statement in enumerate(body):
        if index not in hidden:
            layout.append(statement)
            continue
        first, last = spans[index]
        original = hidden[index]
        placeholder = _placeholder(source, statement, first, last, line_starts, _marker(len(replaced)))
        if placeholder is None:
            return None
        start = line_starts[first]
        pieces.append(source[cursor:start])
        pieces.append(placeholder)
        cursor = start + len(original)
        replaced.append((placeholder, original))
        stand_in = ast.If(test=ast.Constant(1), body=[ast.Pass()], orelse=[])
        stand_in.lineno, stand_in.col_offset = first, 0
        stand_in.end_lineno, stand_in.end_col_offset = last, 0
        layout.append(stand_in)
    pieces.append(source[cursor:])
    hidden_words: Set[str] = set()
    for index in hidden:
        hidden_words |= words_of[index]
    return PartialText("".join(pieces), ast.Module(body=layout, type_ignores=[]), frozenset(hidden_words), replaced)


def _placeholder(source: str, statement: ast.stmt, first: int, last: int, line_starts: List[int], marker: str) -> Optional[str]:
    """``if 1:`` and a string holding ``marker``, on exactly the lines ``first``..``last``;
    the string on a line of its own, indented as the statement's body, when the body is."""
    ending = "\n" if source.endswith("\n", 0, line_starts[last + 1]) else ""
    inner = statement.body[0]  # type: ignore[attr-defined]
    inner_line = min([d.lineno for d in getattr(inner, "decorator_list", ())] + [inner.lineno])
    line = source[line_starts[inner_line] : line_starts[inner_line + 1]]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    if inner_line > first and indent and line.lstrip(" \t")[:1] not in ("", "\n", "#"):
        if inner_line > last:
            return None
        # The body's first statement begins its line: the file's first indented block may be here.
        if len(indent) != getattr(inner, "col_offset", -1) and not getattr(inner, "decorator_list", None):
            return None
        lines = last - first  # the string takes the lines after ``if 1:``
        return "if 1:\n" + indent + '"""' + marker + "\n" * (lines - 1) + '"""' + ending
    return 'if 1: """' + marker + "\n" * (last - first) + '"""' + ending
