"""The spliced code of a changed module is byte for byte LibCST's own code generation."""

from __future__ import annotations

import random
import sysconfig
from pathlib import Path

import libcst as cst
import pytest

from migrate_tpu.codemod.framework.edits import splice_code

TRICKY = [
    '"""Doc."""\nimport os\n\n\n# comment\n@decorator  # why\n# between\n@other(\n    1)\ndef f():\n    pass\n'
    "    # indented trailer\n# outdented\nx = 1; y = 2\n\n# footer\n",
    "import os\r\nx = 1\r\n\r\nclass A:\r\n    pass\r\n",
    "x = 1\ny = 2",  # no trailing newline
    "if x:\n    pass\nelse:\n    pass\n\n\n\nz = (\n    1,\n)\n",
    "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\ns = '''\nmulti\nline'''\nt = 'é' + \"\\u00e9\"\n",
    "def f(): return 1\nasync def g():\n    await f()\n",
    "x = 1 \\\n    + 2\ny = 3\n",
    "\n\n\n",
    "",
]


def _variants(module: cst.Module, rng: random.Random):
    """Replace, insert and remove top-level statements the way the rules' edits do."""
    body = list(module.body)
    new_line = cst.parse_statement("import inserted_module\n")
    if body:
        k = rng.randrange(len(body))
        changed = list(body)
        changed[k] = body[k].with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment("# changed"))])
        yield changed
        yield body[:k] + body[k + 1 :]
        yield body[:k] + [new_line] + body[k:]
        yield body[: k + 1] + [new_line, new_line.deep_clone()] + body[k + 1 :]
        yield [new_line] + [body[0].with_changes(leading_lines=[])] + body[1:]
    yield body + [new_line]
    yield [new_line] + body


def _check(source: str, rng: random.Random) -> int:
    try:
        module = cst.parse_module(source)
    except Exception:
        return 0
    if module.code != source:
        return 0  # LibCST does not round-trip this file (the splice keeps its bytes: see below)
    spliced = 0
    for body in _variants(module, rng):
        new = module.with_changes(body=body)
        result = splice_code(module, new, source)
        if result is not None:
            assert result == new.code
            spliced += 1
    return spliced


@pytest.mark.parametrize("source", TRICKY)
def test_tricky_layouts(source):
    _check(source, random.Random(1))


def test_applies_to_ordinary_files():
    """Not a silent fallback everywhere: ordinary files are spliced."""
    assert _check(TRICKY[0], random.Random(1)) > 0
    assert _check(TRICKY[1], random.Random(1)) > 0


def test_declines_without_trailing_newline():
    module = cst.parse_module(TRICKY[2])
    assert splice_code(module, module.with_changes(body=list(module.body)[:1]), TRICKY[2]) is None


@pytest.mark.slow
def test_standard_library_sample():
    """Real files of every shape: a seeded sample of the standard library."""
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))
    rng = random.Random(2020)
    spliced = 0
    for path in rng.sample(files, min(25, len(files))):
        spliced += _check(path.read_text(encoding="utf-8", errors="surrogateescape"), rng)
    assert spliced > 60


def test_untouched_statements_keep_their_bytes():
    """Where LibCST's code generation would not reproduce a statement, an untouched one stays as written."""
    source = "try:\n    pass\nexcept (A, B) :\n    pass\nx = 1\n"
    module = cst.parse_module(source)
    if module.code == source:
        pytest.skip("this LibCST round-trips the statement")
    new = module.with_changes(body=list(module.body[:1]) + [cst.parse_statement("x = 2\n")])
    assert splice_code(module, new, source) == "try:\n    pass\nexcept (A, B) :\n    pass\nx = 2\n"


def test_the_generated_statements_are_what_the_splice_did_not_copy():
    source = "import os\n\nx = 1\n\n\ny = 2\n"
    old = cst.parse_module(source)
    body = list(old.body)
    body[1] = cst.parse_statement("x = 10\n").with_changes(leading_lines=body[1].leading_lines)
    generated = []
    code = splice_code(old, old.with_changes(body=body), source, generated=generated)
    assert code == "import os\n\nx = 10\n\n\ny = 2\n"
    assert generated == ["\nx = 10\n"]


def test_the_output_check_compiles_the_generated_statements_or_the_whole_module():
    from migrate_tpu.codemod.migration.api import _output_compiles

    # a generated statement that does not compile is caught without compiling the module
    assert not _output_compiles("x = 1\n", ["y = (\n"])
    assert _output_compiles("x = 1\n", ["y = 2\n", "z = 3\n"])
    # nothing spliced: the whole module
    assert not _output_compiles("y = (\n", None)
    assert _output_compiles("y = (\n    1)\n", None)
