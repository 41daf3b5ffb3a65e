"""Helpers for the round-trip tests: the three TensorFlow interpreters, the
codemod CLI, running a program under the runtime, comparing its results.

The interpreters come from ``scripts/tf-envs``.  A missing one makes the tests
that need it skip with a loud reason (``-ra`` lists it in the summary); on CI
(``CI=true``) or with ``MIGRATE_TPU_REQUIRE_TF_ENVS=1`` it fails them instead
(see ``tests/conftest.py``).
"""

import json
import math
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from migrate_tpu.engine.pipeline import default_jobs
from migrate_tpu.runtime.process import envs, launch
from tests.conftest import missing_tf_env

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"
RUN_TIMEOUT = 300

# (name, what it is for)
TF21, TF24, TF221 = "tf2.1", "tf2.4", "tf2.21"


def require_python(name):
    """The env's interpreter, or skip loudly (fail on CI: see tests/conftest.py)."""
    python = envs.interpreter(name)
    if python is None:
        py, tf = envs.ENVS[name]
        message = ("!!! NO {} INTERPRETER (Python {} + TensorFlow {}) under {}: "
                   "round-trip NOT RUN; create it with scripts/tf-envs {} (or migrate-tpu envs {})".format(
                       name, py, tf, envs.envs_dir(), name, name))
        missing_tf_env(message)
    return python


def _cli_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


_CLI_STATE = {}


def require_codemod_cli():
    """Skip loudly while ``python -m migrate_tpu fix -`` does not exist yet."""
    if "ok" not in _CLI_STATE:
        ok = (REPO / "migrate_tpu" / "cli.py").is_file()
        if ok:
            probe = subprocess.run([sys.executable, "-m", "migrate_tpu", "fix", "--help"],
                                   cwd=str(REPO), env=_cli_env(), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
            ok = probe.returncode == 0
        _CLI_STATE["ok"] = ok
    if not _CLI_STATE["ok"]:
        message = "!!! codemod CLI `python -m migrate_tpu fix -` unavailable: round-trip NOT RUN"
        sys.stderr.write("\n" + message + "\n")
        pytest.skip(message)


def migrate(source, unsafe_fixes=False):
    """(exit status, migrated source, stderr) from the real codemod CLI reading stdin."""
    require_codemod_cli()
    argv = [sys.executable, "-m", "migrate_tpu", "fix"]
    if unsafe_fixes:
        argv.append("--unsafe-fixes")
    argv.append("-")
    done = subprocess.run(argv, input=source, cwd=str(REPO), env=_cli_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120)
    assert done.returncode in (0, 1), "codemod failed (exit {}):\n{}".format(done.returncode, done.stderr)
    assert done.stdout.strip(), "codemod printed no source:\n" + done.stderr
    return done.returncode, done.stdout, done.stderr


def run_jobs():
    """How many runs a module's batch keeps going at once: ``MIGRATE_TPU_ROUNDTRIP_JOBS``, else
    one per core this test process has to itself (pytest-xdist's workers share the cores, and say
    how many they are in ``PYTEST_XDIST_WORKER_COUNT``).  A warm run keeps a core busy; past one
    TensorFlow process a core, their thread pools spin against each other: the whole suite took
    539 s and 903 CPU s with one run a worker, against 578-581 s and 957-1,013 CPU s with three
    or four (benchmarks/README.md)."""
    try:
        return max(1, int(os.environ["MIGRATE_TPU_ROUNDTRIP_JOBS"]))
    except (KeyError, ValueError):
        pass
    try:
        workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    except ValueError:
        workers = 1
    return max(1, default_jobs() // workers)  # the cores this process may use, as `fix --jobs` counts them


_POOL = []


def _pool():
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=run_jobs()))
    return _POOL[0]


# Each run starts as `migrate-tpu run` starts one: forked from the session's warm interpreter
# (tests/conftest.py owns the pool) where that is safe, else cold; its argv, environment and
# output are the same either way (warm_start.py).
WARM_START = Path(__file__).resolve().parent / "warm_start.py"


