"""Notebooks through diff, fix and check: cells as one program, magics kept,
the JSON text kept byte for byte outside the changed source lines."""

from __future__ import annotations

import difflib
import json
import re

import pytest

from migrate_tpu.engine.notebook import mask_cell, unmask

from .conftest import FIXTURES


def _lines_changed(before: str, after: str):
    removed, added = [], []
    for line in difflib.ndiff(before.splitlines(), after.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


def _sources(path):
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in json.loads(path.read_text("utf-8"))["cells"]]


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_fix_changes_only_migrated_source_lines(run_cli, fixture_copy):
    notebook = fixture_copy("tpu_colab.ipynb")
    before = notebook.read_text("utf-8")
    result = run_cli("fix", notebook.name)
    assert result.returncode == 1, result.stderr  # TPU202 is manual work
    after = notebook.read_text("utf-8")
    removed, added = _lines_changed(before, after)
    assert removed == [
        '        "strategy = tf.distribute.experimental.TPUStrategy(resolver)  # ünïcode comment\\n",',
        '        "    per_replica = strategy.experimental_run_v2(step_fn, args=(batch,))\\n",',
    ]
    assert added == [
        '        "strategy = tf.distribute.TPUStrategy(resolver)  # ünïcode comment\\n",',
        '        "    per_replica = strategy.run(step_fn, args=(batch,))\\n",',
    ]
    # Everything but those two sources decodes the same: outputs, counts, metadata.
    old, new = json.loads(before), json.loads(after)
    for cell in old["cells"] + new["cells"]:
        cell.pop("source")
    assert old == new
    assert after.endswith("}\n") and after.count("\n") == before.count("\n")


def test_magics_shell_lines_and_cell_magics_are_kept_exactly(run_cli, fixture_copy):
    notebook = fixture_copy("tpu_colab.ipynb")
    old = _sources(notebook)
    run_cli("fix", notebook.name)
    new = _sources(notebook)
    assert new[1] == old[1] and new[1].startswith("%tensorflow_version 2.x\n")
    assert new[2] == old[2] and new[2].startswith("!echo")
    assert new[7] == old[7] and "experimental_run_v2" in new[7]  # %%bash cell
    assert new[0] == old[0] and new[4] == old[4]  # markdown
    # `strategy` is defined in cell 4 and its use in cell 6 was migrated.
    assert "strategy.run(step_fn" in new[5]


@pytest.mark.slow
def test_unchanged_notebook_stays_byte_identical(run_cli, fixture_copy):
    notebook = fixture_copy("tpu_colab.ipynb")
    run_cli("fix", notebook.name)
    once = notebook.read_bytes()
    result = run_cli("fix", notebook.name)
    assert notebook.read_bytes() == once
    assert "0 changed" in result.stderr


def test_notebook_without_work_is_not_touched(run_cli, tmp_path):
    notebook = tmp_path / "plain.ipynb"
    text = json.dumps(
        {
            "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": ["%pip install numpy\n", "x = 1"]}],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 4,
        },
        indent=1,
    )
    notebook.write_text(text, "utf-8")  # no final newline on purpose
    result = run_cli("fix", "plain.ipynb")
    assert result.returncode == 0
    assert notebook.read_text("utf-8") == text


@pytest.mark.parametrize(
    "style",
    [
        {"indent": 1, "sort_keys": True, "ensure_ascii": False},
        {"indent": 4, "ensure_ascii": False},
        {"indent": None, "ensure_ascii": False},
        {"indent": 2, "ensure_ascii": True},
        {"indent": "\t", "ensure_ascii": False},
    ],
    ids=["jupyter", "indent4", "one-line", "ascii-escapes", "tabs"],
)
@pytest.mark.parametrize("final_newline", [True, False])
@pytest.mark.slow
def test_layouts_are_kept(run_cli, tmp_path, style, final_newline):
    original = json.loads((FIXTURES / "tpu_colab.ipynb").read_text("utf-8"))
    # One source as a plain string, as nbformat also allows.
    original["cells"][5]["source"] = "".join(original["cells"][5]["source"])
    notebook = tmp_path / "styled.ipynb"
    notebook.write_text(json.dumps(original, **style) + ("\n" if final_newline else ""), "utf-8")
    run_cli("fix", "styled.ipynb")
    expected = json.loads(json.dumps(original))
    expected["cells"][3]["source"] = [line.replace("experimental.TPUStrategy", "TPUStrategy") for line in expected["cells"][3]["source"]]
    expected["cells"][5]["source"] = expected["cells"][5]["source"].replace("experimental_run_v2", "run")
    assert notebook.read_text("utf-8") == json.dumps(expected, **style) + ("\n" if final_newline else "")


