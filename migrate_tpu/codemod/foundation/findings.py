"""A finding as plain data: what crosses process boundaries, caches and reports.

Kept free of LibCST so that reading cached results does not load the parser.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Tuple


@dataclass
class Report:
    """A finding as plain data."""

    rule: str
    message: str
    line: int
    column: int
    end_line: int
    end_column: int
    safety: str
    applied: bool
    fix_title: Optional[str] = None
    suggestion: Optional[str] = None
    edits: List[Dict[str, object]] = field(default_factory=list)
    # ``diff`` mode, applied fixes: the (first, last) source lines of the statements the
    # fix edits, and whether it also adds or drops an import; the patch names the rules
    # behind each hunk from them.
    change_lines: List[Tuple[int, int]] = field(default_factory=list)
    edits_imports: bool = False
    # ``fix`` mode, when the code changed: (line, column, end_line, end_column) in the
    # file as it was read. The position fields above are in the fixed code, and when
    # the fixed file cannot be written (read-only, changed on disk) the finding is
    # reported here instead: nothing was applied, so the file is still as read.
    as_read: Optional[Tuple[int, int, int, int]] = None

    def to_dict(self) -> Dict[str, object]:
        return asdict(self)
