"""codemod/positions.py drives LibCST's private code generation state (``CodegenState``),
and codemod/parsing.py turns LibCST's node validation off for the length of a parse.

Its spans must equal those of LibCST's public ``PositionProvider`` for every kind of
node, with the LibCST that is installed: a release that changes the private
interface fails here at once. pyproject.toml bounds LibCST to the range tested
(see benchmarks/README.md, "LibCST versions", for running against the newest).
"""

from __future__ import annotations

import sysconfig
from importlib.metadata import version
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from migrate_tpu.codemod.foundation import parsing
from migrate_tpu.codemod.analysis.tree import iter_tree
from migrate_tpu.codemod.framework.edits import statement_starts
from migrate_tpu.codemod.foundation.positions import spans

SOURCE = '''"""Doc."""
import tensorflow as tf


@tf.function(  # a decorator over lines
    jit_compile=True)
def step(x, *, scale=2.0):
    with strategy.scope():
        y = (x
             + 1)  # parenthesized
    return strategy.experimental_run_v2(lambda v: v * scale, args=(y,))


class Model(tf.keras.Model):
    """Docstring."""

    def call(self, inputs, training=None):
        if training:
            return [i for i in inputs if i]
        return {"a": inputs, **extra}
'''


class _Every(cst.CSTVisitor):
    def __init__(self) -> None:
        self.nodes = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.nodes.append(node)
        return True


def _public_spans(source: str):
    wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
    collector = _Every()
    wrapper.visit(collector)
    positions = wrapper.resolve(PositionProvider)
    return wrapper.module, collector.nodes, positions


# Known, deliberate difference: a block (a compound statement and its clauses) ends
# here after its last line's newline, where LibCST's provider ends it at the last
# token, and an indented block starts at its colon's newline. Their starts still match.
_BLOCKS = tuple(
    getattr(cst, name) for name in ("BaseCompoundStatement", "Else", "ExceptHandler", "ExceptStarHandler", "Finally") if hasattr(cst, name)
)


def _want(position):
    return (position.start.line, position.start.column, position.end.line, position.end.column)


def _same(source: str) -> int:
    module, nodes, positions = _public_spans(source)
    ours = spans(module, nodes)
    for node in nodes:
        if isinstance(node, cst.IndentedBlock):
            continue
        want = _want(positions[node])
        got = ours[id(node)]
        if isinstance(node, _BLOCKS):
            got, want = got[:2], want[:2]
        assert got == want, (type(node).__name__, module.code_for_node(node)[:60], got, want)
    return len(nodes)


def test_every_node_matches_libcst_positions():
    assert _same(SOURCE) > 150


def test_a_real_module_matches_libcst_positions():
    source = (Path(sysconfig.get_paths()["stdlib"]) / "textwrap.py").read_text(encoding="utf-8")
    assert _same(source) > 1000


def test_a_few_nodes_stop_early_and_still_match():
    module, nodes, positions = _public_spans(SOURCE)
    wanted = [n for n in nodes if isinstance(n, (cst.Call, cst.Decorator))][:3]
    ours = spans(module, wanted)
    assert set(ours) == {id(n) for n in wanted}
    for node in wanted:
        assert ours[id(node)] == _want(positions[node])


def test_installed_libcst_is_in_the_declared_range():
    """The range in pyproject.toml is the one these tests ran against."""
    major, minor = (int(part) for part in version("libcst").split(".")[:2])
    assert (1, 1) <= (major, minor) < (2, 0), version("libcst")


def _stdlib_sample():
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return [SOURCE] + [(stdlib / name).read_text(encoding="utf-8") for name in ("textwrap.py", "dataclasses.py", "argparse.py")]


@pytest.mark.slow
def test_a_trusted_parse_builds_the_tree_a_validated_parse_builds():
    for source in _stdlib_sample():
        trusted = parsing.parse_module(source)
        assert trusted.deep_equals(cst.parse_module(source))
        assert trusted.code == source


