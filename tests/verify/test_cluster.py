"""verify decides from a multi-worker program's code, not from how it failed, that it reads its
cluster (TF_CONFIG) itself and so runs as a cluster: in every spelling of 2020 code, in the
program, a notebook's cell or a module of its folder it imports; never from a comment or a
docstring (no TensorFlow)."""

import json

import pytest

from migrate_tpu.verify.runs.cluster import reads_its_cluster


@pytest.mark.parametrize("line", [
    "config = json.loads(os.environ['TF_CONFIG'])",
    "tf_config = json.loads(os.environ.get('TF_CONFIG') or '{}')",
    'raw = os.getenv("TF_CONFIG", "{}")',
    "resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()",
    "KEY = f'TF_CONFIG'",
])
def test_each_spelling_of_reading_the_cluster_is_found_on_its_line(tmp_path, line):
    program = tmp_path / "worker.py"
    program.write_text(f"import json, os\nimport tensorflow as tf\n\n{line}\nprint(1)\n")
    assert reads_its_cluster(program) == {"file": program, "line": 4, "source": line}


def test_a_comment_or_a_docstring_that_names_it_is_not_a_read(tmp_path):
    program = tmp_path / "worker.py"
    program.write_text('"""Set TF_CONFIG before you run this."""\n# TF_CONFIG is read by the strategy\n'
                       'def f():\n    """Reads TF_CONFIG? no."""\n    return 1\n')
    assert reads_its_cluster(program) is None


def test_a_module_of_the_folder_that_the_program_imports_is_read_too(tmp_path):
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "cluster.py").write_text("import os\n\ndef workers():\n    return os.environ['TF_CONFIG']\n")
    program = tmp_path / "main.py"
    program.write_text("from helpers.cluster import workers\nprint(workers())\n")
    found = reads_its_cluster(program)
    assert (found["file"], found["line"]) == (tmp_path / "helpers" / "cluster.py", 4)


def test_a_notebook_cell_names_its_cell_and_shell_lines_are_skipped(tmp_path):
    notebook = tmp_path / "nb.ipynb"
    cells = [{"cell_type": "markdown", "source": "TF_CONFIG"}, {"cell_type": "code", "source": "!echo hi\nimport os"},
             {"cell_type": "code", "source": ["x = 1\n", "cfg = os.environ['TF_CONFIG']\n"]}]
    notebook.write_text(json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 5, "metadata": {}}))
    assert reads_its_cluster(notebook) == {"file": notebook, "line": 2, "cell": 3, "source": "cfg = os.environ['TF_CONFIG']"}
