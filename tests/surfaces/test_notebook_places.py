"""Where a notebook's findings are reported: in the coordinates of their cell (first and last
line, and for a fix that could not be written, where it was as read)."""

import json
from pathlib import Path

CELLS = [
    ["import tensorflow as tf\n", "x = 1\n", "y = 2\n"],
    None,  # a markdown cell: counted, never run
    ["resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='local')\n",
     "strategy = tf.distribute.experimental.TPUStrategy(\n",
     "    resolver)\n",
     "model.compile(optimizer='adam',\n",
     "              loss='mse',\n",
     "              experimental_run_tf_function=False)\n",
     "other = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')\n"],  # a manual finding below a removed line
]


def notebook(path: Path) -> Path:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# title\n"]} if source is None else
             {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source} for source in CELLS]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}, indent=1))
    return path


def test_a_finding_over_two_lines_of_a_cell_is_reported_on_those_lines(cli, tmp_path):
    notebook(tmp_path / "nb.ipynb")
    done = cli("check", "--no-cache", "--format", "json", "nb.ipynb")
    findings = {f["rule"]: f for f in json.loads(done.stdout)["findings"]}
    assert (findings["TPU401"]["cell"], findings["TPU401"]["line"], findings["TPU401"]["end_line"]) == (3, 4, 6)
    assert (findings["TPU103"]["cell"], findings["TPU103"]["line"], findings["TPU103"]["end_line"]) == (3, 2, 2)
    edit = findings["TPU103"]["edits"][0]
    assert (edit["line"], edit["end_line"]) == (2, 3)


def test_a_notebook_changed_during_fix_reports_its_findings_where_they_were_as_read(tmp_path):
    from migrate_tpu.codemod.migration.migrator import TPUMigrator
    from migrate_tpu.compose import EngineMigrator
    from migrate_tpu.engine.pipeline import run

    path = notebook(tmp_path / "nb.ipynb")

    class EditsTheFileFirst(TPUMigrator):
        def migrate(self, text, path="<stdin>", line_offset=0):
            Path(str(tmp_path / "nb.ipynb")).write_text(Path(str(tmp_path / "nb.ipynb")).read_text() + "\n")
            return super().migrate(text, path, line_offset)

    (result,) = run([path], EngineMigrator(EditsTheFileFirst()), "fix", jobs=1)
    assert "changed on disk" in (result.error or "")
    places = {r.rule: (r.cell, r.line, r.end_line, r.applied) for r in result.reports}
    # nothing applied: each finding back at its place in its cell, as the file was read (the manual
    # TPU202 was found at line 6 of the fixed cell, one line up: its place as read is line 7)
    assert places["TPU103"] == (3, 2, 2, False)
    assert places["TPU401"] == (3, 4, 6, False)
    assert places["TPU202"] == (3, 7, 7, False)


def test_a_fixed_notebooks_findings_keep_their_places_as_read_in_their_cells(tmp_path):
    """`fix` keeps each finding's place in the notebook as read (reported there when the fixed
    file cannot be written): in its cell's lines, and in the JSON text."""
    from migrate_tpu.codemod.foundation.options import Options
    from migrate_tpu.codemod.migration.migrator import TPUMigrator
    from migrate_tpu.compose import EngineMigrator
    from migrate_tpu.engine.notebook import migrate_notebook

    path = notebook(tmp_path / "nb.ipynb")
    _, reports, _ = migrate_notebook(path.read_bytes(), EngineMigrator(TPUMigrator(Options(mode="fix"))), str(path), "nb.ipynb")
    places = {r.rule: (r.cell, r.line, r.applied, r.as_read, r.file_as_read) for r in reports}
    # the applied fixes have no line in the fixed cell; the manual TPU202 is at line 6 of it, 7 as read
    assert places["TPU103"] == (3, 0, True, (2, 12, 2, 50), (28, 17))
    assert places["TPU401"] == (3, 0, True, (4, 1, 6, 50), (30, 6))
    assert places["TPU202"] == (3, 6, False, (7, 9, 7, 66), (33, 14))
