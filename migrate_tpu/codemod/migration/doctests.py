"""Moved APIs in doctests: the ``>>>``/``...`` lines of docstrings (and of the strings of a
module's ``__test__`` dict, which ``doctest`` runs too), their fenced Python code blocks
(```` ```python ````, as TensorFlow's own docstrings show code) and their reStructuredText
code blocks (``.. code-block:: python`` and literal blocks after ``::``, as Sphinx shows
code; a block that does not compile as Python is not read).

People keep the examples in their docstrings up to date (``>>> strategy.run(...)``),
so the same rules look at them. The examples of one docstring are one program
(later examples use what earlier ones bound), run with the module's globals, so
they are migrated as one snippet after the module's own top-level imports: the
rules see ``tf`` as the module binds it. The snippet's fixes are put back line by
line, each behind its own prompt and indentation, inside the string's own
quoting; whatever cannot be put back that way (a fix that adds or removes lines
or an import, a line holding a backslash, whose text in the file is not its text
in the string) is reported on its line in the file instead.

Safety: a doctest edit changes no behaviour of the program (a docstring is data),
but it changes what the doctest runs; each fix keeps the safety its rule gives it
in the snippet, so plain ``fix`` applies only what keeps the example's behaviour.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Deque, Dict, List, Match, NamedTuple, Optional, Tuple, cast

from migrate_tpu.codemod.foundation.findings import Report
from migrate_tpu.codemod.foundation.places import StrippedLines

_PROMPT = re.compile(r"^(\s*)(>>>|\.\.\.)( |$)")
# A Markdown code fence (```python): its lines are code too, as the docs of TensorFlow write them.
_FENCE = re.compile(r"^(\s*)(?:```|~~~)\s*([\w+-]*)\s*$")
_PYTHON_FENCES = frozenset({"", "python", "py", "python3"})
_COLLAPSE = "TPU601"  # the version-guard collapse: it removes lines, so it never fits back
NOTE = "; in a doctest: fix it by hand (the fix does not fit back line by line)"
_ESCAPED = "; in a doctest: fix it by hand (the line holds the string's quotes or a backslash escape)"


@dataclass
class _Line:
    """One doctest source line: where it is in the file, and the text before its code."""

    number: int  # 1-based line of the file
    prefix: str  # everything before the code: indentation, prompt, one space
    code: str
    editable: bool  # the file's text of the line is the string's text


@dataclass
class DoctestEdit:
    """A file line to replace: its text before and after."""

    line: int
    before: str
    after: str


def may_hold_examples(source: str) -> bool:
    """Whether ``source`` may have a doctest or a code block at all (cheap)."""
    return ">>>" in source or "```" in source or "~~~" in source or ("::" in source and _REST_BLOCK.search(source) is not None)


def _docstrings(tree: ast.Module):
    nodes = [tree] + _definitions(tree)
    for node in nodes:
        body = getattr(node, "body", None)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            if isinstance(body[0].value.value, str):
                yield body[0].value
    # ``__test__ = {"name": """>>> ..."""}``: doctest runs these strings as it runs docstrings.
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Dict):
            if any(isinstance(t, ast.Name) and t.id == "__test__" for t in statement.targets):
                for value in statement.value.values:
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        yield value


def _definitions(tree: ast.Module) -> List[ast.AST]:
    """Every def and class of the module, in ``ast.walk``'s order (breadth first), visiting
    statements only: a def or class is never inside an expression, and walking every
    expression node of TF's generated op modules cost a quarter of a second each."""
    found: List[ast.AST] = []
    queue: Deque[ast.AST] = deque([tree])
    while queue:
        node = queue.popleft()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                queue.extend(item for item in value if isinstance(item, _HOLDS_STATEMENTS))
    return found


# What may hold a statement: statements, ``except`` handlers and ``case`` blocks.
_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler) + ((ast.match_case,) if hasattr(ast, "match_case") else ())


def _examples(string: ast.Constant, lines: List[str]) -> List[List[_Line]]:
    """The examples of one docstring, each a list of its source lines."""
    first = string.lineno - 1
    last = cast(int, string.end_lineno) - 1  # a parsed node has its end (only a node built by hand lacks it)
    opening = lines[first][string.col_offset :]
    quote = re.match(r"[rRuU]*('''|\"\"\"|'|\")", opening)
    if quote is None or re.match(r"[bBfF]", opening):
        return []
    raw = "r" in quote.group(0).lower()
    start_column = string.col_offset + len(quote.group(0))
    reader = _Reader()
    for index in range(first, last + 1):
        text = lines[index].rstrip("\r\n")
        begin = start_column if index == first else 0
        segment = text[begin:]
        # The file's text of the line is the string's text: not so on the quotes' lines or with escapes.
        editable = first < index < last and (raw or "\\" not in text)
        if index == last:
            segment = segment.split(quote.group(1))[0]
        reader.read(_Row(index + 1, text, begin, segment, editable))
    return reader.finish()


