"""Rooms of one size: no function of the package runs past 60 lines, no class past 400, so that
no room needs scrolling for its shape. A function or a class is measured from its ``def`` or
``class`` line to its last line (decorators aside; a nested function counts in its own right
and in the one around it). A module's size (at most 600 lines) is pylint's rule
(``too-many-lines``, run by tests/test_linters.py), its parameters and statements ruff's
(PLR0913, PLR0915): no linter measures a function's or a class's lines, so this test does.

What is still over a limit is listed below, each with why, so the test states what is left;
an entry that is no longer over its limit fails too, and is to be struck off.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parent.parent / "migrate_tpu"
FUNCTION_LINES = 60
CLASS_LINES = 400
# Classes over CLASS_LINES, as "path:Class", with why they are left: none.
CLASSES_OVER: Set[str] = set()
# Functions over FUNCTION_LINES, as "path:Class.function()", with why they are left: none.
FUNCTIONS_OVER: Set[str] = set()


def rooms(text: str, name: str) -> Dict[str, int]:
    """The lines of the module ``name`` of ``text``, of each of its classes (``name:Class``) and of
    each of its functions (``name:Class.function()``; a nested one ``name:function.inner()``), the
    longest where two share a name."""
    found = {name: len(text.splitlines())}

    def visit(node: ast.AST, qualified: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = f"{qualified}.{child.name}" if qualified else child.name
                key = f"{name}:{inner}" + ("" if isinstance(child, ast.ClassDef) else "()")
                found[key] = max(found.get(key, 0), (child.end_lineno or child.lineno) - child.lineno + 1)
                visit(child, inner)
            else:
                visit(child, qualified)

    visit(ast.parse(text), "")
    return found


@functools.lru_cache(maxsize=None)
def _sizes() -> Dict[str, int]:
    """``rooms`` of every module of the package; measured once a session (its readers leave it as it is)."""
    found: Dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        found.update(rooms(path.read_text("utf-8"), path.relative_to(PACKAGE).as_posix()))
    return found


def _limit(name: str) -> float:
    # a module (no ``:``) is pylint's to measure
    return FUNCTION_LINES if name.endswith("()") else CLASS_LINES if ":" in name else float("inf")


def over_the_limits(sizes: Dict[str, int]) -> List[str]:
    """Each class or function over its limit, as ``name: lines``."""
    return [f"{name}: {lines} lines" for name, lines in sorted(sizes.items()) if lines > _limit(name)]


def test_no_room_is_over_its_size():
    left = CLASSES_OVER | FUNCTIONS_OVER
    over = [entry for entry in over_the_limits(_sizes()) if entry.split(": ")[0] not in left]
    assert over == [], f"split these (at most {FUNCTION_LINES} lines a function, {CLASS_LINES} a class): {over}"


def test_what_is_left_over_is_still_over():
    sizes = _sizes()
    stale = [name for name in sorted(CLASSES_OVER | FUNCTIONS_OVER) if sizes.get(name, 0) <= _limit(name)]
    assert stale == [], f"no longer over the limit (or gone): strike them off the list: {stale}"


def test_the_measure():
    sizes = {"a.py": 9001, "a.py:Big": 401, "a.py:Small": 400, "a.py:Big.long()": 61, "a.py:short()": 60}
    assert over_the_limits(sizes) == ["a.py:Big: 401 lines", "a.py:Big.long(): 61 lines"]


def test_rooms_are_named_by_where_they_are():
    text = "@decorated\nclass A:\n    def f(self):\n        def g():\n            pass\n\n        return g\n\n\nasync def h():\n    pass\n"
    assert rooms(text, "a.py") == {"a.py": 11, "a.py:A": 6, "a.py:A.f()": 5, "a.py:A.f.g()": 2, "a.py:h()": 2}
