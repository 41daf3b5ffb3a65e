"""The record of moved APIs on the real interpreters (docs/runtime.md, "Which moved APIs a run
called"), and ``--tf-api native``: TF 2.21 as it is.

``programs/moved/train.py`` is a migrated script whose helper module (``helpers/old_calls.py``)
was not: the experimental TPUStrategy (line 10), the experimental mixed-precision Policy (14),
``experimental_distribute_datasets_from_function`` (20), and ``experimental_run_v2`` in a
``tf.function`` (26).  Under each surface each is recorded where it runs, or named where it is
gone and stops the run; ``hasattr`` guards are not calls.  A package installed from a wheel and a
folder on ``PYTHONPATH`` are owned by their distribution (name and version, as
``importlib.metadata`` reads them in that interpreter) and by their folder.
"""

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
from roundtrip_helpers import TF21, TF24, TF221, require_python

pytestmark = pytest.mark.roundtrip

REPO = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).resolve().parent / "programs" / "moved"
HELPER = "helpers/old_calls.py"
LINES = {"TPU103": 10, "TPU402": 14, "TPU102": 20, "TPU101": 26}


def run(tmp_path, env_name, tf_api, extra_env=None, program=PROGRAM, script="train.py"):
    """``migrate-tpu run`` of a copy of ``program``: its exit status, output and record of moved APIs."""
    folder = tmp_path / program.name
    if not folder.exists():
        shutil.copytree(program, folder)
    record = tmp_path / "moved-{}-{}.json".format(env_name, tf_api)
    paths = [str(REPO)] + [p for p in (extra_env or {}).get("PYTHONPATH", "").split(os.pathsep) if p]
    # a seeded hash makes the run a fork of the session's warm interpreter for this environment
    # (docs/runtime.md, "Warm starts"), not a new interpreter that imports TensorFlow again
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths), PYTHONHASHSEED="0")
    env.update({k: v for k, v in (extra_env or {}).items() if k != "PYTHONPATH"})
    env.pop("TPU_NAME", None)
    done = subprocess.run([sys.executable, "-m", "migrate_tpu", "run", "--python", require_python(env_name), "--tf-api", tf_api,
                           "--api-record", str(record), script], cwd=str(folder), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    data = json.loads(record.read_text()) if record.exists() else None
    return done, data


def places(data):
    return {call["rule"]: (call["file"].rsplit(os.sep, 2)[-2:], call["line"], call["count"], call["failed"], call["owner"]["kind"])
            for call in data["calls"]}


#: (interpreter, surface) -> the rule that stops the run (None: it runs to its end)
STOPS = {(TF21, "2.1"): None, (TF24, "2.1"): None, (TF221, "2.1"): None,
         (TF24, "2.4"): "TPU101", (TF221, "2.4"): "TPU101", (TF24, "native"): "TPU101", (TF221, "native"): "TPU402"}


@pytest.mark.parametrize("env_name, tf_api", sorted(STOPS))
def test_each_moved_api_the_run_calls_is_named_at_the_helpers_line(tmp_path, env_name, tf_api):
    done, data = run(tmp_path, env_name, tf_api)
    stop = STOPS[env_name, tf_api]
    assert done.returncode == (0 if stop is None else 1), done.stderr
    expected = {}
    for rule, line in LINES.items():
        if stop is not None and line > LINES[stop]:
            continue  # the run stopped before it
        expected[rule] = (["helpers", "old_calls.py"], line, 1, rule == stop, "tree")
    assert places(data) == expected, done.stderr
    if stop is not None:  # what the run ends with: the rule, the place and the command that covers it
        summary = done.stderr[done.stderr.index("migrate-tpu run: "):]
        assert "{}:{}: {} ".format(HELPER, LINES[stop], stop) in summary and "failed: AttributeError" in summary
        assert "migrate-tpu fix {}".format(HELPER) in summary
        assert "strategies.py" not in done.stderr  # no frame of the emulation, not even in AutoGraph's message
    assert "moved_calls.py" not in done.stderr  # TensorFlow's deprecation warnings name the helper's line, not a watch


def test_native_is_tf_2_21_as_it_is(tmp_path):
    """Under ``--tf-api native`` the experimental mixed-precision API is gone as on the real TF
    2.21 (its AttributeError), and the version is the interpreter's; under ``--tf-api 2.4`` both
    are TF 2.4.1's."""
    (tmp_path / "probe").mkdir()
    probe = tmp_path / "probe" / "probe.py"
    probe.write_text(textwrap.dedent("""\
        import tensorflow as tf
        print("version", tf.__version__)
        try:
            tf.keras.mixed_precision.experimental.Policy("mixed_bfloat16")
            print("policy made")
        except AttributeError as error:
            print("AttributeError", error)
    """))
    python = require_python(TF221)
    real = subprocess.run([python, str(probe)], env=dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3"),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    native, _ = run(tmp_path, TF221, "native", program=probe.parent, script="probe.py")
    surface, _ = run(tmp_path, TF221, "2.4", program=probe.parent, script="probe.py")
    assert "AttributeError module" in real.stdout and "has no attribute 'experimental'" in real.stdout, real.stderr
    assert native.stdout == real.stdout, native.stderr
    assert surface.stdout.splitlines() == ["version 2.4.1", "policy made"], surface.stderr
    assert "TF 2.21.0 with the TF 2.21 API" in native.stderr


def _wheel(folder, name, version, files):
    """A wheel of ``files`` ({path: text}), as pip installs it."""
    dist = "{}-{}.dist-info".format(name.replace("-", "_"), version)
    files = dict(files)
    files[dist + "/METADATA"] = "Metadata-Version: 2.1\nName: {}\nVersion: {}\n".format(name, version)
    files[dist + "/WHEEL"] = "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[dist + "/top_level.txt"] = "".join(sorted({path.split("/")[0] + "\n" for path in files if "/" in path and ".dist-info" not in path}))
    lines = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        lines.append("{},sha256={},{}".format(path, digest, len(text.encode())))
    files[dist + "/RECORD"] = "\n".join(lines + [dist + "/RECORD,,"]) + "\n"
    wheel = folder / "{}-{}-py3-none-any.whl".format(name.replace("-", "_"), version)
    with zipfile.ZipFile(str(wheel), "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


STEPS = textwrap.dedent("""\
    import tensorflow as tf


    def data(strategy):
        return strategy.experimental_distribute_datasets_from_function(
            lambda context: tf.data.Dataset.from_tensors(tf.ones([2])).repeat(16).batch(context.get_per_replica_batch_size(8)))
""")
USER = textwrap.dedent("""\
    import tensorflow as tf
    import oldsteps
    import vendored_steps

    strategy = tf.distribute.MirroredStrategy()
    for batch in oldsteps.data(strategy):
        pass
    for batch in vendored_steps.data(strategy):
        pass
    print("done")
""")


@pytest.mark.parametrize("env_name", [TF21, TF221])
def test_an_installed_distribution_and_a_folder_on_the_path_own_their_calls(tmp_path, env_name):
    """A wheel installed with pip (into a folder on PYTHONPATH) owns its calls by name and version,
    as that interpreter's importlib.metadata reads them (Python 3.7's TF 2.1 has none: its
    .dist-info is read, and must say the same); a plain folder on PYTHONPATH owns its own."""
    site, vendored, program = tmp_path / "site", tmp_path / "vendored", tmp_path / "program"
    vendored.mkdir()
    program.mkdir()
    (vendored / "vendored_steps.py").write_text(STEPS)
    (program / "train.py").write_text(USER)
    wheel = _wheel(tmp_path, "old-tpu-steps", "0.3.1", {"oldsteps/__init__.py": STEPS})
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site), str(wheel)],
                   check=True, timeout=300)
    path = os.pathsep.join([str(site), str(vendored)])
    done, data = run(tmp_path, env_name, "2.1", {"PYTHONPATH": path}, program=program)
    assert done.returncode == 0, done.stderr
    owners = {call["file"]: (call["rule"], call["line"], call["owner"]) for call in data["calls"]}
    installed = owners[str(site / "oldsteps" / "__init__.py")]
    assert installed[:2] == ("TPU102", 5)
    assert (installed[2]["kind"], installed[2]["name"], installed[2]["version"]) == ("distribution", "old-tpu-steps", "0.3.1")
    if env_name != TF21:  # what Python's own reader of installed distributions says, in that interpreter
        asked = subprocess.run([require_python(env_name), "-c", "import importlib.metadata as m; d = m.distribution('old-tpu-steps'); "
                                "print(d.metadata['Name'], d.version)"], env=dict(os.environ, PYTHONPATH=path),
                               stdout=subprocess.PIPE, universal_newlines=True, check=True)
        assert asked.stdout.split() == [installed[2]["name"], installed[2]["version"]]
    assert owners[str(vendored / "vendored_steps.py")] == ("TPU102", 5, {"kind": "folder", "folder": str(vendored)})
    assert "upgrade it to a release written for TF 2.4 or later" in done.stderr
    assert "migrate-tpu fix {}".format(vendored / "vendored_steps.py") in done.stderr


