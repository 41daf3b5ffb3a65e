"""A notebook written back byte for byte: only the migrated text of a source changes.

Each code cell's last line is migrated (`experimental_run_v2` -> `run`), so a writer that
adds or drops a cell's trailing newline, or lays a source out otherwise (a list of lines
or one string, the list's separators), changes bytes that the expected file, the input
with only that name replaced, does not have. Compared as bytes, not as decoded JSON.
"""

from __future__ import annotations

import json

import pytest

from migrate_tpu.codemod.migration.migrator import TPUMigrator
from migrate_tpu.compose import EngineMigrator
from migrate_tpu.engine.notebook import migrate_notebook

MIGRATOR = EngineMigrator(TPUMigrator())
OLD, NEW = "experimental_run_v2", "run"
CALL = "out = strategy.experimental_run_v2(tf.function(abs), args=(1,))"


def _notebook(cells: str) -> bytes:
    """A notebook as Jupyter writes it (indent 1, sorted keys, a newline at the end)."""
    return (
        '{\n "cells": [\n' + cells + '\n ],\n "metadata": {\n  "language_info": {\n   "name": "python"\n  }\n },\n'
        ' "nbformat": 4,\n "nbformat_minor": 4\n}\n'
    ).encode("utf-8")


def _code_cell(source_json: str) -> str:
    return (
        '  {\n   "cell_type": "code",\n   "execution_count": null,\n   "metadata": {},\n   "outputs": [],\n'
        f'   "source": {source_json}\n  }}'
    )


def _lines(*lines: str) -> str:
    """A source as a list of lines, one a row, as Jupyter lays it out."""
    return "[\n" + ",\n".join("    " + json.dumps(line) for line in lines) + "\n   ]"


SOURCES = {
    "list, ends with a newline": _lines("import tensorflow as tf\n", CALL + "\n"),
    "list, no newline at the end": _lines("import tensorflow as tf\n", CALL),
    "string, ends with a newline": json.dumps("import tensorflow as tf\n" + CALL + "\n"),
    "string, no newline at the end": json.dumps("import tensorflow as tf\n" + CALL),
    "list, one line, no newline": _lines("import tensorflow as tf; " + CALL),
    "list, a blank line last": _lines("import tensorflow as tf\n", CALL + "\n", "\n"),
}


def _migrated(data: bytes) -> bytes:
    new_data, reports, _ = migrate_notebook(data, MIGRATOR, "nb.ipynb", "nb.ipynb")
    assert reports and {(report.rule, report.applied) for report in reports} == {("TPU101", True)}, reports
    return new_data


@pytest.mark.parametrize("source", list(SOURCES.values()), ids=list(SOURCES))
def test_one_cell_is_written_back_byte_for_byte(source):
    data = _notebook(_code_cell(source))
    assert _migrated(data) == data.replace(OLD.encode(), NEW.encode())


def test_cells_of_every_layout_in_one_notebook_are_written_back_byte_for_byte():
    """Each cell keeps its own ending, whatever the cell before or after it has."""
    data = _notebook(",\n".join(_code_cell(source) for source in SOURCES.values()))
    assert _migrated(data) == data.replace(OLD.encode(), NEW.encode())


def test_a_notebook_on_one_line_with_string_sources_stays_on_one_line():
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": "import tensorflow as tf\n" + CALL}]
    data = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}).encode("utf-8")
    assert _migrated(data) == data.replace(OLD.encode(), NEW.encode())
