"""Run settings as the engine and the CLI share them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Tuple


@dataclass
class Settings:
    select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()
    target: str = "2.4"
    unsafe_fixes: bool = False
    jobs: int = 0
    respect_gitignore: bool = True
