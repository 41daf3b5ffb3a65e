"""Issue #6, part 3: idempotence and stability, by property tests and fuzzing.

- Generated TF 2.1 programs (aliases, comments and line breaks inside the
  calls that get edited, nesting in functions and ``with`` blocks): the output
  parses, a second pass changes nothing, and no comment is lost.
- Arbitrary Python from hypothesmith, and programs that spell TF paths on a
  module that is not TensorFlow: never changed.
- The fixtures, mutated (renamed alias, comments and line breaks inserted
  inside edited calls): the mutated input migrates to the same mutation of
  the expected output, or at least to parsing, stable output.

Everything runs the real codemod in process (it is pure: text in, text out),
with bounded example counts so that the suite stays quick.
"""

from __future__ import annotations

import ast
import keyword
import re
from pathlib import Path

import libcst
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from migrate_tpu.codemod.migration.api import migrate
from migrate_tpu.engine.pipeline import migrate_data

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
QUICK = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _hypothesmith(name: str):
    """hypothesmith's strategy ``name``, built when a test first draws from it: importing
    hypothesmith and building its grammar takes seconds, which only the slow tests that use
    it pay, not every collection of the suite."""

    def build():
        import hypothesmith

        return getattr(hypothesmith, name)()

    return st.deferred(build)


def fix(source: str) -> str:
    return migrate(source).code


def parses(source: str) -> bool:
    try:
        ast.parse(source)
        return True
    except SyntaxError:
        return False


def comments(source: str) -> list:
    return sorted(re.findall(r"#[^\n]*", source))


# -- generated TF 2.1 programs -------------------------------------------------------------

identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda name: not keyword.iskeyword(name) and name not in {"strategy", "step", "x", "resolver", "make", "model", "print", "range"}
)


@st.composite
def call_text(draw, head: str, arguments: list) -> str:
    """``head(arg, ...)`` with optional line breaks and comments between the arguments."""
    parts = [head + "("]
    broken = draw(st.booleans())
    for index, argument in enumerate(arguments):
        if broken:
            parts.append("\n    ")
            if draw(st.booleans()):
                parts.append(f"# arg {index}\n    ")
        parts.append(argument)
        if index < len(arguments) - 1 or (broken and draw(st.booleans())):
            parts.append(",")
            if not broken:
                parts.append(" ")
    if broken:
        parts.append("\n")
    parts.append(")")
    return "".join(parts)


@st.composite
def tf_programs(draw) -> str:
    alias = draw(st.sampled_from(["tf", "tensorflow", "tf2"]) | identifiers)
    lines = ["import tensorflow" if alias == "tensorflow" else f"import tensorflow as {alias}"]
    if draw(st.booleans()):
        lines.append("import numpy as np  # unrelated")
    lines.append(f"step = {alias}.function(lambda v: v * 2)")
    constructor = draw(call_text(f"{alias}.distribute.experimental.TPUStrategy", ["resolver"]))
    lines.append(f"strategy = {constructor}")
    blocks = draw(
        st.lists(
            st.sampled_from(["run", "datasets", "policy", "scope", "def", "plain", "comment", "blank"]),
            min_size=1,
            max_size=8,
        )
    )
    for number, block in enumerate(blocks):
        if block == "run":
            lines.append(f"out_{number} = " + draw(call_text("strategy.experimental_run_v2", ["step", "args=(x,)"])))
        elif block == "datasets":
            lines.append(f"data_{number} = " + draw(call_text("strategy.experimental_distribute_datasets_from_function", ["make"])))
        elif block == "policy":
            lines.append(draw(call_text(f"{alias}.keras.mixed_precision.experimental.set_policy", ['"mixed_bfloat16"'])))
        elif block == "scope":
            lines.append(f"with strategy.scope():  # block {number}\n    model_{number} = make()")
        elif block == "def":
            inner = draw(call_text("strategy.experimental_run_v2", ["step", "args=(batch,)"]))
            inner = inner.replace("\n", "\n    ")
            lines.append(f"\n\ndef replica_{number}(batch):\n    # inside {number}\n    return {inner}\n")
        elif block == "plain":
            lines.append(f"value_{number} = [i * {number} for i in range(3)]")
        elif block == "comment":
            lines.append(f"# note {number}: experimental_run_v2 stays in comments")
        else:
            lines.append("")
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = "\n".join(lines) + draw(st.sampled_from(["\n", ""]))
    return text.replace("\n", newline)


@QUICK
@given(tf_programs())
@pytest.mark.slow  # 60 generated programs: seconds on 2 cores
def test_generated_programs_migrate_to_stable_parsing_code(source):
    assert parses(source), source
    once = fix(source)
    assert parses(once), f"output does not parse:\n{once}"
    assert fix(once) == once, "a second pass changed the output"
    assert comments(once) == comments(source), "comments were lost or duplicated"
    assert once != source
    assert ".experimental_run_v2(" not in once and "distribute.experimental.TPUStrategy" not in once


@QUICK
@given(tf_programs())
@pytest.mark.slow  # 60 generated programs: seconds on 2 cores
def test_the_engine_writes_what_the_codemod_gives(source):
    from migrate_tpu.codemod.migration.migrator import TPUMigrator
    from migrate_tpu.compose import EngineMigrator

    data = source.encode()
    result, new_data = migrate_data(Path("generated.py"), data, EngineMigrator(TPUMigrator()), "fix")
    assert result.error is None, result.error
    expected = fix(source)
    assert (new_data or data) == expected.encode()


