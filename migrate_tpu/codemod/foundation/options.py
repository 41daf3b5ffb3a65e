"""Settings of one codemod run; importable without LibCST (the engine's hot path needs it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple


@dataclass(frozen=True)
class Options:
    select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    target: str = "2.4"
    unsafe_fixes: bool = False
    # JSON and SARIF reports carry each fix's text edits.
    want_edits: bool = False
    # "check" reports every finding and needs no new code; "diff" and "fix"
    # need the new code and the positions of what they could not fix.
    mode: str = "diff"