# ``.. code-block:: python`` (also ``code``, ``sourcecode``); a paragraph ending in ``::``
# starts a literal block, which is read when it compiles.
_CODE_BLOCK = re.compile(r"^(\s*)\.\.\s+(?:code-block|code|sourcecode)::(?:\s+([\w+-]+))?\s*$")
_OPTION = re.compile(r"^\s*:[\w-]+:")
# Cheaply: a line ending in ``::`` or a code directive (not a slice such as ``x[::2]``).
_REST_BLOCK = re.compile(r"::[ \t]*\r?$|\.\.\s+(?:code-block|code|sourcecode)::", re.M)


@dataclass
class _Block:
    """A reStructuredText code block being read: the directive's indentation, the code's, its lines."""

    indent: int
    code_indent: Optional[int] = None
    lines: List[_Line] = field(default_factory=list)


@dataclass
class _Fence:
    """A fenced code block being read: its indentation, whether it is Python, its lines."""

    indent: str
    python: bool
    lines: List[_Line] = field(default_factory=list)


class _Row(NamedTuple):
    """One line of a docstring as ``_Reader`` reads it."""

    number: int  # 1-based line of the file
    text: str  # the file's line
    begin: int  # where the string's text begins in it
    segment: str  # the string's text of the line
    editable: bool  # the file's text of the line is the string's text


class _Reader:
    """Reads a docstring line by line into its examples: doctests (their ``>>>`` and ``...``
    prompts say what is code), Markdown fences and reStructuredText code blocks, each read
    while it is open (``fence``, ``block``) and handed to ``examples`` when it closes."""

    def __init__(self) -> None:
        self.examples: List[List[_Line]] = []
        self.current: Optional[List[_Line]] = None  # the doctest being read
        self.fence: Optional[_Fence] = None
        self.block: Optional[_Block] = None  # a reStructuredText code block being read

    def read(self, row: _Row) -> None:
        # A code block reads its own lines; a line that ends it is read as any other.
        if self.block is not None and self._in_block(self.block, row):
            return
        marker = _FENCE.match(row.segment)
        if marker is not None:
            self._fence_marker(marker)
            return
        match = _PROMPT.match(row.segment)
        if self.fence is not None and self._in_fence(self.fence, row, prompted=match is not None):
            return
        if match is None:
            self._prose(row.segment)
        else:
            self._prompted(match, row)

    def finish(self) -> List[List[_Line]]:
        """The examples read, a code block still open at the docstring's end among them."""
        if self.block is not None and self.block.lines:
            self._close_block(self.block)
        return [example for example in self.examples if example]

    def _in_block(self, block: _Block, row: _Row) -> bool:
        """Whether ``row`` belongs to the open code ``block`` (its code, a blank line in it, the
        directive's options); False where it ends the block, which is then closed."""
        segment = row.segment
        if not segment.strip():
            if block.lines:
                block.lines.append(_Line(row.number, row.text, "", editable=False))
            return True
        indent = len(segment) - len(segment.lstrip())
        if indent > block.indent and not (not block.lines and _OPTION.match(segment)):
            if block.code_indent is None:
                block.code_indent = indent
            if indent >= block.code_indent and _PROMPT.match(segment) is None:
                cut = row.begin + block.code_indent
                block.lines.append(_Line(row.number, row.text[:cut], row.text[cut:], row.editable))
                return True
            # A doctest in the block (its prompts say what is code) or a ragged block: not
            # read as one program; the line is read as any other line below.
            self.block = None
        elif not block.lines or indent > block.indent:
            return True  # the directive's options
        else:
            self._close_block(block)
        return False

    def _close_block(self, block: _Block) -> None:
        while block.lines and not block.lines[-1].code:
            block.lines.pop()
        self.examples.append(block.lines)
        self.block = None

    def _fence_marker(self, marker: Match[str]) -> None:
        """A fence opens, or closes (a Python fence with lines is an example)."""
        self.current = None
        if self.fence is None:
            self.fence = _Fence(marker.group(1), marker.group(2).lower() in _PYTHON_FENCES)
        else:
            if self.fence.python and self.fence.lines:
                self.examples.append(self.fence.lines)
            self.fence = None

    def _in_fence(self, fence: _Fence, row: _Row, prompted: bool) -> bool:
        """Whether the open ``fence`` takes ``row`` (a line of its code, blank or indented as the
        fence; a line outside its indentation makes it no Python). A prompted line is read as a
        doctest, the fence no Python either."""
        segment = row.segment
        if prompted:
            fence.python = False  # a doctest in a fence: its prompts say what is code
            return False
        if not segment.strip():
            fence.lines.append(_Line(row.number, row.text, "", editable=False))
        elif segment.startswith(fence.indent):
            fence.lines.append(_Line(row.number, row.text[: row.begin + len(fence.indent)], segment[len(fence.indent) :], row.editable))
        else:
            fence.python = False
        return True

    def _prose(self, segment: str) -> None:
        """A line without a prompt ends a doctest; a code directive, or a paragraph ending in
        ``::``, opens a code block."""
        self.current = None
        directive = _CODE_BLOCK.match(segment)
        if directive is not None and (directive.group(2) is None or directive.group(2).lower() in _PYTHON_FENCES):
            self.block = _Block(len(directive.group(1)))
        elif directive is None and segment.rstrip().endswith("::") and not segment.lstrip().startswith(".."):
            self.block = _Block(len(segment) - len(segment.lstrip()))

    def _prompted(self, match: Match[str], row: _Row) -> None:
        """A ``>>>`` line begins a doctest, a ``...`` line continues it."""
        prompt = match.group(2)
        if prompt == "..." and self.current is None:
            return  # an ellipsis in expected output
        prefix = row.text[: row.begin + match.end()]
        line = _Line(row.number, prefix, row.segment[match.end() :], row.editable)
        if prompt == ">>>":
            self.current = [line]
            self.examples.append(self.current)
        else:
            cast("List[_Line]", self.current).append(line)  # a "..." line with no example before it was skipped above


