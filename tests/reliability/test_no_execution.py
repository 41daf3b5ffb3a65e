"""Issue #6, part 5: the codemod never imports or executes the code it analyses.

Two checks. A tree whose every module has side effects at import (writes a
marker file, exits, starts a process) is run through ``fix``, ``diff`` and
``check`` under a Python audit hook that records any execution of, or
import from, the tree, in the parent and in every worker; nothing may be
recorded and no marker may appear, yet the files are migrated (what one
module learns from another comes from reading it). And the engine and codemod
sources contain no way to run code: no ``exec``/``eval``/``__import__``,
no process starts, and every ``compile`` call only builds a syntax tree.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.conftest import assert_clean_run, write

PACKAGE = Path(__file__).resolve().parents[2] / "migrate_tpu"

SIDE_EFFECT = """import pathlib as _p
_p.Path({marker!r}).write_text("executed")
"""

HOOK = r"""
import os, runpy, sys
TREE = os.path.realpath(sys.argv[1])
LOG = sys.argv[2]
LOCAL = {"strategies", "train", "evil", "package"}

def _record(what):
    with open(LOG, "a") as handle:
        handle.write(f"{os.getpid()} {what}\n")

def hook(event, args):
    if event == "exec":
        filename = getattr(args[0], "co_filename", "") or ""
        if os.path.realpath(filename).startswith(TREE):
            _record(f"exec {filename}")
    elif event == "import":
        if args[0].split(".")[0] in LOCAL:
            _record(f"import {args[0]}")
    elif event in ("os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn"):
        _record(f"{event} {args!r}"[:200])

sys.addaudithook(hook)
sys.argv = ["migrate-tpu"] + sys.argv[3:]
runpy.run_module("migrate_tpu", run_name="__main__", alter_sys=True)
"""


def build_tree(root: Path, marker: Path) -> Path:
    effect = SIDE_EFFECT.format(marker=str(marker))
    write(
        root / "strategies.py",
        effect
        + "import tensorflow as tf\n\n\ndef make(resolver):\n    return tf.distribute.experimental.TPUStrategy(resolver)\n",
    )
    write(
        root / "train.py",
        effect
        + "import os\nos.system('touch ' + {m!r})\nraise SystemExit(3)\n".format(m=str(marker) + ".system")
        + "import tensorflow as tf\nfrom strategies import make\n\nstrategy = make(resolver)\n"
        + "out = strategy.experimental_run_v2(tf.function(lambda v: v), args=(x,))\n",
    )
    write(root / "evil.py", "import tensorflow as tf\nimport sys\nsys.exit(9)\nstrategy = tf.distribute.experimental.TPUStrategy(r)\n")
    write(root / "package" / "__init__.py", effect + "import tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy(r)\n")
    return root


@pytest.mark.parametrize("command", ["fix", "diff", "check"])
def test_analysed_code_is_never_imported_or_executed(tmp_path, command):
    marker = tmp_path / "executed.marker"
    root = build_tree(tmp_path / "tree", marker)
    log = tmp_path / "audit.log"
    runner = tmp_path / "audited.py"
    runner.write_text(HOOK)
    done = subprocess.run(
        [sys.executable, str(runner), str(root), str(log), command, "--jobs", "2", str(root)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert not log.exists(), log.read_text()
    assert not marker.exists() and not Path(str(marker) + ".system").exists()
    if command == "fix":
        assert done.returncode == 0, done.stderr
        text = (root / "train.py").read_text()
        assert "strategy.run(" in text
        assert "tf.distribute.TPUStrategy(" in (root / "strategies.py").read_text()
        assert "tf.distribute.TPUStrategy(" in (root / "evil.py").read_text()
    else:
        assert done.returncode == 1, done.stderr
    assert_clean_run(done_outcome(done), root)


def done_outcome(done):
    from tests.reliability.conftest import Outcome

    return Outcome(done.returncode, done.stdout, done.stderr)


def test_the_audit_hook_would_notice_an_import(tmp_path):
    """The hook above is able to fail: importing the tree is recorded."""
    marker = tmp_path / "executed.marker"
    root = build_tree(tmp_path / "tree", marker)
    log = tmp_path / "audit.log"
    probe = tmp_path / "probe.py"
    probe.write_text(HOOK.replace('runpy.run_module("migrate_tpu", run_name="__main__", alter_sys=True)', "sys.path.insert(0, TREE)\nimport package"))
    subprocess.run([sys.executable, str(probe), str(root), str(log)], capture_output=True, timeout=60)
    assert log.exists() and "import package" in log.read_text()
    assert marker.exists()


# -- the sources themselves ------------------------------------------------------------------

FORBIDDEN_CALLS = {"exec", "eval", "__import__", "breakpoint", "execfile"}
FORBIDDEN_ATTRIBUTES = {
    ("os", "system"),
    ("os", "popen"),
    ("os", "execv"),
    ("os", "execvp"),
    ("os", "spawnv"),
    ("os", "posix_spawn"),
    ("runpy", "run_path"),
    ("runpy", "run_module"),
    ("importlib", "import_module"),
}
FORBIDDEN_MODULES = {"subprocess", "runpy", "code", "pty"}
# The rule catalogue imports the project's own rule modules, by package name.
ALLOWED = {("codemod/rules/catalogue.py", "importlib.import_module")}


def _analysing_sources():
    for folder in ("codemod", "engine"):
        yield from sorted((PACKAGE / folder).rglob("*.py"))


def _violations(path: Path, base: Path = PACKAGE):
    relative = path.relative_to(base).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                if name.split(".")[0] in FORBIDDEN_MODULES:
                    found.append(f"{relative}:{node.lineno} imports {name}")
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        if isinstance(function, ast.Name) and function.id in FORBIDDEN_CALLS:
            found.append(f"{relative}:{node.lineno} calls {function.id}")
        if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
            pair = (function.value.id, function.attr)
            if pair in FORBIDDEN_ATTRIBUTES and (relative, ".".join(pair)) not in ALLOWED:
                found.append(f"{relative}:{node.lineno} calls {'.'.join(pair)}")
        if isinstance(function, ast.Name) and function.id == "compile":
            text = ast.unparse(node)
            scope = _enclosing_text(tree, node)
            if not any(flag in text for flag in ("PyCF_ONLY_AST", "0x400", "1024")) and "PyCF_ONLY_AST" not in scope:
                found.append(f"{relative}:{node.lineno} compiles without PyCF_ONLY_AST")
    return found


def _enclosing_text(tree, target) -> str:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(child is target for child in ast.walk(node)):
            return ast.unparse(node)
    return ""


def test_engine_and_codemod_sources_have_no_way_to_run_code():
    sources = list(_analysing_sources())
    assert len(sources) > 10
    problems = [problem for path in sources for problem in _violations(path)]
    assert problems == []


def test_the_source_scan_is_able_to_fail(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import subprocess\nexec('1')\ncompile('x', 'f', 'exec')\nimport os\nos.system('true')\n")
    problems = _violations(probe, base=tmp_path)
    assert len(problems) == 4, problems
