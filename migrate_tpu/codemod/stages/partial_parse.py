"""Which top-level statements of a module LibCST must parse, and a text without the others.

On a file with findings, LibCST's parse is most of what a migration costs, and much of
a real module is code no enabled rule can act on: helpers, settings classes. A top-level
``def`` or ``class`` is left out of the parse (*hidden*) when nothing the rules see can
depend on it:

- its text holds no evidence of an enabled rule (``prefilter.Evidence``): no rule finds
  anything in it. Evidence marked ``code_only`` (``.run(``, ``lr=``) inside one of its
  string literals does not count: the rule never reads it there;
- no parsed text names it, and it is not a name a fix may import (``names.IMPORT_ALIASES``):
  no lookup reaches it, no new import collides with it;
- it names nothing the parsed code binds: no module-level name, no ``def``/``class`` at
  any depth, no ``global``, no import a rule may rewrite (one whose line holds evidence).
  The analysis looks things up by name (``calls_by_name``: the callers of a function or of
  ``.method``; what a name is bound to): those answers read the same with the statement
  or without it. Other imports only name modules the rules leave alone; an import a fix
  stops using stays when a hidden statement names it (``api``). The words of its strings
  (a message, a docstring) name nothing; those of its string annotations do.
The last two tests run again for each statement that joins the parsed part, until
none does. Statements with a ``global`` declaration or a backslash continuation stay
parsed, as does every file with ``:=`` (it may bind at module level from anywhere).

Each hidden statement becomes a placeholder of exactly its lines: ``while 0:`` (no branch
for the version guards to weigh, no binding) holding one string that carries a marker,
indented as the statement's body was (LibCST takes its default indent from the file's
first indented block). Every parsed line keeps its number and its text, so positions, the
splice and the ``ast`` tree's lines hold as they are; ``restore`` puts the hidden
statements back into the migrated text by their markers. Whatever does not line up
answers None, and the caller parses the whole file.
"""

from __future__ import annotations

import ast
import bisect
import keyword
import re
import sys
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

from migrate_tpu.codemod.foundation.lines import line_offsets
from migrate_tpu.codemod.analysis.names import IMPORT_ALIASES
from migrate_tpu.codemod.stages.prefilter import Evidence, Prefilter
from migrate_tpu.codemod.stages.source_index import nodes_of

_WORD = re.compile(r"[^\W\d]\w*")
# Names a def or class binds wherever it is, and names an import or ``global`` binds
# (a superset: every word of the statement's name list, ``as`` aliases included).
# (Each keyword is matched first and its word boundary checked behind it: a pattern that
# begins with ``\b`` is tried at every position, twenty to fifty times slower.)
_DEFINED = re.compile(r"(?:def(?<=\bdef)|class(?<=\bclass))\s+([^\W\d]\w*)")
_IMPORTED = re.compile(r"import(?<=\bimport)\s+(\([^)]*\)|(?:[^\n;#\\]|\\\n)*)")
_GLOBAL = re.compile(r"(?:global(?<=\bglobal)|nonlocal(?<=\bnonlocal))\s+((?:[^\n;#\\]|\\\n)*)")
_KEYWORDS = frozenset(keyword.kwlist)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_Definition = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]
# The marker every placeholder's string begins with; a file holding it is parsed whole.
MARKER = "migrate-tpu:unparsed:"


@dataclass
class PartialText:
    """``text``: the module with each hidden statement replaced by a placeholder of the same
    lines; ``tree``: the ``ast`` tree of the original with a stand-in node for each
    placeholder (the same lines: what ``edits.statement_starts`` and ``lines`` read)."""

    text: str
    tree: ast.Module
    # (placeholder text, the statement's own text), in order
    replaced: List[Tuple[str, str]]

    @property
    def hidden_text(self) -> str:
        """The text of the statements left out, one after the other."""
        return "".join(original for _, original in self.replaced)

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


def _definition(statement: ast.stmt) -> Optional[_Definition]:
    """``statement`` when it is a ``def`` or a ``class`` (what may be hidden), else None."""
    return statement if isinstance(statement, _DEFINITIONS) else None


def _defined_name(statement: ast.stmt) -> Optional[str]:
    """The name a ``def`` or ``class`` statement binds; None for any other statement."""
    definition = _definition(statement)
    return None if definition is None else definition.name


_PREFILTERS: Dict[Tuple[type, ...], Optional[Tuple[Prefilter, Prefilter]]] = {}


def _evidence_of(rule_classes: Sequence[type]) -> Optional[Tuple[Prefilter, Prefilter]]:
    """The evidence of ``rule_classes``: what counts anywhere, and what counts only as code
    (``Evidence.code_only``); None when a rule declares none (it may fire anywhere)."""
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
            _PREFILTERS[key] = (Prefilter([e for e in evidence if not e.code_only]), Prefilter([e for e in evidence if e.code_only]))
    return _PREFILTERS[key]