def test_validation_is_back_after_a_trusted_parse_and_after_one_that_fails():
    def bad_node():  # 'not' glued to its operand: LibCST's validation refuses it
        return cst.UnaryOperation(operator=cst.Not(whitespace_after=cst.SimpleWhitespace("")), expression=cst.Name("x"))

    parsing.parse_module(SOURCE)
    try:
        bad_node()
        raise AssertionError("validation stayed off after a parse")
    except cst.CSTValidationError:
        pass
    try:
        parsing.parse_module("def (:\n")
        raise AssertionError("a syntax error was accepted")
    except cst.ParserSyntaxError:
        pass
    try:
        bad_node()
        raise AssertionError("validation stayed off after a failed parse")
    except cst.CSTValidationError:
        pass


def _tops(module):
    """Each node's top-level statement, as the analysis walk would remember it."""
    tops = {}
    for statement in module.body:
        for node in iter_tree(statement):
            tops[id(node)] = statement
    return tops


@pytest.mark.slow
def test_statement_by_statement_spans_match_libcst_positions():
    """Given where each top-level statement begins, only the statements holding a wanted
    node are generated, each from its own line: the spans are LibCST's all the same."""
    for source in _stdlib_sample():
        module, nodes, positions = _public_spans(source)
        starts = statement_starts(module, source)
        assert starts is not None
        tops = _tops(module)
        # The last statement's nodes: the statements above it are not generated at all.
        wanted = [n for n in nodes if tops.get(id(n)) is module.body[-1]] + [n for n in nodes if isinstance(n, cst.Call)][:5]
        ours = spans(module, wanted, source=source, starts=starts, tops=tops)
        assert set(ours) == {id(n) for n in wanted}
        for node in wanted:
            got, want = ours[id(node)], _want(positions[node])
            if isinstance(node, _BLOCKS):
                got, want = got[:2], want[:2]
            if not isinstance(node, cst.IndentedBlock):
                assert got == want, (type(node).__name__, got, want)


def test_a_node_not_in_the_statement_named_for_it_falls_back_to_the_whole_module():
    module, nodes, positions = _public_spans(SOURCE)
    starts = statement_starts(module, SOURCE)
    call = next(n for n in nodes if isinstance(n, cst.Call) and module.code_for_node(n).startswith("strategy.experimental_run_v2"))
    # Told the call sits in the first statement (it is in ``step``'s body): not found there.
    wrong = {id(call): module.body[0]}
    assert spans(module, [call], source=SOURCE, starts=starts, tops=wrong)[id(call)] == _want(positions[call])
    # Without a statement for it at all, the same.
    assert spans(module, [call], source=SOURCE, starts=starts, tops={})[id(call)] == _want(positions[call])


# Statements in blocks of every kind, on their own lines and not: decorators with comments
# between them, comments and blank lines (indented or not) before statements, ``a; b``,
# one-line suites, an ``elif`` chain, tabs, non-ASCII text, a backslash continuation.
NESTED = '''import tensorflow as tf


class Trainer(object):
    """Trains."""

    # a comment before a decorated method
    @staticmethod

    # between the decorators
    @tf.function(jit_compile=True)
    def step(x):
        # first
        y = strategy.run(f, args=(x,)); z = y  # two on a line

        if x:  y = strategy.run(g)
        elif y > 1:
            return tf.distribute.experimental.TPUStrategy(r)
        elif y:
            pass
        else:
# dedented comment inside a block
            for i in range(3):
                while i:
                    i -= strategy.run(h, args=("é", i))
                else:
                    pass
            else:
                try:
                    with tf.device("x") as d, \\
                            strategy.scope():
                        async def inner():
                            await strategy.run(k)
                except (ValueError, TypeError) as error:
                    raise RuntimeError("ünïcode") from error
                else:
                    v = [strategy.run(m) for m in ms]
                finally:
                    w = {k: strategy.run(k) for k in ks}
        return z


def tabbed(a):
\tif a:
\t\treturn strategy.run(a)
\treturn None
'''


class _Paths(cst.CSTVisitor):
    """Every node with its path from the module, as the analysis walk remembers them."""

    def __init__(self) -> None:
        self.stack = []
        self.paths = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.stack.append(node)
        self.paths[id(node)] = tuple(self.stack)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


