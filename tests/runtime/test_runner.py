"""``python -m migrate_tpu.runtime`` / ``launch()``: scripts and notebooks run like ``python SCRIPT``."""

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
from roundtrip_helpers import REPO, TF21, TF24, TF221, require_python, start

from migrate_tpu.runtime import real_tpu_reachable
from migrate_tpu.runtime.process import envs, launch
from migrate_tpu.runtime.process.notebooks import _strip_magics, notebook_cells

RUNTIME = REPO / "migrate_tpu" / "runtime"
TF = pytest.mark.roundtrip  # runs real TensorFlow interpreters


# --------------------------------------------------------------------------
# Without TensorFlow
# --------------------------------------------------------------------------

def test_runtime_sources_are_python_3_7_syntax():
    for path in sorted(RUNTIME.glob("*.py")):
        ast.parse(path.read_text(), str(path), feature_version=(3, 7))


def test_package_and_launcher_do_not_import_tensorflow():
    code = ("import sys, migrate_tpu.runtime, migrate_tpu.runtime.process.launch, migrate_tpu.runtime.process.runner, "
            "migrate_tpu.runtime.process.envs; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('tensorflow', 'libcst', 'click')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), stdout=subprocess.PIPE,
                          universal_newlines=True, check=True)
    assert done.stdout.strip() == "[]"


def test_launch_command_and_environment(tmp_path):
    argv = launch.command("train.py", ["--epochs", 2], launch.RunnerOptions(replicas=4, tf_api="2.1",
                                                                       python="/envs/tf2.1/bin/python", emulation=False))
    assert argv == ["/envs/tf2.1/bin/python", "-m", "migrate_tpu.runtime", "--replicas", "4",
                    "--tf-api", "2.1", "--no-emulation", "train.py", "--epochs", "2"]
    assert launch.command("x.ipynb", [])[:3] == [sys.executable, "-m", "migrate_tpu.runtime"]
    env = launch.environment({"PYTHONPATH": "/a" + os.pathsep + "/b"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(REPO), "/a", "/b"]
    assert launch.environment({})["PYTHONPATH"] == str(REPO)


def test_real_tpu_is_recognised_from_the_environment():
    assert real_tpu_reachable({"TPU_NAME": "my-tpu"})
    assert real_tpu_reachable({"KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS": "grpc://1.2.3.4:8470"})
    assert not real_tpu_reachable({"TPU_NAME": ""})
    assert not real_tpu_reachable({})


def test_magics_are_skipped():
    source = textwrap.dedent("""\
        %matplotlib inline
        !pip install -q something
        files = !ls
        import os
        if True:
            %matplotlib x
        os?
        y = 2  # 100%
        """)
    code = _strip_magics(source)
    compile(code, "cell", "exec")
    assert "matplotlib" not in code and "pip" not in code and "!ls" not in code
    assert "y = 2  # 100%" in code and "import os" in code
    assert _strip_magics("%%bash\necho hi\n") is None
    # %time / %timeit run their statement (once)
    assert _strip_magics("%time a = f(1)\n").strip() == "a = f(1)"
    assert _strip_magics("if x:\n    %timeit -n 3 -r 2 b = g()\n").splitlines()[1] == "    b = g()"
    assert _strip_magics("c = %time h()\n").strip() == "c = h()"
    assert _strip_magics("%%time\nz = 3\n").strip() == "z = 3"


def test_notebook_cells(tmp_path):
    nb = tmp_path / "nb.ipynb"
    nb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# title"]},
        {"cell_type": "code", "metadata": {}, "source": ["a = 1\n", "%load_ext foo"],
         "outputs": [], "execution_count": None},
        {"cell_type": "code", "metadata": {}, "source": "%%bash\nls", "outputs": [],
         "execution_count": None},
    ]}))
    cells = notebook_cells(str(nb))
    assert len(cells) == 1
    label, code = cells[0]
    assert label.endswith("nb.ipynb:cell2")
    assert code.splitlines() == ["a = 1", "pass"]



def test_a_writefile_cell_writes_its_module_where_the_notebook_runs(tmp_path, monkeypatch, capsys):
    # a notebook that writes a module with %%writefile, then imports it (the multi-worker guide)
    nb = tmp_path / "nb.ipynb"
    nb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "source": "%%writefile helper.py\nVALUE = 41\n", "outputs": [], "execution_count": None},
        {"cell_type": "code", "metadata": {}, "source": "%%writefile -a helper.py\nVALUE += 1", "outputs": [], "execution_count": None},
        {"cell_type": "code", "metadata": {}, "source": "import helper\nresult = helper.VALUE", "outputs": [], "execution_count": None},
    ]}))
    cells = notebook_cells(str(nb))
    assert [label.rsplit(":", 1)[-1] for label, _ in cells] == ["cell1", "cell2", "cell3"]
    work = tmp_path / "run"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(work))
    namespace = {}
    for label, code in cells:
        exec(compile(code, label, "exec"), namespace)
    assert namespace["result"] == 42
    assert (work / "helper.py").read_text() == "VALUE = 41\nVALUE += 1\n"
    assert capsys.readouterr().out.splitlines() == ["Writing helper.py", "Appending to helper.py"]