class _EvidenceLines:
    """Where a file holds evidence of the rules: the lines of each occurrence, and the place
    (line, byte column) of each occurrence of evidence that counts only as code."""

    def __init__(self, source: str, evidence: Tuple[Prefilter, Prefilter], line_starts: List[int]) -> None:
        data = source.encode("utf-8", "surrogatepass")
        # Byte offsets: the text's own when it is ASCII (``line_starts``, in characters).
        self._starts = line_starts if len(data) == len(source) else line_offsets(data, b"\n")
        anywhere, as_code = evidence
        self._anywhere = self._mark(anywhere.places(data))
        code_spans = list(as_code.places(data))
        self._code: List[Tuple[Tuple[int, int], Tuple[int, int]]] = [self._place(span) for span in code_spans]
        self._as_code = self._mark(code_spans)

    def _place(self, span: Tuple[int, int]) -> Tuple[Tuple[int, int], Tuple[int, int]]:
        """((line, column), (end line, end column)) of a byte span, columns in bytes as ``ast``'s."""
        places = []
        for offset in span:
            line = bisect.bisect_right(self._starts, offset) - 1
            places.append((line, offset - self._starts[line]))
        return places[0], places[1]

    def _mark(self, spans) -> List[int]:
        marked: Set[int] = set()
        for start, end in spans:
            first = bisect.bisect_right(self._starts, start) - 1
            last = bisect.bisect_right(self._starts, max(start, end - 1)) - 1
            marked.update(range(max(first, 1), last + 1))
        return sorted(marked)

    @staticmethod
    def _hits(lines: List[int], first: int, last: int) -> bool:
        at = bisect.bisect_left(lines, first)
        return at < len(lines) and lines[at] <= last

    def any_in(self, first: int, last: int) -> bool:
        """Whether lines ``first``..``last`` hold evidence, strings included."""
        return self._hits(self._anywhere, first, last) or self._hits(self._as_code, first, last)

    def in_code(self, statement: ast.stmt, first: int, last: int, facts: Callable[[ast.stmt], "_Facts"]) -> bool:
        """Whether ``statement`` (lines ``first``..``last``) holds evidence where it counts:
        evidence that counts only as code, inside one of its string literals, does not."""
        if self._hits(self._anywhere, first, last):
            return True
        if not self._hits(self._as_code, first, last):
            return False
        strings = facts(statement).strings
        for start, end in self._code:
            if first <= start[0] <= last and not any(s <= start and end <= e for s, e in strings):
                return True
        return False


class _Facts:
    """One walk of a statement's ``ast``: where its string literals are (f-strings aside:
    their replacement fields are code) and every name its code holds (with the words of
    its string annotations, which the analysis reads as code), not those of its other
    strings and comments."""

    def __init__(self, statement: ast.stmt) -> None:
        self.strings: List[Tuple[Tuple[int, int], Tuple[int, int]]] = []
        words: Set[str] = set()
        annotations: List[ast.AST] = []
        in_fstrings: Set[int] = set()  # the literal parts of f-strings
        for node in nodes_of(statement):  # each parent before its children
            kind = type(node)
            if kind is ast.Name:
                words.add(node.id)
            elif kind is ast.Constant:
                if isinstance(node.value, (str, bytes)) and id(node) not in in_fstrings:
                    self.strings.append(((node.lineno, node.col_offset), (node.end_lineno or 0, node.end_col_offset or 0)))
            elif kind is ast.JoinedStr:
                in_fstrings.update(id(part) for part in node.values if type(part) is ast.Constant)
            elif kind is ast.alias:
                words.update(_WORD.findall(node.name))
                if node.asname:
                    words.add(node.asname)
            else:
                if kind is ast.ImportFrom:
                    words.update(_WORD.findall(node.module or ""))
                for field in node._fields:  # names a node holds as text: def, class, arg, keyword,
                    value = getattr(node, field, None)  # attribute, pattern capture, global
                    if type(value) is str:
                        words.add(value)
                    elif type(value) is list and value and type(value[0]) is str:
                        words.update(value)
                    elif field in ("annotation", "returns") and value is not None:
                        annotations.append(value)
        for annotation in annotations:
            for node in ast.walk(annotation):
                if type(node) is ast.Constant and isinstance(node.value, str):
                    words.update(_WORD.findall(node.value))
        self.words = words


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
    line_starts = line_offsets(source, "\n")
    choice = _Choice(source, body, _EvidenceLines(source, prefilter, line_starts), line_starts)
    choice.find_candidates()
    if not choice.candidates:
        return None
    choice.keep_what_the_rest_needs()
    if not choice.candidates:
        return None
    return _placeholders(source, body, choice.spans, choice.candidates, line_starts)


