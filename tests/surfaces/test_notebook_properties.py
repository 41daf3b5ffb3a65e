"""Properties of the notebook layer over generated notebooks and layouts,
with the real migrator: only code-cell sources change, IPython lines survive
byte for byte, the layout is kept, and a second pass changes nothing."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrate_tpu.codemod.migration.migrator import TPUMigrator
from migrate_tpu.compose import EngineMigrator
from migrate_tpu.engine.notebook import migrate_notebook

MIGRATOR = EngineMigrator(TPUMigrator())

LINES = [
    "import tensorflow as tf",
    "import numpy as np",
    "strategy = tf.distribute.experimental.TPUStrategy(resolver)",
    "out = strategy.experimental_run_v2(tf.function(abs), args=(1,))",
    "ds = strategy.experimental_distribute_datasets_from_function(lambda ctx: None)",
    "x = (10\n     % 3)",  # `%` starting a continuation line is Python
    "%matplotlib inline",
    "!pip install -q tensorflow==2.1.0",
    "files = !ls",
    "%time out = strategy.experimental_run_v2(tf.function(abs), args=(1,))",
    "strategy?",
    "# a comment with ünïcode",
    "print('%d cores' % 8)",
    "",
]


@st.composite
def cells(draw):
    kind = draw(st.sampled_from(["code", "code", "code", "markdown"]))
    lines = draw(st.lists(st.sampled_from(LINES), max_size=6))
    text = "\n".join(lines)
    if draw(st.booleans()) and kind == "code":
        text = draw(st.sampled_from(["%%time\n", "%%bash\n", ""])) + text
    if draw(st.booleans()):
        text += "\n"
    as_list = draw(st.booleans())
    source = text.splitlines(keepends=True) if as_list else text
    cell = {"cell_type": kind, "metadata": {"id": draw(st.text("abc123", min_size=1, max_size=4))}, "source": source}
    if kind == "code":
        cell.update({"execution_count": draw(st.none() | st.integers(1, 99)), "outputs": []})
    return cell


@st.composite
def notebooks(draw):
    nb = {
        "cells": draw(st.lists(cells(), min_size=1, max_size=6)),
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 2,
    }
    style = draw(
        st.sampled_from(
            [
                {"indent": 1, "sort_keys": True, "ensure_ascii": False},
                {"indent": 2, "ensure_ascii": False},
                {"indent": None, "ensure_ascii": True},
                {"indent": "\t", "ensure_ascii": True},
            ]
        )
    )
    ending = draw(st.sampled_from(["", "\n"]))
    return nb, style, ending


def _source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _ipython_lines(text):
    """IPython lines; of `%time stmt` only the magic (the statement is migrated)."""
    lines = [line for line in text.splitlines() if line.lstrip().startswith(("%", "!")) or line.rstrip().endswith("?")]
    return [line.split(" ", 1)[0] if line.lstrip().startswith("%time ") else line for line in lines]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(notebooks())
@pytest.mark.slow  # 60 generated notebooks, each migrated twice: seconds on 2 cores
def test_only_sources_change_and_layout_is_kept(case):
    nb, style, ending = case
    data = (json.dumps(nb, **style) + ending).encode("utf-8")
    new_data, reports, _ = migrate_notebook(data, MIGRATOR, "nb.ipynb", "nb.ipynb")
    new = json.loads(new_data)
    # Everything but code sources is equal; markdown sources too.
    strip = lambda doc: [{k: v for k, v in c.items() if not (k == "source" and c["cell_type"] == "code")} for c in doc["cells"]]
    assert strip(new) == strip(nb) and {k: v for k, v in new.items() if k != "cells"} == {k: v for k, v in nb.items() if k != "cells"}
    # The file is what the same writer would have written for the new notebook.
    assert new_data.decode("utf-8") == json.dumps(new, **style) + ending
    for old_cell, new_cell in zip(nb["cells"], new["cells"]):
        assert type(old_cell["source"]) is type(new_cell["source"])
        assert _ipython_lines(_source(old_cell)) == _ipython_lines(_source(new_cell))
        if _source(old_cell).lstrip().startswith("%%bash"):
            assert new_cell == old_cell
    if new_data == data:
        assert not any(r.applied for r in reports)
    # A second pass has nothing left to do.
    again, _, _ = migrate_notebook(new_data, MIGRATOR, "nb.ipynb", "nb.ipynb")
    assert again == new_data