# --------------------------------------------------------------------------
# In a TensorFlow interpreter
# --------------------------------------------------------------------------

def _write(folder, name, text):
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture(scope="module")
def script_runs(tmp_path_factory):
    """Every script case of this module, started together in TF 2.4.1 (one in TF 2.21)."""
    py24 = require_python(TF24)
    folder = tmp_path_factory.mktemp("scripts")
    _write(folder, "helper_mod.py", "VALUE = 41\n")
    cases = {}
    cases["argv"] = start(py24, _write(folder, "argv.py", """\
        import sys, os, json
        import helper_mod
        print(json.dumps({"argv": sys.argv, "path0": sys.path[0], "name": __name__,
                          "file": __file__, "helper": helper_mod.VALUE + 1}))
        sys.exit(7)
        """), label="argv.py")
    cases["raise"] = start(py24, _write(folder, "boom.py", """\
        def inner():
            raise ValueError("boom from the script")
        inner()
        """), label="boom.py")
    cases["exit_message"] = start(py24, _write(folder, "bye.py", """\
        import sys
        print("before exit")
        sys.exit("fatal: bye")
        """), label="bye.py")
    cases["replicas4"] = start(py24, _write(folder, "four.py", """\
        import json
        import tensorflow as tf
        r = tf.distribute.cluster_resolver.TPUClusterResolver()
        topo = tf.tpu.experimental.initialize_tpu_system(r)
        s = tf.distribute.TPUStrategy(r)
        print(json.dumps({"replicas": s.num_replicas_in_sync, "mesh": topo.mesh_shape.tolist()}))
        """), replicas=4, label="four.py")
    cases["compat_v2"] = start(py24, _write(folder, "compat_v2.py", """\
        # tensorflow/tpu's TF 2.1 examples: importing compat.v2 makes module objects of its own
        import tensorflow.compat.v2 as tf
        r = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
        tf.config.experimental_connect_to_cluster(r)
        tf.tpu.experimental.initialize_tpu_system(r)
        s = tf.distribute.experimental.TPUStrategy(r)
        print("compat.v2", s.num_replicas_in_sync, type(r).__module__)
        """), replicas=2, label="compat_v2.py")
    real = _write(folder, "real.py", """\
        import tensorflow as tf
        print(tf.distribute.cluster_resolver.TPUClusterResolver.__module__)
        print(type(tf.distribute.TPUStrategy).__name__, tf.distribute.TPUStrategy.__name__)
        """)
    cases["tpu_name"] = start(py24, real, label="real.py TPU_NAME", extra_env={"TPU_NAME": "my-tpu"})
    notebook = folder / "nb.ipynb"
    notebook.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["%matplotlib inline\n", "!pip install nothing\n", "import tensorflow as tf\n",
                    "import helper_mod\n",
                    "resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')\n",
                    "strategy = tf.distribute.experimental.TPUStrategy(resolver)"]},
        {"cell_type": "markdown", "metadata": {}, "source": ["text"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["%%bash\n", "exit 3"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["%%time\n", "n = strategy.num_replicas_in_sync + helper_mod.VALUE\n", "n * 2"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["print('printed', n)\n", "n;"]},
    ]}))
    cases["notebook"] = start(py24, notebook, label="nb.ipynb")
    autograph = folder / "autograph.ipynb"
    autograph.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}
        for source in (
            "import tensorflow as tf",
            # AutoGraph turns this `if` on a tensor into tf.cond: it must read the cell's source
            "@tf.function\ndef f(x):\n    if tf.reduce_sum(x) > 0:\n        return x * 2\n"
            "    return -x\nprint('F', f(tf.constant([1.0, 2.0])).numpy().tolist(), "
            "f(tf.constant([-3.0])).numpy().tolist())",
            "%%prun -q\nprint('prun body runs')",
        )]}))
    cases["autograph"] = start(py24, autograph, label="autograph.ipynb")
    # TF 2.21's interpreter finalises a program's objects at exit (on TF 2.4.1 plain python
    # finalises neither object once a tf.function ran): a run keeps that end as python has it.
    # Without that interpreter its test alone is skipped (loudly), not the module's.
    py221 = envs.interpreter(TF221)
    cases["python_end"] = py221 and start(py221, _write(folder, "python_end.py", """\
        import os
        import tensorflow as tf

        class Finalized(object):
            def __init__(self, name):
                self.name = name

            def __del__(self):
                print("finalized", self.name)

        KEPT = Finalized("global")
        CYCLE = Finalized("cycle")  # only the collector frees it
        CYCLE.itself = CYCLE
        STEP = tf.function(lambda x: x * 2)
        STEP(tf.constant(1.0))
        HANDLE = open(os.path.join(os.path.dirname(__file__), "unclosed.txt"), "w")  # the exit flushes it
        HANDLE.write("buffered text")
        print("main done")
        """), label="python_end.py")
    cases["recorded_end"] = start(py24, _write(folder, "recorded_end.py", """\
        import atexit, sys, threading, time

        class Finalized(object):
            def __del__(self):
                print("finalized in the teardown")

        KEPT = Finalized()
        atexit.register(lambda: print("exit function ran"))

        def late():
            time.sleep(0.3)
            print("thread done")

        threading.Thread(target=late).start()  # not a daemon: the exit waits for it
        print("main done")
        sys.exit(3)
        """), label="recorded_end.py", extra_env={"MIGRATE_TPU_RECORD": str(folder / "recorded_end.json")})
    return folder, cases