class _Choice:
    """Which top-level statements of a module ``leave_out`` hides: the candidates (defs and
    classes without evidence), less those the parsed part reads or may look up by name."""

    def __init__(self, source: str, body: List[ast.stmt], evidence: _EvidenceLines, line_starts: List[int]) -> None:
        self.source = source
        self.body = body
        self.evidence = evidence
        self.line_starts = line_starts
        self._walked: Dict[int, _Facts] = {}
        self.spans: List[Tuple[int, int]] = []  # each top-level statement's lines
        self.candidates: Dict[int, str] = {}  # index -> the statement's text
        self.names: Dict[int, str] = {}  # index -> the name the candidate binds

    def facts(self, statement: ast.stmt) -> _Facts:
        if id(statement) not in self._walked:
            self._walked[id(statement)] = _Facts(statement)
        return self._walked[id(statement)]

    def _text(self, first: int, last: int) -> str:
        return self.source[self.line_starts[first] : self.line_starts[last + 1]]

    def find_candidates(self) -> None:
        """Each top-level statement's lines, and whether it may be hidden."""
        for index, statement in enumerate(self.body):
            decorators = getattr(statement, "decorator_list", None)
            first = min(d.lineno for d in decorators) if decorators else statement.lineno
            last = statement.end_lineno or statement.lineno
            self.spans.append((first, last))
            name = _defined_name(statement)
            if name is None or name in IMPORT_ALIASES or self.evidence.in_code(statement, first, last, self.facts):
                continue
            text = self._text(first, last)
            if "\\\n" not in text and not _GLOBAL.search(text):
                self.candidates[index] = text
                self.names[index] = name

    def keep_what_the_rest_needs(self) -> None:
        """Parse the candidates the parsed part reads (by name), or whose code reads a name the
        parsed part binds, until no more is needed."""
        evidence = self.evidence
        read: Set[str] = set()  # every word the parsed part holds
        bound: Set[str] = set()  # every name the parsed part binds where the analysis looks it up
        for index, statement in enumerate(self.body):
            if index in self.candidates:
                continue
            first, last = self.spans[index]
            text = self._text(first, last)
            read.update(_WORD.findall(text))
            _bind_by_text(text, first, evidence, bound)
            name = _defined_name(statement)
            if name is not None:
                bound.add(name)
            elif not isinstance(statement, (ast.Import, ast.ImportFrom)) or evidence.any_in(first, last):
                _bind_at_module_level(statement, bound)
        bound -= _KEYWORDS
        words_of = {index: set(_WORD.findall(text)) for index, text in self.candidates.items()}
        changed = True
        while changed:
            changed = False
            for index in list(self.candidates):
                statement = self.body[index]
                needed = self.names[index] in read
                if not needed and not words_of[index].isdisjoint(bound):
                    # A word may come from a string (a message, a docstring): the names its code reads.
                    needed = not self.facts(statement).words.isdisjoint(bound)
                if needed:
                    text = self.candidates.pop(index)
                    read |= words_of[index]
                    bound.add(self.names[index])
                    _bind_by_text(text, self.spans[index][0], evidence, bound)
                    changed = True


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
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _bind_target(target, bound)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            _bind_target(node.target, bound)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound.add(alias.asname or alias.name.partition(".")[0])
        elif isinstance(node, _DEFINITIONS):
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif sys.version_info >= (3, 12) and isinstance(node, ast.TypeAlias):  # ``type X = ...``
            _bind_target(node.name, bound)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                _bind_target(target, bound)
        else:
            if isinstance(node, (ast.For, ast.AsyncFor)):
                _bind_target(node.target, bound)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        _bind_target(item.optional_vars, bound)
            elif type(node).__name__ == "Match":
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
        stand_in = ast.While(test=ast.Constant(0), body=[ast.Pass()], orelse=[])
        stand_in.lineno, stand_in.col_offset = first, 0
        stand_in.end_lineno, stand_in.end_col_offset = last, 0
        layout.append(stand_in)
    pieces.append(source[cursor:])
    return PartialText("".join(pieces), ast.Module(body=layout, type_ignores=[]), replaced)


def _placeholder(source: str, statement: ast.stmt, first: int, last: int, line_starts: List[int], marker: str) -> Optional[str]:
    """``while 0:`` and a string holding ``marker``, on exactly the lines ``first``..``last``;
    the string on a line of its own, indented as the statement's body, when the body is."""
    ending = "\n" if source.endswith("\n", 0, line_starts[last + 1]) else ""
    definition = _definition(statement)
    if definition is None:
        return None  # only a def or a class is hidden
    inner = definition.body[0]
    inner_line = min([d.lineno for d in getattr(inner, "decorator_list", ())] + [inner.lineno])
    line = source[line_starts[inner_line] : line_starts[inner_line + 1]]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    if inner_line > first and indent and line.lstrip(" \t")[:1] not in ("", "\n", "#"):
        if inner_line > last:
            return None
        # The body's first statement begins its line: the file's first indented block may be here.
        if len(indent) != getattr(inner, "col_offset", -1) and not getattr(inner, "decorator_list", None):
            return None
        lines = last - first  # the string takes the lines after ``while 0:``
        return "while 0:\n" + indent + '"""' + marker + "\n" * (lines - 1) + '"""' + ending
    return 'while 0: """' + marker + "\n" * (last - first) + '"""' + ending
