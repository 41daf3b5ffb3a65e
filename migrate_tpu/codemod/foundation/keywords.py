"""What the text of a module alone tells of the keyword arguments its calls may pass.

The prefilter lets a file through for ``lr=`` (TPU405), which real code writes far more
often as an assignment (``lr = schedule(step)``) or a default (``def f(lr=0.1)``) than as a
keyword of a call. A keyword argument follows ``(`` or ``,`` in valid Python, whatever
blanks, line breaks, comments and line continuations come between: an ``lr =`` after
anything else (the start of a statement after a complete line, ``self.``, an operator) is
none. That is told from the text before it, without parsing the file.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable


@lru_cache(maxsize=None)
def _assigned(names: tuple) -> "re.Pattern[str]":
    """``name =`` (not ``==``) for each of ``names``, as a word."""
    alternatives = "|".join(rf"{re.escape(name)}(?<=\b{re.escape(name)})" for name in names)
    return re.compile(rf"(?:{alternatives})\s*=(?!=)")


def may_pass(source: str, keywords: Iterable[str]) -> bool:
    """Whether some ``keyword =`` in ``source`` may be a keyword argument of a call: the
    nearest character of code before it is ``(`` or ``,``, or the text cannot tell (a comment
    on a line that also holds a quote, which may be a ``#`` in a string). False only where
    each one surely follows something else."""
    for match in _assigned(tuple(keywords)).finditer(source):
        if _may_follow_opening(source, match.start()):
            return True
    return False


def _may_follow_opening(source: str, position: int) -> bool:
    """Whether the code before ``position`` may end with ``(`` or ``,``: looking back over
    blanks, line continuations, blank lines and comment lines."""
    end = position
    while True:
        start = source.rfind("\n", 0, end) + 1
        line = source[start:end]
        if "#" in line:
            if "'" in line or '"' in line:
                return True  # the ``#`` may sit in a string: cannot tell where code ends
            line = line[: line.index("#")]
        text = line.rstrip()
        if text.endswith("\\"):
            text = text[:-1].rstrip()
        if text:
            return text[-1] in "(,"
        if start == 0:
            return False
        end = start - 1  # the line before: this one holds no code before the position
