"""The IPython syntax of notebook cells: one grammar for every part that reads cells.

A notebook cell is Python plus IPython's own lines.  Both the migration (which
masks them, migrates the Python and puts them back) and ``migrate-tpu run``
(which executes the Python) must agree on which lines those are, so the
grammar lives here alone:

* a cell whose first non-blank line starts with ``%%`` is a *cell magic*; its
  body is Python only for :data:`PYTHON_BODY_CELL_MAGICS` (``%%time``,
  ``%%timeit``, ``%%capture``, ``%%prun``), anything else (``%%bash``,
  ``%%writefile``...) is not Python;
* at the start of a logical line (not inside a string or brackets, not after a
  backslash), a line starting with ``%``, ``!``, ``?``, ``/``, ``,`` or ``;``,
  an assignment from one (``files = !ls``, ``a, b = %sx cmd``) or a help
  request (``obj?``, ``obj.attr??``) is an IPython line; a backslash at its
  end continues it onto the next line;
* ``%time``, ``%timeit`` and ``%prun`` (with their options) followed by a
  statement run that statement: :func:`timed_statement` splits it off.

Standard library only, Python 3.7 syntax; imports nothing of migrate_tpu.
"""

import re

# Annotations are quoted: this module imports nothing but ``re`` (tests/runtime/test_magics.py)
# and runs on Python 3.7, which never evaluates them.

#: Cell magics whose body is Python that the kernel runs.
PYTHON_BODY_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})

#: Line magics that run the Python statement after them: name -> (options taking a value,
#: flag options), as IPython parses them.
STATEMENT_LINE_MAGICS = {
    "time": ("", ""),
    "timeit": ("nrp", "qoct"),
    "prun": ("lsTD", "rq"),
}

# Kinds of line, as :func:`line_kinds` reports them.
PYTHON = "python"
CELL_MAGIC = "cell_magic"
IPYTHON = "ipython"
CONTINUATION = "continuation"

# `x = !cmd` / `x, y = %sx cmd` / `self.x = %time f()`
_ASSIGN = re.compile(r"^[ \t]*[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*[!%](?!=)")
# `obj?`, `obj.attr??`, `?obj`
_HELP = re.compile(r"^[ \t]*(?:\?{1,2}[\w.*]+|[\w.*]+\?{1,2})[ \t]*$")


def cell_magic(source: str) -> "str | None":
    """Name of the cell magic (``%%name``) that starts ``source``, else ``None``."""
    for line in source.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("%%"):
            return None
        words = stripped[2:].split(None, 1)
        return words[0] if words else ""
    return None


def is_python_cell(source: str) -> bool:
    """Whether ``source`` holds Python (perhaps with IPython lines): not a cell magic
    whose body is something else."""
    name = cell_magic(source)
    return name is None or name in PYTHON_BODY_CELL_MAGICS


def _scan_line(line: str, state: "tuple[str | None, int]") -> "tuple[tuple[str | None, int], bool]":
    """Advance over one physical line of Python.

    ``state`` is (the quote of a string still open, bracket depth); returns the
    new state and whether the line ends with a backslash continuation.
    """
    quote, depth = state
    index = 0
    length = len(line)
    in_comment = False
    while index < length:
        char = line[index]
        if quote:
            if char == "\\":
                index += 2
            elif line.startswith(quote, index):
                index += len(quote)
                quote = None
            else:
                index += 1
            continue
        if char == "#":
            in_comment = True
            break
        if char in "\"'":
            triple = line[index:index + 3]
            quote = triple if triple in ('"""', "'''") else char
            index += len(quote)
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        index += 1
    continued = not in_comment and line.rstrip("\r\n").endswith("\\")
    if quote in ("'", '"') and not continued:
        quote = None  # a one-line string left open ends with its line (a syntax error)
    return (quote, depth), continued and quote is None


def is_ipython_line(line: str) -> bool:
    """Whether ``line``, at the start of a logical line, is IPython rather than Python."""
    stripped = line.lstrip(" \t")
    if not stripped or stripped.startswith("#"):
        return False
    if stripped[0] in "%!?/,;":
        return True
    return bool(_ASSIGN.match(line) or _HELP.match(line.rstrip("\r\n")))


def line_kinds(source: str) -> "list[str] | None":
    """The kind of each line of ``source`` (``source.splitlines(keepends=True)``):
    :data:`PYTHON`, :data:`CELL_MAGIC` (the ``%%`` line of a Python-body cell
    magic), :data:`IPYTHON` or :data:`CONTINUATION` (of an IPython line).
    ``None`` when the cell is a cell magic whose body is not Python."""
    lines = source.splitlines(True)
    kinds = [PYTHON] * len(lines)
    if not is_python_cell(source):
        return None
    if cell_magic(source) is not None:
        first = next(i for i, line in enumerate(lines) if line.strip())
        kinds[first] = CELL_MAGIC
    state: "tuple[str | None, int]" = (None, 0)
    continued = False
    in_magic = False
    for number, line in enumerate(lines):
        if kinds[number] == CELL_MAGIC:
            continue
        if in_magic:
            kinds[number] = CONTINUATION
            in_magic = continued = line.rstrip("\r\n").endswith("\\")
            continue
        if state == (None, 0) and not continued and is_ipython_line(line):
            kinds[number] = IPYTHON
            in_magic = continued = line.rstrip("\r\n").endswith("\\")
            continue
        state, continued = _scan_line(line, state)
    return kinds


def timed_statement(line: str) -> "tuple[str, str, str] | None":
    """``(indent, magic, statement)`` when ``line`` (one whole IPython line, without its
    newline) is ``%time``/``%timeit``/``%prun`` with options, then a statement, so that
    ``indent + magic + statement == line``; else ``None``.  The statement is not
    checked to be Python."""
    body = line.rstrip("\r\n")
    stripped = body.lstrip(" \t")
    indent = body[:len(body) - len(stripped)]
    if not stripped.startswith("%") or stripped.startswith("%%"):
        return None
    match = re.match(r"%(\w+)", stripped)
    if not match or match.group(1) not in STATEMENT_LINE_MAGICS:
        return None
    valued, flags = STATEMENT_LINE_MAGICS[match.group(1)]
    index = match.end()
    while True:
        option = re.compile(r"[ \t]+-(?:([{}])[ \t]*(?!-)\S+|[{}])(?=[ \t])".format(
            re.escape(valued) or "^\\s\\S", re.escape(flags) or "^\\s\\S")).match(stripped, index)
        if not option:
            break
        index = option.end()
    gap = re.compile(r"[ \t]+").match(stripped, index)
    if not gap:
        return None
    code = stripped[gap.end():]
    if not code.strip() or code.startswith("-"):
        return None
    return indent, stripped[:gap.end()], code


__all__ = ["CELL_MAGIC", "CONTINUATION", "IPYTHON", "PYTHON", "PYTHON_BODY_CELL_MAGICS",
           "STATEMENT_LINE_MAGICS", "cell_magic", "is_ipython_line", "is_python_cell",
           "line_kinds", "timed_statement"]