def _execute(argv, env):
    try:
        done = subprocess.run([sys.executable, str(WARM_START)] + list(argv), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=RUN_TIMEOUT)
        return done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout or ""
        err = expired.stderr or ""
        if isinstance(out, bytes):
            out = out.decode("utf-8", "replace")
        if isinstance(err, bytes):
            err = err.decode("utf-8", "replace")
        return -9, out, err + "\n[killed after {}s]".format(RUN_TIMEOUT)


class Run(object):
    """One program executed under the runtime in one interpreter (queued on a shared pool, so
    that several runs overlap; each forked from a warm interpreter where that is safe)."""

    def __init__(self, label, argv, env):
        self.label = label
        self.argv = argv
        self._future = _pool().submit(_execute, argv, env)

    def wait(self):
        return self._future.result()

    @property
    def returncode(self):
        return self.wait()[0]

    @property
    def stdout(self):
        return self.wait()[1]

    @property
    def stderr(self):
        return self.wait()[2]

    def describe(self):
        rc, out, err = self.wait()
        return "{} exited {}\n$ {}\n--- stdout (tail)\n{}\n--- stderr (tail)\n{}".format(
            self.label, rc, " ".join(self.argv), out[-3000:], err[-5000:])

    def result(self):
        """The JSON of the program's last ``RESULT`` line; fails the test if it did not finish."""
        rc, out, _ = self.wait()
        lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
        assert rc == 0 and lines, self.describe()
        return json.loads(lines[-1][len("RESULT "):])


def start(python, script, tf_api=None, replicas=None, label=None, extra_env=None):
    """Queue ``script`` under ``python -m migrate_tpu.runtime`` (argv and env from the real launcher)."""
    argv = launch.command(str(script), [], launch.RunnerOptions(replicas=replicas, tf_api=tf_api, python=python))
    argv.insert(argv.index("-m") + 2, "--quiet")
    env = launch.environment()
    env.pop("TPU_NAME", None)
    env.pop("KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", None)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.setdefault("PYTHONHASHSEED", "0")
    if extra_env:
        env.update(extra_env)
    return Run(label or "{} {}".format(Path(python).parent.parent.name, Path(script).name), argv, env)


def assert_same(before, after, where="result", rel=1e-4, abs_=1e-5):
    """Equal structure, equal ints/strings/bools, floats within tolerance.

    Keys starting with ``_`` are version-dependent facts and are not compared.
    """
    if isinstance(before, dict):
        assert isinstance(after, dict), "{}: {!r} vs {!r}".format(where, before, after)
        keys_b = sorted(k for k in before if not k.startswith("_"))
        keys_a = sorted(k for k in after if not k.startswith("_"))
        assert keys_b == keys_a, "{}: keys {} vs {}".format(where, keys_b, keys_a)
        for key in keys_b:
            assert_same(before[key], after[key], "{}.{}".format(where, key), rel, abs_)
    elif isinstance(before, list):
        assert isinstance(after, list) and len(before) == len(after), \
            "{}: {!r} vs {!r}".format(where, before, after)
        for i, (b, a) in enumerate(zip(before, after)):
            assert_same(b, a, "{}[{}]".format(where, i), rel, abs_)
    elif isinstance(before, bool) or isinstance(after, bool) or not isinstance(before, (int, float)):
        assert before == after, "{}: {!r} vs {!r}".format(where, before, after)
    else:
        assert isinstance(after, (int, float)) and not isinstance(after, bool), \
            "{}: {!r} vs {!r}".format(where, before, after)
        if isinstance(before, int) and isinstance(after, int):
            assert before == after, "{}: {} vs {}".format(where, before, after)
        else:
            assert math.isclose(before, after, rel_tol=rel, abs_tol=abs_), \
                "{}: {!r} vs {!r}".format(where, before, after)
