"""A finding as the engine keeps and reports it: the migrator's fields, and where it sits
in a notebook.

The engine turns each :class:`~migrate_tpu.engine.contracts.Finding` it is handed into
one of these, reading only what the contract states, so that everything after that
(notebooks, writing, the cache, every report format) reads plain attributes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Dict, List, Optional, Tuple

from migrate_tpu.engine.contracts import Finding

# The fields of a migrator's finding, as the contract declares them (``to_dict`` aside).
CONTRACT_FIELDS = tuple(Finding.__annotations__)


@dataclass
class FileFinding:
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
    change_lines: List[Tuple[int, int]] = field(default_factory=list)
    edits_imports: bool = False
    as_read: Optional[Tuple[int, int, int, int]] = None
    # A notebook's finding: its cell (lines above then count from the cell's first
    # line), and the same place in the notebook file's own JSON text, for
    # annotations on the raw file; ``file_as_read`` likewise for ``as_read``.
    cell: Optional[int] = None
    file_line: Optional[int] = None
    file_column: Optional[int] = None
    file_as_read: Optional[Tuple[int, int]] = None

    @classmethod
    def of(cls, finding: Finding) -> "FileFinding":
        """Copy what the contract states (its lists too: the finding may be reused)."""
        values: Dict[str, Any] = {}
        for name in CONTRACT_FIELDS:
            value = getattr(finding, name)
            values[name] = list(value) if isinstance(value, list) else value
        return cls(**values)

    def moved(self, **changes: Any) -> "FileFinding":
        """A copy with ``changes`` (field names and values) applied."""
        return replace(self, **changes)

    def to_dict(self) -> Dict[str, object]:
        return asdict(self)
