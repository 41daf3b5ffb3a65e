"""What the text of a module alone tells of its calls of a method: the names they are
called on, and the arguments they are given.

The prefilter's second stage (``syntax_stage.py``) parses a file with ``ast`` to learn,
among other things, that a ``.run(`` or a ``.compile(`` is called on a module an import
binds (absl's ``app.run(main)``, ``re.compile(...)``), or that a ``.compile(`` is given
nothing TPU401 acts on (``model.compile(optimizer, loss)``). Where the text shows that of
every such call beyond doubt, the file needs no parse: on the releases of
tf-models-official, a fifth to a quarter of the files the textual prefilter passes hold
nothing else. (A call's arguments are read by parsing that call's text alone.)
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from typing import Dict, List, Optional, Set, Tuple

from migrate_tpu.codemod.foundation.spelling import is_word_character, word_places

# ``from m import *`` may bind any name.
_STAR_IMPORT = re.compile(r"import(?<=\bimport)(?:[ \t]|\\\n)*\*")


@lru_cache(maxsize=None)
def _attribute(method: str) -> "re.Pattern[str]":
    """Every attribute access of ``method``: a dot, then the name, blanks, line continuations
    and (in brackets) comments allowed between them, as the grammar allows. Each of the three
    begins with its own character and a comment runs to its line's end, so the text between
    is read one way only: with a comment that could also end early (``#[^\n]*``), lines of
    comments after a dot were read in exponentially many ways, and ``re`` took minutes on
    one of TensorFlow's own files."""
    return re.compile(rf"\.(?:[ \t\f\r\n]|\\\n|#[^\n]*\n)*{re.escape(method)}\b")


def name_and_attributes(expr: ast.expr) -> Optional[Tuple[str, str]]:
    """``a.b.c`` as ``("a", ".b.c")`` (a name alone as ``("a", "")``): the name an attribute
    chain starts from and the rest as a dotted suffix; None when it starts elsewhere
    (``f().g``), where no import names it."""
    attributes: List[str] = []
    while isinstance(expr, ast.Attribute):
        attributes.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    return expr.id, "".join("." + attribute for attribute in reversed(attributes))


def imported_receivers(source: str, method: str) -> Optional[Dict[str, Set[str]]]:
    """For a module whose every access of the attribute ``method`` is written ``X.method``
    right after a plain name ``X``, each such name with the dotted names its imports bind it
    to (``{"re": {"re"}}``), when the text binds it only by absolute imports: every
    occurrence of ``X`` as a word is either in an import statement alone on its line (an
    ``import`` binding ``X`` there, or naming it as a module to import from) or followed by a
    dot on a line without ``import`` and not continuing another (an attribute of it: no
    parameter, assignment, loop, ``with``, ``except`` or ``global`` binds it); and nothing
    is imported with ``*``. None otherwise, or when no such access is found: the text alone
    does not tell. A string or comment naming ``X`` costs only the answer (None), never a
    wrong one."""
    receivers: Set[str] = set()
    for match in _attribute(method).finditer(source):
        if match.group(0) != "." + method:
            return None
        start = first = match.start()
        while first > 0 and is_word_character(source[first - 1]):
            first -= 1
        name = source[first:start]
        before = source[first - 1] if first else " "
        # A character that may continue a name (``.`` too) means the receiver is not ``name``.
        if not name.isidentifier() or before == "." or ("a" + before).isidentifier():
            return None
        receivers.add(name)
    if not receivers or _STAR_IMPORT.search(source):
        return None
    found: Dict[str, Set[str]] = {}
    for name in receivers:
        targets: Set[str] = set()
        for occurrence in word_places(source, name):
            line = source.rfind("\n", 0, occurrence) + 1
            end = source.find("\n", occurrence)
            text = source[line : len(source) if end < 0 else end]
            if source.endswith("\\\n", 0, line):
                return None  # the line continues another
            if "import" in text:
                bound = _imported_as(text, name)
                if bound is None:
                    return None
                targets.update(bound)
            elif not source.startswith(".", occurrence + len(name)):
                return None
        if not targets:
            return None  # bound by nothing the text shows: not an import
        found[name] = targets
    return found


def _imported_as(line: str, name: str) -> Optional[Set[str]]:
    """The dotted names that the import statements on ``line`` bind ``name`` to (an empty set
    when they only name it as a module to import from); None when the line is anything but
    absolute import statements, complete on it."""
    try:
        module = ast.parse(line.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    bound: Set[str] = set()
    for statement in module.body:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname == name:
                    bound.add(alias.name)
                elif alias.asname is None and alias.name.partition(".")[0] == name:
                    bound.add(name)
        elif isinstance(statement, ast.ImportFrom):
            if statement.level:
                return None  # a module of this project, which the text cannot tell
            for alias in statement.names:
                if (alias.asname or alias.name) == name:
                    bound.add(f"{statement.module}.{alias.name}")
        else:
            return None
    return bound


# How many closing brackets a call's arguments are tried at before the text is given up on.
_ATTEMPTS = 32


def call_arguments(source: str, method: str) -> Optional[List[ast.Call]]:
    """The calls of the attribute ``method`` in ``source``, each as ``ast`` reads its
    arguments (the callee stands in as ``f``), when every access of the attribute is
    such a call: ``X.method`` then ``(``. Each call's text runs to the first ``)`` at which
    ``f(...)`` parses: the text from a real ``(`` is read as the grammar reads it, so the
    first balanced end is the call's own. None when an access is not called there (``fn =
    model.compile``) or its end is not found: the text alone does not tell. An access inside
    a string or comment is read the same way (no call there can fire a rule either)."""
    calls: List[ast.Call] = []
    for match in _attribute(method).finditer(source):
        opening = match.end()
        while opening < len(source) and source[opening] in " \t":
            opening += 1
        if not source.startswith("(", opening):
            return None
        call = None
        closing = opening
        for _ in range(_ATTEMPTS):
            closing = source.find(")", closing + 1)
            if closing < 0:
                break
            try:
                parsed = ast.parse("f" + source[opening : closing + 1], mode="eval")
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            if isinstance(parsed.body, ast.Call):
                call = parsed.body
            break
        if call is None:
            return None
        calls.append(call)
    return calls