@TF
def test_script_argv_path_and_exit_status(script_runs):
    folder, cases = script_runs
    run = cases["argv"]
    rc, out, err = run.wait()
    assert rc == 7, run.describe()
    info = json.loads(out.strip().splitlines()[-1])
    assert info["name"] == "__main__"
    assert info["path0"] == str(folder)
    assert info["file"] == str(folder / "argv.py")
    assert info["argv"] == [str(folder / "argv.py")]
    assert info["helper"] == 42


@TF
def test_a_script_that_imports_tensorflow_compat_v2_gets_the_emulated_tpu(script_runs):
    run = script_runs[1]["compat_v2"]
    rc, out, err = run.wait()
    assert (rc, out.strip().splitlines()[-1]) == (0, "compat.v2 2 migrate_tpu.runtime.tpu.resolver"), run.describe()


@TF
def test_a_recorded_run_ends_as_the_program_does_without_the_interpreters_teardown(script_runs):
    """verify's runs (recorded): the non-daemon thread is waited for and the exit functions run, as
    a normal exit does, and the exit status and output are the program's; the interpreter's
    teardown after them (0.8 CPU s on TF 2.21) is skipped, so a module-level object's
    ``__del__`` does not run."""
    folder, cases = script_runs
    run = cases["recorded_end"]
    rc, out, err = run.wait()
    assert (rc, out.splitlines()) == (3, ["main done", "thread done", "exit function ran"]), run.describe()
    assert json.loads((folder / "recorded_end.json").read_text())["exit_status"] == 3


@TF
def test_a_run_ends_as_python_does_finalising_the_programs_objects(script_runs):
    """Not a recorded run: after the exit functions, the interpreter's teardown finalises the
    program's objects (a module-level one, one only the collector frees) and flushes a file it
    never closed, as plain ``python`` on TF 2.21 does.  The runtime hands what TensorFlow's import
    made to the collector's permanent generation (runner.settle_what_is_loaded); the program's
    own objects must stay collectable."""
    require_python(TF221)
    folder, cases = script_runs
    run = cases["python_end"]
    rc, out, err = run.wait()
    assert (rc, out.splitlines()) == (0, ["main done", "finalized global", "finalized cycle"]), run.describe()
    assert (folder / "unclosed.txt").read_text() == "buffered text"


@TF
def test_script_arguments_pass_through_launch(tmp_path):
    """launch() from an interpreter without TensorFlow, into a TF env without migrate-tpu installed."""
    py24 = require_python(TF24)
    script = _write(tmp_path, "args.py", """\
        import sys
        print("ARGS", sys.argv[1:])
        sys.stderr.write("to stderr\\n")
        raise SystemExit(5)
        """)
    code = ("import sys; from migrate_tpu.runtime.process.launch import launch; "
            "sys.exit(launch(sys.argv[1], ['--lr', '0.1', 'x y'], replicas=2, python=sys.argv[2]))")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    done = subprocess.run([sys.executable, "-c", code, str(script), py24], cwd=str(tmp_path), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=300)
    assert done.returncode == 5, done.stderr
    assert "ARGS ['--lr', '0.1', 'x y']" in done.stdout
    assert "to stderr" in done.stderr
    assert "TPU emulation: 2 replicas" in done.stderr


