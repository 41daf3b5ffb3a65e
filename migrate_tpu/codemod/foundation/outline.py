"""A module's top level as its ``ast`` and text tell it, for questions asked across modules.

What a name of another module holds is answered by a LibCST summary of that module
(``migration/project``), a parse that costs a third of a migration. Many questions need no such
parse: whether the module's ``helper`` may read the TensorFlow version is settled once no
statement that binds ``helper`` spells a name that may. An :class:`Outline` gives those
statements and their words: the names each top-level statement binds, the words its text
holds, and what every import of the module (at any depth) binds. Words are a superset of
the names a statement reads (its strings and comments are words too), and bindings a
superset of what it binds: a question answered "no" from an outline is "no" for the
LibCST analysis too.
"""

from __future__ import annotations

import ast
import bisect
import re
from typing import Dict, FrozenSet, List, NamedTuple, Optional, Set, Tuple

_WORD = re.compile(r"\w+")
# What ends a line for ``ast``'s line numbers (``str.splitlines`` also splits on form feeds).
_LINE_END = re.compile(r"\r\n|\r|\n")


class Import(NamedTuple):
    """What an import binds a name to: ``module`` as written (leading dots for a relative
    import) and, for ``from module import name``, the ``name``; None for ``import module``
    (the bound name is the module, or its first part without ``as``)."""

    module: str
    name: Optional[str]


class Statement(NamedTuple):
    """A statement the module runs at its top level (in a compound statement's blocks too),
    other than an import, or a compound statement's header: the names it may bind at
    module level, whether it is a ``class`` statement, and the text its words are read
    from: the whole statement (a def without its docstring), or for a class its body's
    assignments (what ``Klass.X`` reads), as (start, end) offsets."""

    binds: FrozenSet[str]
    is_class: bool
    spans: Tuple[Tuple[int, int], ...]