def test_diff_is_shown_cell_by_cell_on_request(run_cli, fixture_copy):
    notebook = fixture_copy("tpu_colab.ipynb")
    before = notebook.read_bytes()
    result = run_cli("diff", "--notebook-diff", "cells", notebook.name)
    assert result.returncode == 1
    headers = re.findall(r"^(?:---|\+\+\+) (.*)$", result.stdout, re.M)
    assert headers == ["a/tpu_colab.ipynb:cell 4", "b/tpu_colab.ipynb:cell 4", "a/tpu_colab.ipynb:cell 6", "b/tpu_colab.ipynb:cell 6"]
    assert "-strategy = tf.distribute.experimental.TPUStrategy(resolver)" in result.stdout
    assert "+    per_replica = strategy.run(step_fn, args=(batch,))" in result.stdout
    assert "No newline" not in result.stdout
    assert notebook.read_bytes() == before


@pytest.mark.slow
def test_findings_carry_cell_and_cell_relative_line(run_cli, fixture_copy):
    fixture_copy("tpu_colab.ipynb")
    result = run_cli("check", "--format", "json", "tpu_colab.ipynb")
    assert result.returncode == 1
    findings = json.loads(result.stdout)["findings"]
    located = {(f["rule"], f["cell"], f["line"], f["column"]) for f in findings}
    assert ("TPU103", 4, 7, 12) in located
    assert ("TPU101", 6, 24, 28) in located
    text = run_cli("check", "tpu_colab.ipynb").stdout
    assert "tpu_colab.ipynb:cell 4:7:12: TPU103 [*]" in text
    edits = [e for f in findings if f["rule"] == "TPU101" for e in f["edits"]]
    assert edits and all(e["line"] == 24 for e in edits if "line" in e)


def test_ignore_comment_in_a_notebook(run_cli, fixture_copy):
    notebook = fixture_copy("jupyter_layout.ipynb")
    run_cli("fix", notebook.name)
    cell = _sources(notebook)[2]
    assert "result = strategy.experimental_run_v2(step, args=(1.0,))  # migrate-tpu: ignore[TPU101]" in cell
    assert "other = strategy.run(step, args=(2.0,))" in cell
    # The help line `strategy.experimental_run_v2?` is IPython syntax and stays.
    assert _sources(notebook)[3] == "strategy.experimental_run_v2?"


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"cells": [', "invalid JSON"),
        ('{"cells": [{"cell_type": "code", "source": "x.experimental_run_v2(f)  # tpu"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}',
         "broken.ipynb:cell 1: error: not a valid notebook"),
        ('{"worksheets": [], "metadata": {}, "nbformat": 3, "nbformat_minor": 0, "x": "TPUStrategy tensorflow"}', "only nbformat 4"),
    ],
    ids=["json", "schema", "nbformat3"],
)
def test_invalid_notebooks_are_errors_and_never_rewritten(run_cli, tmp_path, text, message):
    notebook = tmp_path / "broken.ipynb"
    notebook.write_text(text + " # TPUStrategy tensorflow" if message == "invalid JSON" else text, "utf-8")
    before = notebook.read_bytes()
    result = run_cli("fix", "broken.ipynb")
    assert result.returncode == 2
    assert message in result.stderr
    assert notebook.read_bytes() == before


def test_a_cell_that_does_not_parse_is_named_and_kept_while_the_others_are_migrated(run_cli, tmp_path):
    original = json.loads((FIXTURES / "tpu_colab.ipynb").read_text("utf-8"))
    broken = ["%%time\n", "for x in dist_dataset\n", "    pass\n"]
    original["cells"][6]["source"] = broken
    notebook = tmp_path / "bad_cell.ipynb"
    notebook.write_text(json.dumps(original, indent=1), "utf-8")
    before = notebook.read_text("utf-8")
    result = run_cli("fix", "bad_cell.ipynb")
    assert result.returncode == 2, result.stderr
    assert "bad_cell.ipynb:cell 7:2: error: cannot parse" in result.stderr
    assert "the other cells are handled as usual" in result.stderr
    after = notebook.read_text("utf-8")
    # The broken cell's bytes are untouched: its lines are in the file as they were.
    cell_7 = before[before.index('"%%time\\n"') : before.index('"    pass\\n"')]
    assert cell_7 in after
    sources = _sources(notebook)
    assert sources[6] == "".join(broken)
    # The other cells are migrated as in a notebook without the broken cell.
    assert "strategy = tf.distribute.TPUStrategy(resolver)" in sources[3]
    assert "strategy.run(step_fn, args=(batch,))" in sources[5]
    assert "experimental_run_v2" not in sources[5]
    # Everything but the sources decodes the same: outputs, counts, metadata.
    old, new = json.loads(before), json.loads(after)
    for cell in old["cells"] + new["cells"]:
        cell.pop("source")
    assert old == new


