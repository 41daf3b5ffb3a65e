"""LibCST's parse without re-validating what its own parser built.

Every LibCST node checks itself when it is constructed (``CSTNode.__post_init__``
calls ``_validate``): whitespace around keywords, parentheses, and so on. That is
what catches a rule building a bad node, but for the nodes the parser makes from
source text it only re-proves what the parser already knows, and it costs about a
third of the parse (measured in benchmarks/README.md). LibCST's own comment on
``__post_init__`` names this cost.

``parse_module`` turns the check off for the parse alone and back on before it
returns or raises, so every node a rule builds is still validated. The worker is
single-threaded: no other code constructs nodes meanwhile.
``tests/test_codegen_positions.py`` keeps this true of the installed LibCST.
"""

from __future__ import annotations

import libcst as cst


def _trusted(self) -> None:
    """Stands in for ``CSTNode.__post_init__`` while the parser builds the tree."""


def parse_module(source: str) -> cst.Module:
    validate = cst.CSTNode.__dict__["__post_init__"]
    # Swapping the method out for the parse is the point: mypy refuses any assignment to a method.
    cst.CSTNode.__post_init__ = _trusted  # type: ignore[method-assign]
    try:
        return cst.parse_module(source)
    finally:
        cst.CSTNode.__post_init__ = validate  # type: ignore[method-assign]
