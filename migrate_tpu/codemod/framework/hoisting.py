"""Moving a callable made in a loop to just before the loop, made once there.

A lambda, nested ``def`` or factory call (``make_step(k)``) written inside a loop
is made again on every iteration; wrapped in ``tf.function`` there, each one is
traced again (an XLA compile per step on a TPU). When every name it reads from
outside itself keeps its value through the loop, making it once before the loop
gives the same callable: this module finds the free names, checks that the loop
rebinds none of them, picks a name that collides with nothing, and builds the
statement to insert. Inserting is a rewrite of the loop statement that returns
``FlattenSentinel([new statement, loop])``, so every byte outside the new line
and the changed call stays as it was.
"""

from __future__ import annotations

import ast
import builtins
import symtable
import textwrap
from typing import TYPE_CHECKING, List, Optional, Sequence, Set, Union

import libcst as cst

from migrate_tpu.codemod.analysis.tree import iter_tree
from migrate_tpu.codemod.analysis.walk import Analysis, Scope
from migrate_tpu.codemod.analysis.names import lookup

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.framework.rule import NodeRewrite

# A statement whose body runs again and again; a statement with its lines above it.
Loop = Union[cst.For, cst.While]
Statement = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]

_HOISTED = "__hoisted_callable__"


def free_names(code: str, is_statement: bool) -> Optional[Set[str]]:
    """Names that ``code`` (an expression, or a ``def`` statement) reads from outside itself.

    Python's own symbol tables decide what is local where (a name assigned anywhere in
    a function is local to all of it), so no rule of scoping is written again here.
    None when the code does not parse on its own.
    """
    source = textwrap.dedent(code) if is_statement else f"{_HOISTED} = (\n{code}\n)\n"
    try:
        ast.parse(source)
        table = symtable.symtable(source, "<hoisted>", "exec")
    except SyntaxError:
        return None
    found: Set[str] = set()
    own = {_HOISTED}
    if is_statement:
        own |= {child.get_name() for child in table.get_children()}
    for symbol in table.get_symbols():
        if symbol.is_referenced() and symbol.get_name() not in own:
            found.add(symbol.get_name())
    for child in table.get_children():
        _frees(child, set(), found)
    return found


def _frees(table: symtable.SymbolTable, enclosing: Set[str], found: Set[str]) -> None:
    local = {s.get_name() for s in table.get_symbols() if s.is_local() or s.is_parameter()}
    for symbol in table.get_symbols():
        name = symbol.get_name()
        if symbol.is_referenced() and name not in local and name not in enclosing:
            found.add(name)
    for child in table.get_children():
        _frees(child, enclosing | local, found)


def loops_around(ancestors: Sequence[cst.CSTNode]) -> List[Loop]:
    """The ``for``/``while`` statements whose bodies hold the current node, innermost first,
    within its function (a loop outside the function does not re-run code made inside it)."""
    loops: List[Loop] = []
    for index in range(len(ancestors) - 2, -1, -1):
        node = ancestors[index]
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            break
        if isinstance(node, (cst.For, cst.While)) and ancestors[index + 1] is node.body:
            loops.append(node)
    return loops


def rebound_in(loop: cst.CSTNode, names: Set[str], scope: Scope) -> List[str]:
    """Those of ``names`` that the loop binds anew (its target, an assignment, a def in it)
    in the scope the loop runs in, or that are not bound at all before it."""
    inside = {id(node) for node in iter_tree(loop)}
    changed = []
    for name in sorted(names):
        found = lookup(scope, name)
        if found is None:
            if not hasattr(builtins, name):
                changed.append(name)  # bound by no code in view (a star import...): cannot tell
            continue
        if any(binding.node is not None and id(binding.node) in inside for binding in found[1]):
            changed.append(name)
    return changed


def fresh_name(base: str, analysis: Analysis, taken: Set[str]) -> str:
    """``base``, or ``base_2``, ``base_3``...: a name no code of the file uses, nor a builtin."""
    used = analysis.names_in_use()
    candidate, number = base, 1
    while candidate in used or candidate in taken or hasattr(builtins, candidate):
        number += 1
        candidate = f"{base}_{number}"
    taken.add(candidate)
    return candidate


def insert_before(statement: cst.BaseStatement, new: Statement) -> NodeRewrite:
    """A rewrite of ``statement`` (a loop) that puts ``new`` right above it; several
    insertions before the same loop keep the order of the fixes that make them."""

    def rewrite(updated: Union[Statement, cst.FlattenSentinel[Statement]]) -> cst.FlattenSentinel[Statement]:
        nodes = list(updated.nodes) if isinstance(updated, cst.FlattenSentinel) else [updated]
        # Comments of a moved ``def`` go with it; its blank lines do not (they would split
        # the new lines from the loop).
        own = [line for line in new.leading_lines if line.comment is not None]
        if len(nodes) == 1:
            # The blank lines and comments above the loop now stand above the new line: the
            # line belongs to the loop, and nothing comes between a comment and what it describes.
            loop = nodes[0]
            return cst.FlattenSentinel(
                [new.with_changes(leading_lines=[*loop.leading_lines, *own]), loop.with_changes(leading_lines=())]
            )
        return cst.FlattenSentinel([*nodes[:-1], new.with_changes(leading_lines=own), nodes[-1]])

    return rewrite
