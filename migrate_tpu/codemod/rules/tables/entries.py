"""One entry of a rule table (``Entry``: a moved symbol, its facts and provenance), what the
old symbol is to the new one (``relation``), and what a fix may do at one reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import libcst as cst

# What the old symbol is to the new one, checked on the real TF 2.4.1.
SAME = "same"  # the very same object under two names

SUBCLASS = "subclass"  # every old object is also an instance of the new class

SIBLING = "sibling"  # unrelated classes: neither is an instance of the other

REPLACED = "replaced"  # no drop-in: the new form is called differently

RELATIONS = (SAME, SUBCLASS, SIBLING, REPLACED)

# What a fix may do at one reference.
RENAME = "rename"

UNSAFE_RENAME = "unsafe rename"

MANUAL = "manual"

DELEGATED = "delegated"  # another rule (named in the entry) handles this position


@dataclass
class Entry:
    """One moved symbol of the catalogue, with its own facts and provenance."""

    old: str
    new: Optional[str] = None
    since: str = ""
    removed: str = ""
    source: str = ""
    relation: str = SAME
    # Rule ids that take over a position a table cannot express
    # (``calls = "TPU403"``: the structural rule rewrites the constructor calls).
    calls: str = ""
    type_checks: str = ""
    keywords: Dict[str, str] = field(default_factory=dict)
    manual_if_keywords: Tuple[str, ...] = ()
    max_positional: Optional[int] = None
    manual_message: str = ""
    prefix: bool = False
    message: str = ""
    # How old and new differ, for the messages of positions that need a person.
    difference: str = ""

    @property
    def last(self) -> str:
        return self.old.rsplit(".", 1)[-1]


def head(node: cst.CSTNode) -> str:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""


def short(name: Optional[str]) -> str:
    if not name:
        return ""
    return "tf" + name[len("tensorflow") :] if name.startswith("tensorflow") else name