def _inner_starts(module, source):
    import ast

    from migrate_tpu.codemod.foundation.lines import StatementLines

    lines = StatementLines(module, ast.parse(source))
    collector = _Paths()
    module.visit(collector)
    return {key: start for key, path in collector.paths.items() for start in [lines.start_of(path)] if start is not None}


@pytest.mark.slow
def test_each_node_generated_from_its_innermost_statement_matches_libcst_positions(monkeypatch):
    """Told the innermost statement on its own line that holds each node, the spans come
    from generating that statement alone, and are LibCST's all the same."""
    from migrate_tpu.codemod.foundation import positions

    generated = []
    original = positions._spans_from

    def counted(*args):
        generated.append(original(*args))
        return generated[-1]

    monkeypatch.setattr(positions, "_spans_from", counted)
    for source in [NESTED, SOURCE] + _stdlib_sample()[1:2]:
        module, nodes, positions_of = _public_spans(source)
        starts = statement_starts(module, source)
        inner = _inner_starts(module, source)
        tops = _tops(module)
        # Most nodes sit below the top level: their statement is not a top-level one.
        below = [n for n in nodes if id(n) in inner and inner[id(n)][0] not in module.body]
        assert len(below) > len(nodes) // 3
        del generated[:]
        for node in nodes:  # one node at a time: each generated from its own statement
            got = spans(module, [node], source=source, starts=starts, tops=tops, inner=inner)[id(node)]
            want = _want(positions_of[node])
            if isinstance(node, cst.IndentedBlock):
                continue
            if isinstance(node, _BLOCKS):
                got, want = got[:2], want[:2]
            assert got == want, (type(node).__name__, module.code_for_node(node)[:60], got, want)
        # Every node's own statement lined up: none fell back to its top-level statement.
        assert len(generated) == len([n for n in nodes if id(n) in inner]) and None not in generated


def test_innermost_statements_are_those_on_their_own_lines():
    module = cst.parse_module(NESTED)
    inner = _inner_starts(module, NESTED)
    source_lines = NESTED.splitlines()
    found = {}
    for statement, line, blocks in inner.values():
        found[id(statement)] = (line, len(blocks), source_lines[line - 1].strip())
    starts = sorted(found.values())
    # ``y = ...; z = y`` is one statement line; the decorated method begins at its first
    # decorator, below its comment; a one-line suite belongs to its ``if``; the statements
    # under ``elif`` and ``else`` are their own, the clauses are not.
    assert (14, 2, "y = strategy.run(f, args=(x,)); z = y  # two on a line") in starts
    assert (8, 1, "@staticmethod") in starts
    assert (16, 2, "if x:  y = strategy.run(g)") in starts
    assert (18, 3, "return tf.distribute.experimental.TPUStrategy(r)") in starts
    assert not any(text.startswith(("elif", "else", "except", "finally")) for _, _, text in starts)
    assert (25, 5, 'i -= strategy.run(h, args=("é", i))') in starts
    assert (30, 5, 'with tf.device("x") as d, \\') in starts
    assert (33, 7, "await strategy.run(k)") in starts
    assert (35, 5, 'raise RuntimeError("ünïcode") from error') in starts
    assert (45, 2, "return strategy.run(a)") in starts


def test_an_inner_statement_whose_text_does_not_line_up_falls_back_to_its_top_level_one():
    module, nodes, positions_of = _public_spans(NESTED)
    starts = statement_starts(module, NESTED)
    inner = _inner_starts(module, NESTED)
    call = next(n for n in nodes if isinstance(n, cst.Call) and module.code_for_node(n) == "strategy.run(k)")
    statement, line, blocks = inner[id(call)]
    for wrong in [(statement, line + 1, blocks), (statement, line, blocks[1:]), (module.body[0], 1, ())]:
        got = spans(module, [call], source=NESTED, starts=starts, tops=_tops(module), inner={id(call): wrong})
        assert got[id(call)] == _want(positions_of[call])