@pytest.mark.parametrize("env_name", [TF24, TF221])
def test_a_gone_method_the_program_catches_is_named_where_it_failed(tmp_path, env_name):
    """2020 compatibility code tried ``experimental_run_v2`` and fell back on ``run`` when it
    raised: the run goes on, and the record names the place, the rule and the failure, as for
    an uncaught one; a guard that only asks (``hasattr``) is not a use."""
    (tmp_path / "compat").mkdir()
    script = tmp_path / "compat" / "compat.py"
    script.write_text(textwrap.dedent("""\
        import tensorflow as tf
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
        print("guard", hasattr(strategy, "experimental_run_v2"))
        def run_compat(fn, args):
            try:
                return strategy.experimental_run_v2(fn, args=args)
            except AttributeError:
                return strategy.run(fn, args=args)
        @tf.function
        def step(x):
            return run_compat(lambda v: v * 2.0, (x,))
        print("ran", float(step(tf.constant(1.0)).values[0]))
    """))
    done, data = run(tmp_path, env_name, "2.4", program=script.parent, script="compat.py")
    assert done.returncode == 0 and "ran 2.0" in done.stdout, done.stderr
    assert places(data) == {"TPU101": (["compat", "compat.py"], 9, 1, True, "tree")}, done.stderr
    assert "compat.py:9: TPU101" in done.stderr and "failed: AttributeError" in done.stderr
