"""codemod/lines.py: a statement's lines from the standard library's tree agree with
LibCST's own positions, for every statement of real modules and of every block form."""

from __future__ import annotations

import ast
import sysconfig
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from migrate_tpu.codemod.foundation.lines import StatementLines

BLOCKS = '''\
@decorator(
    1)
def f(a, b=2):
    """Doc."""
    x = 1; y = 2
    if a: z = 3; w = 4
    elif b:
        pass
    else:
        return (x +
                y)
    for i in a:
        continue
    else:
        pass
    while b:
        break
    else:
        pass
    try:
        pass
    except ValueError as e:
        raise
    else:
        pass
    finally:
        pass
    try:
        pass
    except* TypeError:
        pass
    with a as c, b:
        yield c
    match a:
        case [1, *rest]:
            pass
        case _:
            pass
    class Inner(Base):
        attribute = 1
    async def g():
        async for q in a:
            await q
        async with b:
            pass
    return x
'''


class _Paths(cst.CSTVisitor):
    """Every statement with its path from the module."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        self.stack = []
        self.found = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.stack.append(node)
        if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.SimpleStatementLine)):
            self.found.append((tuple(self.stack), self.get_metadata(PositionProvider, node)))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


def _check(source: str) -> int:
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    paths = _Paths()
    wrapper.visit(paths)
    lines = StatementLines(module, ast.parse(source))
    for path, position in paths.found:
        node = path[-1]
        got = lines.of((module,) + path[1:] if path[0] is not module else path)
        first = position.start.line
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            # the header: from the first decorator to the line before the body
            top = first if not node.decorators else wrapper.resolve(PositionProvider)[node.decorators[0]].start.line
            assert got is not None and got[0] == top and got[0] <= first <= got[1], (type(node).__name__, got, first)
        elif isinstance(node, cst.BaseCompoundStatement):
            # LibCST's span of a block ends after its last line's newline; the statement's last line is one before
            want = (first, position.end.line - (1 if position.end.column == 0 else 0))
            assert got == want, (type(node).__name__, got, want)
        else:
            assert got == (first, position.end.line), (type(node).__name__, source.splitlines()[first - 1], got)
    return len(paths.found)


def test_every_block_form():
    assert _check(BLOCKS) > 40


@pytest.mark.slow
def test_real_modules():
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in ("textwrap.py", "argparse.py", "asyncio/tasks.py"):
        assert _check((stdlib / name).read_text(encoding="utf-8")) > 100


def test_a_node_in_a_header_gets_the_header():
    source = "if cond(\n    1):\n    a = 1\n    b = 2\n"
    module = cst.parse_module(source)
    statement = module.body[0]
    test = statement.test
    lines = StatementLines(module, ast.parse(source))
    assert lines.of((module, statement, test)) == (1, 2)
    assert lines.of((module, statement, statement.body, statement.body.body[1])) == (4, 4)


def test_trees_that_do_not_line_up_give_nothing():
    module = cst.parse_module("a = 1\nb = 2\n")
    assert StatementLines(module, ast.parse("a = 1\n")).of((module, module.body[1])) is None


def test_a_patch_of_a_file_with_a_suppression_names_the_lines_of_each_change():
    """A file with a ``# migrate-tpu: ignore`` comment and a change, in diff mode: the
    suppression check and the changed lines each read their own lines (they once shared
    a variable, and every such file ended in an internal error)."""
    from migrate_tpu.codemod.migration.api import migrate
    from migrate_tpu.codemod.foundation.options import Options

    source = (
        "import tensorflow as tf\n\n"
        "resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')  # migrate-tpu: ignore[TPU202]\n"
        "strategy = tf.distribute.experimental.TPUStrategy(resolver)\n"
    )
    outcome = migrate(source, Options(mode="diff"))
    assert [(r.rule, r.line) for r in outcome.reports] == [("TPU103", 4)]
    assert outcome.reports[0].change_lines == [(4, 4)]
    assert "tf.distribute.TPUStrategy(resolver)" in outcome.code
