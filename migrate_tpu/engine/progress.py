"""A one-line progress bar on a terminal, and nothing anywhere else.

The bar is drawn on stderr only when stderr is a terminal, the run has more
than :data:`MIN_FILES` files, and neither CI nor ``TERM=dumb`` is in the
environment: pipes, log files and CI logs never see carriage-return noise.
Other messages go through :meth:`Progress.echo`, which clears the bar first.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import IO, Optional

MIN_FILES = 20
_INTERVAL = 0.1  # seconds between redraws


def wanted(total: int, stream: Optional[IO[str]] = None, disabled: bool = False) -> bool:
    stream = stream or sys.stderr
    if disabled or total <= MIN_FILES:
        return False
    if os.environ.get("CI") or os.environ.get("GITHUB_ACTIONS") or os.environ.get("PRE_COMMIT"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """``advance()`` once per file; ``close()`` at the end (clears the line)."""

    def __init__(self, total: int, enabled: bool, stream: Optional[IO[str]] = None, label: str = "files") -> None:
        self.total = total
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.label = label
        self.done = 0
        self._drawn = False
        self._last = 0.0
        self._started = time.monotonic()

    def advance(self, name: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < _INTERVAL and self.done < self.total:
            return
        self._last = now
        self._draw(name)

    def _draw(self, name: str) -> None:
        width = shutil.get_terminal_size((80, 20)).columns
        count = f" {self.done}/{self.total} {self.label}"
        bar_width = max(10, min(30, width // 4))
        filled = int(bar_width * self.done / max(1, self.total))
        bar = "[" + "#" * filled + "-" * (bar_width - filled) + "]"
        line = bar + count
        room = width - len(line) - 3
        if name and room > 10:
            shown = name if len(name) <= room else "..." + name[-(room - 3) :]
            line += "  " + shown
        self.stream.write("\r" + line[: width - 1] + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False

    def echo(self, text: str) -> None:
        """Print a line on the bar's stream without tearing the bar."""
        self.clear()
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        self.clear()
