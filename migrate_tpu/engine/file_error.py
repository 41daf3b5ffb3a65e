"""The one error a file's handling may raise: input the migrator cannot take.

It sits below both the pipeline and the notebook support, which raise it, so
neither has to import the other for it.
"""

from __future__ import annotations

from typing import Optional


class FileError(Exception):
    """Input the migrator cannot handle; ``line`` is 1-based, 0 when unknown."""

    def __init__(self, message: str, line: int = 0, cell: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.cell = cell