def test_a_notebook_whose_only_code_does_not_parse_is_an_error_and_unchanged(run_cli, tmp_path):
    notebook = tmp_path / "only_bad.ipynb"
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": "import tensorflow as tf\nprint 'TPUStrategy'\n"}]
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}), "utf-8")
    before = notebook.read_bytes()
    result = run_cli("check", "only_bad.ipynb")
    assert result.returncode == 2
    assert "only_bad.ipynb:cell 1:2: error: cannot parse" in result.stderr
    assert notebook.read_bytes() == before


def test_non_python_notebook_is_left_alone(run_cli, tmp_path):
    notebook = tmp_path / "r.ipynb"
    notebook.write_text(
        json.dumps(
            {
                "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": "strategy$experimental_run_v2(tensorflow)"}],
                "metadata": {"kernelspec": {"language": "R", "name": "ir", "display_name": "R"}},
                "nbformat": 4,
                "nbformat_minor": 4,
            }
        ),
        "utf-8",
    )
    before = notebook.read_bytes()
    result = run_cli("fix", "r.ipynb")
    assert result.returncode == 0, result.stderr
    assert notebook.read_bytes() == before


def test_tree_walk_takes_notebooks_and_python_files(run_cli, fixture_copy, tmp_path):
    fixture_copy("tpu_colab.ipynb", tmp_path / "project" / "notebooks")
    (tmp_path / "project" / "train.py").write_text(
        "import tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy()\n", "utf-8"
    )
    result = run_cli("check", "project")
    assert "project/notebooks/tpu_colab.ipynb:cell 4:7:12: TPU103" in result.stdout
    assert "project/train.py:2:12: TPU103" in result.stdout


# -- masking, directly --------------------------------------------------------------


@pytest.mark.parametrize(
    "source, masked_lines",
    [
        ("%matplotlib inline\nx = 1\n", [0]),
        ("!pip install a \\\n    b\nx = 1", [0, 1]),
        ("files = !ls\nx, y = %sx echo 1\n", [0, 1]),
        ("tf.distribute?\n??strategy\n", [0, 1]),
        ("for i in range(2):\n    !echo {i}\n", [1]),
        ("x = (1\n% 2)\n", []),  # an operator inside brackets, not a magic
        ('s = """\n%d items\n!not shell\n"""\n', []),  # inside a string
        ("y = 'a' \\\n    % 3\n", []),  # a backslash continuation
        ("# %matplotlib in a comment\nx = 5 % 2\n", []),
        ("%%time\nx = 1\n%timeit y\n", [0, 2]),
        ("%%prun -s cumulative\nx = 1\n", [0]),  # %%prun's body is Python, as `run` executes it
    ],
)
def test_mask_cell(source, masked_lines):
    stash = []
    masked = mask_cell(source, stash)
    lines = masked.splitlines()
    assert len(lines) == len(source.splitlines())
    assert [i for i, line in enumerate(lines) if "migrate-tpu-masked" in line or "migrate-tpu-inline" in line] == masked_lines
    compile(masked, "<cell>", "exec")
    assert unmask(masked, stash) == source


