"""Unified diffs that ``git apply`` and ``patch -p1`` take, for scripts and notebooks alike."""

from __future__ import annotations

import difflib


def unified_diff(old: str, new: str, name: str) -> str:
    name = name.lstrip("/")  # an absolute path outside the current folder
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    lines = []
    for line in difflib.unified_diff(old_lines, new_lines, fromfile=f"a/{name}", tofile=f"b/{name}"):
        if line.startswith(("---", "+++")):
            lines.append(line)
        elif not line.endswith(("\n", "\r")):
            lines.append(line + "\n\\ No newline at end of file\n")
        else:
            lines.append(line)
    return "".join(lines)
