"""Rooms of one size: no class of the package runs past 400 lines, no module past 700, so
that no room needs scrolling for its shape. A class is measured from its ``class`` line to
its last line (decorators aside); a module by its lines.

What is still over a limit is listed below, each with why, so the test states what is left;
an entry that is no longer over its limit fails too, and is to be struck off.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parent.parent / "migrate_tpu"
CLASS_LINES = 400
MODULE_LINES = 700

# Modules over MODULE_LINES, relative to migrate_tpu/, with why they are left: none.
MODULES_OVER: Set[str] = set()
# Classes over CLASS_LINES, as "path:Class", with why they are left: none.
CLASSES_OVER: Set[str] = set()


@functools.lru_cache(maxsize=None)
def _sizes() -> Dict[str, int]:
    """``{"path": lines, "path:Class": lines}`` for every module and class of the package;
    measured once a session (its readers leave it as it is)."""
    found: Dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        text = path.read_text("utf-8")
        found[name] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                found[f"{name}:{node.name}"] = (node.end_lineno or node.lineno) - node.lineno + 1
    return found


def over_the_limits(sizes: Dict[str, int]) -> List[str]:
    """Each module or class over its limit, as ``name: lines``."""
    return [
        f"{name}: {lines} lines"
        for name, lines in sorted(sizes.items())
        if lines > (CLASS_LINES if ":" in name else MODULE_LINES)
    ]


def test_no_room_is_over_its_size():
    over = [entry for entry in over_the_limits(_sizes()) if entry.split(": ")[0] not in MODULES_OVER | CLASSES_OVER]
    assert over == [], f"split these (at most {CLASS_LINES} lines a class, {MODULE_LINES} a module): {over}"


def test_what_is_left_over_is_still_over():
    sizes = _sizes()
    stale = [name for name in sorted(MODULES_OVER | CLASSES_OVER) if sizes.get(name, 0) <= (CLASS_LINES if ":" in name else MODULE_LINES)]
    assert stale == [], f"no longer over the limit (or gone): strike them off the list: {stale}"


def test_the_measure():
    assert over_the_limits({"a.py": 701, "b.py": 700, "a.py:Big": 401, "a.py:Small": 400}) == ["a.py: 701 lines", "a.py:Big: 401 lines"]
