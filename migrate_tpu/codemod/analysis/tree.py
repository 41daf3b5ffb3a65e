"""The semantic nodes of a LibCST tree, read from the nodes' fields: which fields of a node
type hold code (not whitespace, commas or parentheses), in the order Python evaluates them, and
``iter_tree``, every node below one without a visitor.

Apart from ``walk`` because it knows nothing of scopes or rules: the walk reads these fields
in its hot loop, and the rules, the guards and the tracing read ``iter_tree`` on subtrees of
their own, with no analysis to ask.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Tuple

import libcst as cst


# Fields that never hold code a rule cares about.
_LAYOUT_FIELDS = frozenset(
    {
        "leading_lines", "lines_after_decorators", "lpar", "rpar", "comma", "header", "footer",
        "semicolon", "colon", "equal", "dot", "star", "operator", "trailing_whitespace", "newline",
        "first_line", "empty_lines", "last_line", "indent", "whitespace", "asynchronous",
        "lbracket", "rbracket", "lbrace", "rbrace", "between",
    }
)
# Where evaluation order matters to scopes: decorators and bases belong to the
# enclosing scope, so they come before the parameters and the body.
_ORDERED_FIELDS = {
    cst.FunctionDef: ("decorators", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "bases", "keywords", "body"),
}
_FIELDS_CACHE: Dict[type, Tuple[str, ...]] = {}


class _NodeTypes(dict):
    """type -> whether it is a LibCST node; indexing it costs no call once a type is known."""

    def __missing__(self, kind: type) -> bool:
        known = self[kind] = issubclass(kind, cst.CSTNode)
        return known


NODE_TYPES = _NodeTypes()


def _is_node(kind: type) -> bool:
    return NODE_TYPES[kind]


# Leaves whose one field is their text: nothing below them to walk.
_TEXT_LEAVES = frozenset({cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString})


def child_fields(node_type: type) -> Tuple[str, ...]:
    fields = _FIELDS_CACHE.get(node_type)
    if fields is None:
        import dataclasses

        if node_type in _TEXT_LEAVES:
            fields = ()
        elif node_type in _ORDERED_FIELDS:
            fields = _ORDERED_FIELDS[node_type]
        else:
            fields = tuple(
                f.name
                for f in dataclasses.fields(node_type)
                if f.name not in _LAYOUT_FIELDS and not f.name.startswith("whitespace")
            )
        _FIELDS_CACHE[node_type] = fields
    return fields


def iter_tree(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every semantic node below and including ``node``, parents first (no rebuilding)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        children: List[cst.CSTNode] = []
        for name in child_fields(type(current)):
            value = getattr(current, name)
            kind = type(value)
            if kind is list or kind is tuple:
                children.extend(item for item in value if _is_node(type(item)))
            elif _is_node(kind):
                children.append(value)
        stack.extend(reversed(children))
