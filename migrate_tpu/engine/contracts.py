"""What the engine needs of the migrator it runs, stated once.

The engine knows nothing of what is migrated: the composition root hands it a
*migrator*, whose ``migrate`` returns an *outcome* carrying *findings*. These
protocols are that whole contract; the engine reads nothing else of them (a
field it needs is declared here, never read with a ``getattr`` default), and
``tests/test_contracts.py`` checks that the codemod's objects satisfy them.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Protocol, Sequence, Tuple, runtime_checkable


@runtime_checkable
class Finding(Protocol):
    """One finding of the migrator, as plain data that pickles."""

    rule: str
    message: str
    # 1-based; in ``fix`` mode a finding whose fix was applied has line 0 and its
    # position in the file as read in ``as_read``.
    line: int
    column: int
    end_line: int
    end_column: int
    safety: str  # "safe", "unsafe" or "manual"
    applied: bool
    fix_title: Optional[str]
    suggestion: Optional[str]
    edits: List[Dict[str, object]]
    # ``diff`` mode, applied fixes: the source lines of the statements the fix
    # edits, and whether it also adds or drops an import (the patch's hunk names).
    change_lines: List[Tuple[int, int]]
    edits_imports: bool
    as_read: Optional[Tuple[int, int, int, int]]

    def to_dict(self) -> Dict[str, object]: ...


@runtime_checkable
class Outcome(Protocol):
    """The migrator's result for one text."""

    code: str
    reports: Sequence[Finding]
    parsed: bool  # False: the migrator ruled the text out without parsing it


@runtime_checkable
class Migrator(Protocol):
    """What the engine runs over files; picklable, for worker processes.

    ``migrate`` raises the engine's ``FileError`` for input it cannot handle.
    """

    notebook_diff: str  # "json": a notebook's change as a patch of its file; "cells": cell by cell

    def needs_work(self, data: bytes) -> bool: ...

    def migrate(self, text: str, path: str) -> Outcome: ...

    def cache_salt(self) -> str: ...

    # The other files read for the migrations since the last call (a module a strategy
    # factory or a base class comes from), emptied by the call: a cached result is
    # reused only while they are as they were.
    def consulted_files(self) -> Sequence[str]: ...
