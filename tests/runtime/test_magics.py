"""The one IPython grammar (migrate_tpu.magics) and the runtime's use of it."""

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from migrate_tpu import magics
from migrate_tpu.runtime.process.notebooks import _strip_magics

REPO = Path(__file__).resolve().parents[2]


def test_magics_is_standard_library_python_3_7_and_stands_alone():
    path = REPO / "migrate_tpu" / "magics.py"
    tree = ast.parse(path.read_text(), str(path), feature_version=(3, 7))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"re"}, imported
    code = "import sys, migrate_tpu.magics; print(sorted(m for m in sys.modules if m.startswith('migrate_tpu.')))"
    done = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), stdout=subprocess.PIPE,
                          universal_newlines=True, check=True)
    assert done.stdout.strip() == "['migrate_tpu.magics']"


@pytest.mark.parametrize("name", ["time", "timeit", "capture", "prun"])
def test_python_body_cell_magics(name):
    source = "%%{} -q\nx = 1\n".format(name)
    assert magics.cell_magic(source) == name
    assert magics.line_kinds(source) == [magics.CELL_MAGIC, magics.PYTHON]
    assert _strip_magics(source) == "\nx = 1\n"  # line numbers kept


@pytest.mark.parametrize("source", ["%%bash\necho hi\n", "\n%%writefile a.py\nx = 1\n", "%%html\n<b/>"])
def test_other_cell_magics_are_not_python(source):
    assert not magics.is_python_cell(source)
    assert magics.line_kinds(source) is None
    assert _strip_magics(source) is None


def test_line_kinds():
    source = textwrap.dedent('''\
        %matplotlib inline
        !pip install a \\
            b
        files = !ls
        a, b = %sx cmd
        text = """
        %not a magic inside a string
        """
        value = (1,
        %2)
        os?
        ?os.path
        y = 2  # 100%
        x == %s
        ''')
    P, M, C = magics.PYTHON, magics.IPYTHON, magics.CONTINUATION
    assert magics.line_kinds(source) == [M, M, C, M, M, P, P, P, P, P, M, M, P, P]


@pytest.mark.parametrize("line, expected", [
    ("%time a = f(1)", ("", "%time ", "a = f(1)")),
    ("    %timeit -n 3 -r 2 -q b = g()", ("    ", "%timeit -n 3 -r 2 -q ", "b = g()")),
    ("%timeit -n3 g()", ("", "%timeit -n3 ", "g()")),
    ("%prun -l 10 -s cumulative -r main()", ("", "%prun -l 10 -s cumulative -r ", "main()")),
    ("%time", None),
    ("%timeit -n 3", None),
    ("%matplotlib inline", None),
    ("%%time x", None),
    ("x = 1", None),
])
def test_timed_statement(line, expected):
    assert magics.timed_statement(line) == expected
    if expected:
        assert "".join(expected) == line


def test_runtime_replacements():
    assert _strip_magics("%time a = f(1)\n").strip() == "a = f(1)"
    assert _strip_magics("%prun -s time main()\n").strip() == "main()"
    assert _strip_magics("c = %time h()\n").strip() == "c = h()"
    assert _strip_magics("files = !ls\n").strip() == "files = None"
    assert _strip_magics("if x:\n    %timeit -n 3 -r 2 b = g()\n").splitlines()[1] == "    b = g()"
    code = _strip_magics("!pip install a \\\n   b\nimport os\nos?\n")
    assert code.splitlines() == ["pass", "", "import os", "pass"]
    compile(code, "cell", "exec")