# -- files without TensorFlow ------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(_hypothesmith("from_grammar"))
@pytest.mark.slow
def test_arbitrary_python_without_tensorflow_is_never_changed(source):
    assume("tensorflow" not in source and "experimental_run_v2" not in source)
    try:
        libcst.parse_module(source)
    except Exception:
        assume(False)
    assert fix(source) == source


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(_hypothesmith("from_node"))
@pytest.mark.slow
def test_arbitrary_module_trees_without_tensorflow_are_never_changed(source):
    assume("tensorflow" not in source and "experimental_run_v2" not in source)
    try:
        libcst.parse_module(source)
    except Exception:
        assume(False)
    assert fix(source) == source


@QUICK
@given(
    module=st.sampled_from(["numpy", "mylib.tpu", "jax.numpy"]),
    alias=st.sampled_from(["tf", "tensorflow", "distribute"]),
    calls=st.lists(
        st.sampled_from(
            [
                "{a}.distribute.experimental.TPUStrategy(resolver)",
                "{a}.keras.mixed_precision.experimental.set_policy('mixed_bfloat16')",
                "{a}.distribute.experimental.ParameterServerStrategy(resolver)",
                "{a}.compat.v1.distribute.experimental.TPUStrategy(resolver)",
            ]
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_lookalike_paths_on_other_modules_are_never_changed(module, alias, calls):
    source = f"import {module} as {alias}\n" + "".join(f"value_{i} = {call.format(a=alias)}\n" for i, call in enumerate(calls))
    assert fix(source) == source


# -- mutations of the fixtures -----------------------------------------------------------


def _fixture_pairs():
    """Fixture pairs that migrate on their own (no project context, default options)."""
    pairs = []
    for before in sorted(FIXTURES.glob("*/before/**/*.py")):
        after = Path(str(before).replace("/before/", "/after/", 1))
        if after.exists() and (before.parent.parent / "case.toml").exists() is False:
            try:
                if fix(before.read_text(encoding="utf-8-sig")) == after.read_text(encoding="utf-8-sig"):
                    pairs.append((before, after))
            except Exception:
                continue
    return pairs


PAIRS = _fixture_pairs()
EDITED_CALLS = re.compile(r"\.(experimental_run_v2|run|experimental_distribute_datasets_from_function|distribute_datasets_from_function|TPUStrategy)\(")


def rename_alias(source: str, old: str, new: str) -> str:
    """Rename an import alias everywhere it is a name (not inside strings or comments)."""
    module = libcst.parse_module(source)

    class Rename(libcst.CSTTransformer):
        def leave_Name(self, original, updated):
            return updated.with_changes(value=new) if updated.value == old else updated

    return module.visit(Rename()).code


def insert_inside_calls(source: str, text: str) -> str:
    """Put ``text`` right after the opening parenthesis of every edited call."""
    return EDITED_CALLS.sub(lambda match: match.group(0) + text, source)


@pytest.mark.skipif(not PAIRS, reason="no fixtures")
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(pair=st.sampled_from(PAIRS or [None]), new_alias=st.sampled_from(["tfx", "flow", "T", "tensorflow_v2"]))
@pytest.mark.slow
def test_renamed_alias_migrates_like_the_original(pair, new_alias):
    before, after = (path.read_text(encoding="utf-8-sig") for path in pair)
    match = re.search(r"^import tensorflow as (\w+)$", before, re.MULTILINE)
    assume(match is not None)
    old_alias = match.group(1)
    assume(not re.search(rf"\b{new_alias}\b", before))
    try:
        mutated_before = rename_alias(before, old_alias, new_alias)
        mutated_after = rename_alias(after, old_alias, new_alias)
    except libcst.ParserSyntaxError:
        assume(False)
    assert fix(mutated_before) == mutated_after


# Every fixture with every insertion, each run: a sample could miss the one that breaks.
@pytest.mark.skipif(not PAIRS, reason="no fixtures")
@pytest.mark.parametrize("inserted", ["\n    ", "  # keep me\n    ", "\n    # a whole-line comment\n    ", "  \\\n    "])
@pytest.mark.parametrize("pair", PAIRS, ids=lambda pair: f"{pair[0].parent.parent.name}/{pair[0].name}")
def test_comments_and_line_breaks_inside_edited_calls(pair, inserted):
    before = pair[0].read_text(encoding="utf-8-sig")
    mutated = insert_inside_calls(before, inserted)
    if mutated == before or not parses(mutated):
        pytest.skip("no edited call takes this insertion")
    once = fix(mutated)
    assert parses(once)
    assert fix(once) == once
    # Every inserted comment survives, except inside code a fix deletes (the dead
    # branch of a collapsed version guard goes whole, as in pyupgrade): the comments
    # are those of the plain migration with the same text inserted in its calls.
    plain = fix(before)
    assert comments(once) == comments(insert_inside_calls(plain, inserted))
    # The same edits happen as without the inserted text.
    assert _squash(once) == _squash(insert_inside_calls(plain, inserted))


def _squash(source: str) -> str:
    """Source without comments, whitespace and line continuations, for comparing edits."""
    return re.sub(r"\s+|\\\n|#[^\n]*", "", source)


@pytest.mark.skipif(not PAIRS, reason="no fixtures")
@pytest.mark.parametrize("pair", PAIRS, ids=lambda pair: f"{pair[0].parent.parent.name}/{pair[0].name}")
def test_fixture_output_is_a_fixed_point(pair):
    after = pair[1].read_bytes()
    text = after.decode("utf-8-sig")
    assert fix(text) == text