class Outline:
    """The top level of one module (see the module's docstring)."""

    def __init__(self, text: str, tree: ast.Module) -> None:
        self._text = text
        self.statements: List[Statement] = []
        self.bound: Dict[str, List[int]] = {}  # name -> the statements that may bind it
        self.imports: Dict[str, List[Import]] = {}  # name -> the imports, anywhere, that bind it
        self.star_import = False  # ``from m import *`` may bind any name
        self._words: Dict[int, FrozenSet[str]] = {}
        starts = [0] + [match.end() for match in _LINE_END.finditer(text)]
        starts.append(len(text))
        self._starts = starts
        # Where an import or a ``global`` statement may begin: a node is walked for its inner
        # ones only where its text holds such a place (a walk of every def cost more than the
        # module's parse).
        self._import_marks = [match.start() for match in IMPORT_START.finditer(text)]
        self._global_marks = [match.start() for match in GLOBAL_START.finditer(text)] if "global" in text else []
        self._collect(tree.body)

    def _span(self, first: int, last: int) -> Tuple[int, int]:
        """The text of lines ``first`` to ``last`` (numbered from 1, as ``ast`` does)."""
        return self._starts[first - 1], self._starts[min(last, len(self._starts) - 1)]

    def _collect(self, body: List[ast.stmt]) -> None:
        """Note the statements of a block run at the module's top level. A compound statement
        (``if``, ``try``, ``for``, ``with``, ``while``, ``match``) is taken apart: a name
        bound in its body holds what its own statement gives it, not what the test or the
        other branches read (``try: import tensorflow as tf; _tf_available = True``: the
        flag reads no version, though the block does)."""
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self._note_import(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._note_definition(node)
            elif isinstance(node, _COMPOUND) or type(node).__name__ == "TryStar":
                blocks = [getattr(node, field, None) or [] for field in ("body", "orelse", "finalbody")]
                blocks += [handler.body for handler in getattr(node, "handlers", ())]
                blocks += [case.body for case in getattr(node, "cases", ())]
                # The header: what it binds (a loop's target, ``with ... as``, ``except ... as``,
                # a walrus in a test, a ``case`` capture) holds what the header reads.
                header_parts = [part for field, part in ast.iter_fields(node) if field not in ("body", "orelse", "finalbody", "handlers", "cases")]
                binds: Set[str] = set()
                for part in header_parts:
                    for item in part if isinstance(part, list) else [part]:
                        if isinstance(item, ast.AST):
                            binds |= _bound_in(item)
                for handler in getattr(node, "handlers", ()):
                    binds |= {handler.name} if handler.name else set()
                    binds |= _bound_in(handler.type) if handler.type is not None else set()
                for case in getattr(node, "cases", ()):
                    binds |= _bound_in(case.pattern)
                first_inner = min((block[0].lineno for block in blocks if block), default=node.end_lineno or node.lineno)
                if binds:
                    self._add(Statement(frozenset(binds), False, (self._span(node.lineno, max(node.lineno, first_inner - 1)),)))
                for block in blocks:
                    self._collect(block)
            else:
                self._add(Statement(frozenset(_bound_in(node)), False, (self._span(node.lineno, node.end_lineno or node.lineno),)))
                self._note_imports_in(node)

    def _note_definition(self, node) -> None:
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        whole = self._span(first, node.end_lineno or node.lineno)
        if isinstance(node, ast.ClassDef):
            # What ``Klass.X`` reads: the class body's assignments (a docstring or a method is
            # no value of the class's attributes); a block in the body counts whole.
            values = [item for item in node.body if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Expr, ast.Pass))]
            spans = tuple(self._span(item.lineno, item.end_lineno or item.lineno) for item in values)
        else:
            spans = _without_docstring(node, whole, self._span, self._text)
        self._add(Statement(frozenset({node.name}), isinstance(node, ast.ClassDef), spans))
        # A ``global`` inside binds a module name from the body: the whole text is its value.
        if _marked(self._global_marks, whole):
            declared = {name for inner in ast.walk(node) if isinstance(inner, ast.Global) for name in inner.names}
            if declared:
                self._add(Statement(frozenset(declared), False, (whole,)))
        self._note_imports_in(node)

    def _note_imports_in(self, node) -> None:
        """The imports inside ``node`` (in a function, they bind its names: what they import
        is what those names hold there)."""
        for part in node if isinstance(node, list) else [node]:
            if isinstance(part, ast.stmt) and _marked(self._import_marks, self._span(part.lineno, part.end_lineno or part.lineno)):
                for inner in ast.walk(part):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        self._note_import(inner)

    def _add(self, statement: Statement) -> None:
        for name in statement.binds:
            self.bound.setdefault(name, []).append(len(self.statements))
        self.statements.append(statement)

    def _note_import(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                # ``import a.b`` binds ``a``: the package, through which any of its modules
                # may be read (``a.c.X``), as ``import a.b as b`` binds the module ``a.b``.
                bound = alias.asname or alias.name.partition(".")[0]
                self.imports.setdefault(bound, []).append(Import(alias.name if alias.asname else bound, None))
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    self.star_import = True
                else:
                    self.imports.setdefault(alias.asname or alias.name, []).append(Import(module, alias.name))

    def words(self, index: int) -> FrozenSet[str]:
        """The words of statement ``index``'s text (for a class, of its body but its methods)."""
        found = self._words.get(index)
        if found is None:
            spans = self.statements[index].spans
            found = self._words[index] = frozenset(word for start, end in spans for word in _WORD.findall(self._text, start, end))
        return found


def outline_of(text: str) -> Optional[Outline]:
    """The outline of a module's ``text``; None when the standard parser refuses it."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return Outline(text, tree)


# Where an import or a ``global`` statement may begin: a line's start, or after ``;`` or a
# block's ``:`` (``try: import x``), then the keyword, which must be followed by a blank (or,
# for ``global``, a line continuation), as the grammar wants. Text in strings counts too: a
# superset. A match ends where the keyword begins.
IMPORT_START = re.compile(r"(?:^|[;:])[ \t]*(?=(?:from|import)[ \t])", re.MULTILINE)
GLOBAL_START = re.compile(r"(?:^|[;:])[ \t]*(?=global[ \t\\])", re.MULTILINE)


def _marked(marks: List[int], span: Tuple[int, int]) -> bool:
    """Whether one of the sorted offsets ``marks`` lies in ``span``."""
    at = bisect.bisect_left(marks, span[0])
    return at < len(marks) and marks[at] < span[1]


_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try) + ((ast.Match,) if hasattr(ast, "Match") else ())


def _without_docstring(node, whole: Tuple[int, int], span, text: str) -> Tuple[Tuple[int, int], ...]:
    """A def's text without its docstring (words of prose, no name it reads), where the
    docstring's lines hold nothing else: not the signature's end, nor a statement after it."""
    first = node.body[0] if node.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)):
        return (whole,)
    doc = span(first.lineno, first.end_lineno or first.lineno)
    alone_before = text[doc[0] : doc[0] + first.col_offset].strip() == ""
    alone_after = len(node.body) == 1 or node.body[1].lineno > (first.end_lineno or first.lineno)
    if not (alone_before and alone_after):
        return (whole,)
    return ((whole[0], doc[0]), (doc[1], whole[1]))


def _bound_in(statement: ast.AST) -> Set[str]:
    """Every name a top-level statement other than a def, class or import may bind, a
    superset: targets at any depth (a loop's, a ``with``'s, a walrus's, a comprehension's),
    the defs and classes it holds, the names its imports bind, ``except ... as`` names,
    ``global`` names and ``match`` captures."""
    names: Set[str] = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.partition(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        else:
            captured = getattr(node, "name", None) if type(node).__name__ in ("MatchAs", "MatchStar") else None
            rest = getattr(node, "rest", None) if type(node).__name__ == "MatchMapping" else None
            names.update(name for name in (captured, rest) if isinstance(name, str))
    return names