@TF
def test_uncaught_exception_prints_the_scripts_traceback(script_runs):
    run = script_runs[1]["raise"]
    assert run.returncode == 1
    assert 'boom.py", line 3, in <module>' in run.stderr
    assert 'boom.py", line 2, in inner' in run.stderr
    assert "ValueError: boom from the script" in run.stderr
    assert "runner.py" not in run.stderr, run.stderr


@TF
def test_sys_exit_with_a_message(script_runs):
    run = script_runs[1]["exit_message"]
    assert run.returncode == 1
    assert "before exit" in run.stdout
    assert "fatal: bye" in run.stderr


@TF
def test_replicas_option(script_runs):
    run = script_runs[1]["replicas4"]
    info = json.loads(run.stdout.strip().splitlines()[-1])
    assert info == {"replicas": 4, "mesh": [1, 2, 1, 2]}, run.describe()


@TF
def test_nothing_is_emulated_when_a_real_tpu_is_announced(script_runs):
    run = script_runs[1]["tpu_name"]
    assert run.returncode == 0, run.describe()
    lines = run.stdout.strip().splitlines()
    assert lines[0].startswith("tensorflow.python"), run.describe()
    assert lines[1].endswith("TPUStrategyV2"), run.describe()


@TF
def test_notebook_cells_run_in_order_with_magics_skipped(script_runs):
    run = script_runs[1]["notebook"]
    assert run.returncode == 0, run.describe()
    assert run.stdout.strip().splitlines()[-2:] == ["98", "printed 49"], run.describe()


@TF
def test_notebook_functions_are_converted_by_autograph(script_runs):
    run = script_runs[1]["autograph"]
    assert run.returncode == 0, run.describe()
    assert run.stdout.splitlines()[-2:] == ["F [2.0, 4.0] [3.0]", "prun body runs"], run.describe()


@TF
def test_usage_errors(tmp_path):
    py21 = require_python(TF21)
    script = _write(tmp_path, "ok.py", "print('never')\n")
    # a surface is its release: none newer than the interpreter's TensorFlow
    wrong_apis = {api: start(py21, script, tf_api=api, label="--tf-api {} on TF 2.1".format(api))
                  for api in ("2.2", "2.3", "2.4")}
    missing = start(py21, tmp_path / "missing.py", label="missing script")
    for api, wrong_api in wrong_apis.items():
        assert wrong_api.returncode == 2, wrong_api.describe()
        assert ("migrate-tpu run: --tf-api {0} needs TensorFlow >= {0}; this interpreter has TensorFlow 2.1.0\n".format(api)
                in wrong_api.stderr), wrong_api.describe()
        assert "never" not in wrong_api.stdout
    assert missing.returncode == 2 and "no such file" in missing.stderr, missing.describe()


def test_interpreter_without_tensorflow_is_a_usage_error(tmp_path):
    script = _write(tmp_path, "ok.py", "print('never')\n")
    env = launch.environment()
    done = subprocess.run([sys.executable, "-m", "migrate_tpu.runtime", str(script)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=120)
    try:
        import tensorflow  # noqa: F401
    except ImportError:
        assert done.returncode == 2, done.stderr
        assert "cannot import TensorFlow" in done.stderr and "--python" in done.stderr
        assert "never" not in done.stdout
    else:  # pragma: no cover - this interpreter has TensorFlow
        assert done.returncode == 0


def test_env_names_select_the_cached_interpreters(tmp_path, monkeypatch):
    from migrate_tpu.runtime.process import envs

    monkeypatch.setenv("MIGRATE_TPU_ENVS", str(tmp_path))
    assert launch.resolve_python("tf2.4") is None
    assert launch.resolve_python("/some/python") == "/some/python"
    assert launch.resolve_python(None) is None
    python = tmp_path / "tf2.4" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    assert launch.resolve_python("tf2.4") is None  # no stamp: not finished by scripts/tf-envs
    (tmp_path / "tf2.4" / ".migrate-tpu-stamp").write_text("pins")
    assert launch.resolve_python("tf2.4") == str(python)
    assert envs.interpreter("tf2.4") == str(python)
    assert launch.launch("x.py", [], python="tf2.21") == 127


def test_installed_package_is_isolated_from_site_packages(tmp_path):
    folder = launch.isolated_root()
    try:
        assert sorted(os.listdir(folder)) == ["migrate_tpu"]
        assert (Path(folder) / "migrate_tpu" / "runtime" / "process" / "runner.py").is_file()
        assert launch.environment({}, root=folder)["PYTHONPATH"] == folder
    finally:
        import shutil
        shutil.rmtree(folder)
    assert launch._is_shared("/venv/lib/python3.11/site-packages")
    assert not launch._is_shared(str(REPO))