def test_timed_statements_are_migrated_in_place(run_cli, tmp_path):
    notebook = tmp_path / "timed.ipynb"
    code = lambda source: {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
    cells = [
        code("import tensorflow as tf\nstrategy = tf.distribute.TPUStrategy()\nstep = tf.function(abs)"),
        code("%time out = strategy.experimental_run_v2(step, args=(1,))\n"
             "for x in range(2):\n"
             "    %timeit -n 1 -r 1 strategy.experimental_run_v2(step, args=(x,))\n"
             "%time strategy.experimental_run_v2(step)  # a comment stays\n"
             "%time strategy.experimental_run_v2(step)  # migrate-tpu: ignore\n"
             "%prun -s cumulative -q strategy.experimental_run_v2(step)\n"
             "%timeit -n1"),
    ]
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}, indent=1), "utf-8")
    run_cli("fix", notebook.name)
    assert _sources(notebook)[1] == (
        "%time out = strategy.run(step, args=(1,))\n"
        "for x in range(2):\n"
        "    %timeit -n 1 -r 1 strategy.run(step, args=(x,))\n"
        "%time strategy.run(step)  # a comment stays\n"
        "%time strategy.experimental_run_v2(step)  # migrate-tpu: ignore\n"
        "%prun -s cumulative -q strategy.run(step)\n"
        "%timeit -n1"
    )


def test_cell_magics_that_are_not_python_are_left_out():
    assert mask_cell("%%bash\necho strategy.experimental_run_v2\n", []) is None
    assert mask_cell("\n%%writefile x.py\nimport tensorflow\n", []) is None


@pytest.mark.slow
def test_notebook_through_stdin(run_cli, fixture_copy):
    notebook = fixture_copy("tpu_colab.ipynb")
    data = notebook.read_text("utf-8")
    fixed = run_cli("fix", "-", "--stdin-filename", "nb.ipynb", input=data)
    assert fixed.returncode == 1  # TPU202 stays for manual work
    assert "nb.ipynb:cell 4:4:12: TPU202" in fixed.stderr
    run_cli("fix", notebook.name)
    assert fixed.stdout == notebook.read_text("utf-8")
    checked = run_cli("check", "-", "--stdin-filename", "nb.ipynb", input=data)
    assert "nb.ipynb:cell 4:7:12: TPU103 [*]" in checked.stdout
    diffed = run_cli("diff", "-", "--stdin-filename", "nb.ipynb", input=data)
    assert diffed.returncode == 1 and "--- a/nb.ipynb\n+++ b/nb.ipynb\n" in diffed.stdout
    broken = run_cli("fix", "-", "--stdin-filename", "nb.ipynb", input="{ TPUStrategy tensorflow")
    assert broken.returncode == 2 and broken.stdout == "{ TPUStrategy tensorflow"
    assert "nb.ipynb:1: error: not a notebook: invalid JSON" in broken.stderr


def test_added_imports_go_after_leading_magics(run_cli, tmp_path):
    # `%tensorflow_version` must run before TensorFlow is imported: an import a
    # fix adds goes after the magics and imports at the top, never before them.
    notebook = tmp_path / "imports.ipynb"
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# Setup"},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": "%tensorflow_version 2.x\n!pip install -q tensorflow-datasets\n"
                   "from tensorflow.distribute.experimental import TPUStrategy\nimport numpy as np"},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": "strategy = TPUStrategy(resolver)\ndataset = strategy.experimental_make_numpy_dataset((np.ones(3),))"},
    ]
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}, indent=1), "utf-8")
    result = run_cli("fix", notebook.name)
    assert result.returncode == 0, result.stderr
    first, second = _sources(notebook)[1:]
    assert first == (
        "%tensorflow_version 2.x\n!pip install -q tensorflow-datasets\n"
        "from tensorflow.distribute import TPUStrategy\nimport numpy as np\nimport tensorflow as tf"
    )
    assert second.endswith("dataset = tf.data.Dataset.from_tensor_slices((np.ones(3),))")


@pytest.mark.slow
def test_writefile_cells_are_migrated_as_their_own_module(run_cli, tmp_path):
    notebook = tmp_path / "writes.ipynb"
    code = lambda source: {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
    cells = [
        # `strategy` here is not the one in trainer.py: the module is migrated on its own.
        code("strategy = object()"),
        code("%%writefile trainer.py\nimport tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy()\n"),
        code("%%writefile -a notes.txt\nstrategy.experimental_run_v2(f)  # tensorflow"),
        code("!python trainer.py"),
    ]
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}, indent=1), "utf-8")
    check = run_cli("check", "--format", "json", notebook.name)
    assert [(f["cell"], f["line"], f["rule"]) for f in json.loads(check.stdout)["findings"]] == [(2, 3, "TPU103")]
    run_cli("fix", notebook.name)
    sources = _sources(notebook)
    assert sources[1] == "%%writefile trainer.py\nimport tensorflow as tf\nstrategy = tf.distribute.TPUStrategy()\n"
    assert sources[2] == cells[2]["source"] and sources[3] == cells[3]["source"]