def _header(tree: ast.Module, source: str) -> List[str]:
    """The module's top-level imports, as the lines of the snippet's head; ``tf`` is
    TensorFlow where the module binds no ``tf`` (the convention doctests are written in)."""
    header: List[str] = []
    binds_tf = False
    lines: Optional[List[str]] = None
    for statement in tree.body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            if lines is None:
                lines = _PHYSICAL_LINE.findall(source)
            text = _segment(lines, statement)
            if text is not None:
                header.extend(text.splitlines())
            binds_tf = binds_tf or any((alias.asname or alias.name.partition(".")[0]) == "tf" for alias in statement.names)
    return header if binds_tf else ["import tensorflow as tf", *header]


# A physical line as the tokenizer counts them (``\r\n``, ``\r`` or ``\n`` ends one; a form
# feed does not), the last one perhaps without an ending.
_PHYSICAL_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _segment(lines: List[str], node: ast.stmt) -> Optional[str]:
    """The source text of ``node``, as ``ast.get_source_segment`` gives it, from the module's
    lines split once: that function splits the whole module again on every call (on TF's
    590 KB ``gen_math_ops.py``, 15 imports cost 2.5 s)."""
    end_line, end_column = node.end_lineno, node.end_col_offset
    if end_line is None or end_column is None or end_line > len(lines):
        return None
    first, last = node.lineno - 1, end_line - 1
    if first == last:
        return lines[first].encode()[node.col_offset : end_column].decode()
    head = lines[first].encode()[node.col_offset :].decode()
    tail = lines[last].encode()[:end_column].decode()
    return "".join([head, *lines[first + 1 : last], tail])


