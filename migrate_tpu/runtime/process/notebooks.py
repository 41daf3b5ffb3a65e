"""The notebooks ``migrate-tpu run`` executes: a notebook's code cells with IPython's lines
replaced (the grammar is :mod:`migrate_tpu.magics`), ``%%writefile`` cells, and one cell run as
IPython runs it (its source in ``linecache``, its last expression's value printed).

Apart from the runner (:mod:`migrate_tpu.runtime.process.runner`), which runs a script or a
notebook and sets up what it runs under, because what a notebook's cells become is its own
question, read by the tests without starting anything.  Imports no TensorFlow; Python 3.7 syntax.
"""

from __future__ import absolute_import, division, print_function

import ast
import io
import json
import linecache
import os
import sys

from migrate_tpu import magics


def _cell_source(cell):
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(source)
    return source


def _strip_magics(source):
    """Python code of one notebook cell, IPython lines replaced (the grammar is
    :mod:`migrate_tpu.magics`); ``None`` if the cell is not Python.  Line numbers
    are kept: a removed line becomes an empty one."""
    kinds = magics.line_kinds(source)
    if kinds is None:
        return None
    out = []
    for line, kind in zip(source.splitlines(), kinds):
        if kind == magics.PYTHON:
            out.append(line)
        elif kind == magics.IPYTHON:
            stripped = line.lstrip(" \t")
            out.append(line[:len(line) - len(stripped)] + _line_magic_replacement(stripped))
        else:  # the %% line of a Python-body cell magic, continuations of IPython lines
            out.append("")
    return "\n".join(out) + "\n"


def _line_magic_replacement(stripped):
    """Python for one IPython line: the statement of ``%time``/``%timeit``/``%prun``
    (run once), ``pass`` for anything else (``target = None`` for an assignment)."""
    target, body = "", stripped
    if not stripped.startswith(("%", "!", "?", "/", ",", ";")) and "=" in stripped:
        left, _, right = stripped.partition("=")
        target, body = left.strip() + " = ", right.strip()
    timed = magics.timed_statement(body)
    if timed is not None:
        return target + timed[2]
    return target + "None" if target else "pass"


def notebook_cells(path):
    """``[(label, python_source)]`` for the code cells of a notebook, magics stripped."""
    with io.open(path, "r", encoding="utf-8") as handle:
        nb = json.load(handle)
    cells = nb.get("cells")
    if cells is None:  # nbformat 3
        cells = [c for ws in nb.get("worksheets", []) for c in ws.get("cells", [])]
    out = []
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        source = _cell_source(cell) if "source" in cell else "".join(cell.get("input", ""))
        code = _strip_magics(source)
        if code is None:
            code = _writefile_cell(source)
        if code is None:
            sys.stderr.write("migrate-tpu run: skipping cell {} (cell magic)\n".format(index + 1))
            continue
        out.append(("{}:cell{}".format(path, index + 1), code))
    return out


def _writefile_cell(source):
    """Python that does what IPython's ``%%writefile [-a] PATH`` (or ``%%file``) cell does (a
    notebook that writes a module, then imports it), or ``None`` for any other cell magic."""
    first, _, body = source.partition("\n")
    words = first.split()
    if not words or words[0] not in ("%%writefile", "%%file"):
        return None
    arguments = words[1:]
    append = any(a in ("-a", "--append") for a in arguments)
    paths = [a for a in arguments if not a.startswith("-")]
    if len(paths) != 1:
        return None
    # on the cell's first line, so that the cell keeps its line count for a traceback
    return "__import__('migrate_tpu.runtime.process.notebooks', fromlist=['notebooks']).write_cell_file({!r}, {!r}, {!r})\n".format(
        paths[0], body, append)


def write_cell_file(path, text, append=False):
    """``%%writefile``: the cell's text into ``path`` (relative to the current folder), with
    IPython's message."""
    exists = os.path.exists(path)
    with io.open(path, "a" if append else "w", encoding="utf-8") as handle:
        handle.write(text if text.endswith("\n") or not text else text + "\n")
    print("{} {}".format("Appending to" if append and exists else ("Overwriting" if exists else "Writing"), path))


def _register_source(code, label):
    """Put the cell's code in ``linecache`` under its file name, with no modification
    time so that it is never checked against a file (as IPython does): ``inspect``,
    and so AutoGraph, find the source of functions defined in the cell."""
    lines = code.splitlines(True)
    linecache.cache[label] = (len(code), None, lines, label)


def run_cell(code, label, namespace):
    _register_source(code, label)
    tree = ast.parse(code, label, "exec")
    display = None
    if tree.body and isinstance(tree.body[-1], ast.Expr) and not code.rstrip().endswith(";"):
        display = ast.Expression(tree.body.pop().value)
    exec(compile(tree, label, "exec"), namespace)
    if display is not None:
        value = eval(compile(display, label, "eval"), namespace)
        if value is not None:
            print(repr(value))