def _compiles(text: str) -> bool:
    try:
        compile(text, "<doctest>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        return True
    except (SyntaxError, ValueError):
        return False


def migrate_doctests(source: str, migrate_code: Callable, tree: Optional[ast.Module] = None) -> Tuple[List[DoctestEdit], List[Report]]:
    """The edits and reports for the doctests of ``source``. ``migrate_code(snippet, select, ignore=())``
    runs the rules (less ``ignore``): (findings, fixed code) with ``select`` None, else the code
    fixed by those rules only. ``tree``: the module's ``ast`` tree, when the caller has it."""
    if not may_hold_examples(source):
        return [], []
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return [], []
    lines = source.splitlines(keepends=True)
    header: Optional[List[str]] = None
    edits: List[DoctestEdit] = []
    reports: List[Report] = []
    for string in _docstrings(tree):
        examples = _examples(string, lines)
        if not examples:
            continue
        if header is None:
            header = _header(tree, source)
        found_edits, found_reports = _docstring_doctests(header, examples, migrate_code)
        edits += found_edits
        reports += found_reports
    return edits, reports


def _docstring_doctests(header: List[str], examples: List[List[_Line]], migrate_code: Callable) -> Tuple[List[DoctestEdit], List[Report]]:
    """The edits and reports for the ``examples`` of one docstring, run as one snippet after ``header``."""
    snippet_lines: List[Optional[_Line]] = [None] * len(header)
    body: List[str] = list(header)
    for example in examples:
        text = [line.code for line in example]
        if not _compiles("\n".join(text) + "\n"):
            text = [""] * len(example)  # not Python (or not alone): its lines stay blank
        body.extend(text)
        snippet_lines.extend(example)
    snippet = "\n".join(body) + "\n"
    # Where each line of the snippet is in the file: its prompt and indentation were cut.
    places = StrippedLines([(line.number, len(line.prefix)) if line is not None else None for line in snippet_lines])
    found, code = migrate_code(snippet, None)
    found = [r for r in found if places.holds(r.line)]
    if not found:
        return [], []
    fitting = _fitting_rules(snippet, code, body, found, migrate_code)
    if any(r.rule == _COLLAPSE and r.applied for r in found) and _COLLAPSE not in fitting:
        # The collapse is left to a person, so the branch it would remove stays: what its own
        # findings say (notes naming the guard) is reported on their lines, as in code.
        seen = {(r.rule, r.line, r.column) for r in found}
        kept = migrate_code(snippet, None, (_COLLAPSE,))[0]
        found += [
            r for r in kept
            if not r.applied and (r.rule, r.line, r.column) not in seen and places.holds(r.line)
        ]
        found.sort(key=lambda r: (r.line, r.column, r.rule))
    edits: List[DoctestEdit] = []
    fixed_lines: Dict[int, str] = {}
    if fitting:
        code = code if fitting == {r.rule for r in found if r.applied} else migrate_code(snippet, tuple(sorted(fitting)))[1]
        for i, (old, new) in enumerate(zip(body, code.splitlines())):
            line = snippet_lines[i]
            if old != new and line is not None and line.editable:
                fixed_lines[i] = new
                edits.append(DoctestEdit(line.number, line.prefix + line.code, line.prefix + new))
    for report in found:
        index = report.line - 1
        line = cast(_Line, snippet_lines[index])  # ``found`` holds only findings on the file's lines
        report.line, report.column, report.end_line, report.end_column = places.place((report.line, report.column, report.end_line, report.end_column))
        report.edits = []
        if report.applied and (report.rule not in fitting or index not in fixed_lines):
            report.applied = False
            report.safety = "manual"
            report.fix_title = None
            report.message += NOTE if line.editable else _ESCAPED
        report.change_lines = [(line.number, line.number)] if report.applied else []
    return edits, found


def _fitting_rules(snippet: str, code: str, body: List[str], found: List[Report], migrate_code: Callable) -> set:
    """The rules whose fixes together keep the snippet's lines in place (one line for one):
    all of them when they do, else the largest set found one rule at a time."""
    applied = sorted({r.rule for r in found if r.applied})
    if not applied:
        return set()

    def fits(text: str) -> bool:
        return len(text.splitlines()) == len(body)

    if fits(code):
        return set(applied)
    kept: List[str] = []
    for rule in applied:
        if fits(migrate_code(snippet, tuple(kept + [rule]))[1]):
            kept.append(rule)
    return set(kept)


def apply_edits(code: str, edits: List[DoctestEdit], line_of: Callable[[int], int]) -> Tuple[str, List[int]]:
    """``code`` with each edit made where ``line_of`` puts its line; the lines not found as expected."""
    lines = code.splitlines(keepends=True)
    missed: List[int] = []
    for edit in edits:
        index = line_of(edit.line) - 1
        if not 0 <= index < len(lines):
            missed.append(edit.line)
            continue
        text = lines[index]
        ending = text[len(text.rstrip("\r\n")) :]
        if text[: len(text) - len(ending)] != edit.before:
            missed.append(edit.line)
            continue
        lines[index] = edit.after + ending
    return "".join(lines), missed
