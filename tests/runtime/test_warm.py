"""Warm starts (runtime/process/warm.py): a run forked from a warm interpreter behaves as a cold start.

Each test drives ``launch.launch`` from a plain interpreter (a driver process, as the CLI
does), cold (``MIGRATE_TPU_WARM=0``) and warm, on the real TF 2.4.1 interpreter, and compares
what the runs printed, their exit statuses and verify's records; then what a timeout, a
crash, the launcher's death and two runs in a row do.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
from roundtrip_helpers import REPO, TF21, TF24, TF221, require_python

from migrate_tpu.runtime.process import warm_pool

pytestmark = pytest.mark.tf

DRIVER = textwrap.dedent("""
    import json, os, sys
    from migrate_tpu.runtime.process import launch, warm, warm_pool
    runs = json.loads(sys.argv[1])
    results = []
    for run in runs:
        saved_env, saved_cwd = dict(os.environ), os.getcwd()
        for name, value in run.get("env", {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        os.environ[warm.WARM_VARIABLE] = "1" if run.get("warm", True) else "0"
        os.chdir(run.get("cwd", saved_cwd))
        saved = os.dup(1), os.dup(2)
        with open(run["out"], "wb") as out, open(run["err"], "wb") as err:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            try:
                warm.LAST = warm.WarmRun()
                status = launch.launch(run["script"], run.get("args", []), python=run["python"],
                                       timeout=run.get("timeout"), replicas=run.get("replicas"))
            finally:
                sys.stdout.flush(); sys.stderr.flush()
                os.dup2(saved[0], 1); os.dup2(saved[1], 2)
        os.chdir(saved_cwd)
        os.environ.clear(); os.environ.update(saved_env)
        pool = warm_pool._POOL.get("pool")
        results.append({"status": status, "cold_reason": warm.LAST.cold_reason, "pid": warm.LAST.pid,
                        "pool": pool.folder if pool else None})
        print(json.dumps(results[-1]), flush=True)
""")


def drive(tmp_path, runs, env=None, wait=True):
    """Run the driver over ``runs``; each run's result with its stdout and stderr."""
    for k, run in enumerate(runs):
        run.setdefault("out", str(tmp_path / "run{}.out".format(k)))
        run.setdefault("err", str(tmp_path / "run{}.err".format(k)))
    environ = dict(os.environ, PYTHONPATH=str(REPO), PYTHONHASHSEED="0")
    environ.pop(warm_pool.POOL_VARIABLE, None)  # a pool of its own: the driver's death is tested
    environ.update(env or {})
    argv = [sys.executable, "-c", DRIVER, json.dumps(runs)]
    if not wait:
        return subprocess.Popen(argv, cwd=str(tmp_path), env=environ, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True)
    done = subprocess.run(argv, cwd=str(tmp_path), env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    for run, result in zip(runs, results):
        result["stdout"] = Path(run["out"]).read_text("utf-8", "replace")
        result["stderr"] = Path(run["err"]).read_text("utf-8", "replace")
    return results


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open("/proc/{}/stat".format(pid)) as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_dead(pids, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


PROGRAM = textwrap.dedent("""
    import os, sys, random
    import numpy as np
    import tensorflow as tf
    strategy = tf.distribute.experimental.TPUStrategy(
        tf.distribute.cluster_resolver.TPUClusterResolver(tpu=""))
    v = tf.Variable(1.0)
    @tf.function
    def step(x):
        return strategy.reduce("SUM", strategy.run(lambda: x * 2.0), axis=None)
    for i in range(3):
        print("step", i, float(step(tf.constant(float(i)))))
    print("argv", sys.argv, "cwd", os.path.basename(os.getcwd()), "X", os.environ.get("X"))
    print("hash", hash("migrate"), "unseeded numpy", np.random.rand() >= 0)
    print("stdout is a tty:", sys.stdout.isatty(), "line buffering:", sys.stdout.line_buffering)
    sys.stderr.write("to stderr\\n")
    os.environ["X"] = "set by the run"
    sys.exit(int(os.environ.get("CODE", "0")))
""")


@pytest.fixture
def python():
    return require_python(TF24)


@pytest.mark.parametrize("env_name", [TF21, TF24, TF221])
def test_a_warm_run_prints_exits_and_records_as_a_cold_one(tmp_path, env_name):
    """On TF 2.1.0 the program fails (``strategy.run`` is 2.4's name): the same traceback."""
    python = require_python(env_name)
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    runs = []
    for k, is_warm in enumerate([False, False, True, True]):
        record = tmp_path / "record{}.json".format(k)
        runs.append({"script": str(script), "args": ["--flag", "a b"], "python": python, "warm": is_warm,
                     "env": {"X": "given", "CODE": "3", "MIGRATE_TPU_RECORD": str(record), "MIGRATE_TPU_SEED": "0"}})
    results = drive(tmp_path, runs)
    cold, cold2, hot, hot2 = results
    assert cold["pid"] is None and cold2["pid"] is None
    assert hot["pid"] and hot2["pid"] and hot["pid"] != hot2["pid"], hot
    for result in results:
        if env_name == TF21:
            assert result["status"] == 1 and "has no attribute 'run'" in result["stderr"], result
            continue
        assert result["status"] == 3, result["stderr"][-3000:]
        assert "step 2 32.0" in result["stdout"] and "X given" in result["stdout"], result
    assert hot["stdout"] == cold["stdout"] == hot2["stdout"] == cold2["stdout"]
    assert hot["stderr"] == cold["stderr"] == hot2["stderr"]
    records = [json.loads((tmp_path / "record{}.json".format(k)).read_text("utf-8")) for k in range(4)]
    # the run's wall time ("seconds", to the millisecond) can agree between the cold runs by chance
    same_in_cold = {key for key in records[0] if records[0].get(key) == records[1].get(key)} - {"seconds"}
    assert same_in_cold  # the A/A control agrees on something to compare
    for key in same_in_cold:
        assert records[2].get(key) == records[0][key] == records[3].get(key), key


def test_runs_in_a_row_each_take_their_own_env_cwd_argv_and_hash_seed(tmp_path, python):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    runs = [
        {"script": str(script), "args": ["first"], "python": python, "cwd": str(one), "env": {"X": "1"}},
        {"script": str(script), "args": ["second"], "python": python, "cwd": str(two), "env": {"X": None}},
        {"script": str(script), "args": [], "python": python, "env": {"PYTHONHASHSEED": "7"}},
        {"script": str(script), "args": [], "python": python, "env": {"PYTHONHASHSEED": "7"}, "warm": False},
    ]
    first, second, seeded, seeded_cold = drive(tmp_path, runs)
    assert first["cold_reason"] is None and second["cold_reason"] is None and seeded["cold_reason"] is None
    assert "'first'] cwd one X 1" in first["stdout"]
    assert "'second'] cwd two X None" in second["stdout"]  # not the first run's X, nor its change
    hashes = [line for r in (first, seeded, seeded_cold) for line in r["stdout"].splitlines() if line.startswith("hash")]
    assert hashes[1] == hashes[2] != hashes[0]  # PYTHONHASHSEED=7 as a cold start has it
    assert "line buffering: False" in first["stdout"]  # a file: block-buffered, as at a cold start


def test_without_a_hash_seed_runs_start_cold(tmp_path, python):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    result, = drive(tmp_path, [{"script": str(script), "python": python, "env": {"PYTHONHASHSEED": None}}])
    assert "PYTHONHASHSEED" in result["cold_reason"] and result["status"] == 0


def test_a_timeout_kills_the_runs_group_and_returns_124(tmp_path, python):
    script = tmp_path / "sleeper.py"
    pids = tmp_path / "pids"
    script.write_text(textwrap.dedent("""
        import os, subprocess, sys, time
        child = subprocess.Popen(["sleep", "1000"])
        open({!r}, "w").write("{{}} {{}}".format(os.getpid(), child.pid))
        print("sleeping", flush=True)
        time.sleep(1000)
    """.format(str(pids))))
    result, = drive(tmp_path, [{"script": str(script), "python": python, "timeout": 8}])
    assert result["cold_reason"] is None
    assert result["status"] == 124
    assert "still running after the 8s timeout; stopping it" in result["stderr"]
    run_pid, sleep_pid = (int(p) for p in pids.read_text().split())
    assert _wait_dead([run_pid, sleep_pid]) == []


@pytest.mark.parametrize("timeout", [None, 300])
def test_a_crash_gives_the_status_of_a_cold_start(tmp_path, python, timeout):
    runs = []
    for how in ("os.abort()", "os.kill(os.getpid(), signal.SIGKILL)"):
        script = tmp_path / "crash{}.py".format(len(runs))
        script.write_text("import os, signal\nprint('before', flush=True)\n{}\n".format(how))
        for is_warm in (False, True):
            runs.append({"script": str(script), "python": python, "warm": is_warm, "timeout": timeout})
    results = drive(tmp_path, runs)
    statuses = [r["status"] for r in results]
    expected = [-6, -6, -9, -9] if timeout is None else [134, 134, 137, 137]
    assert statuses == expected, results
    assert results[1]["cold_reason"] is None and results[3]["cold_reason"] is None


def test_killing_the_launcher_leaves_no_server_and_no_run(tmp_path, python):
    script = tmp_path / "sleeper.py"
    pid_file = tmp_path / "pid"
    script.write_text("import os, time\nopen({!r}, 'w').write(str(os.getpid()))\ntime.sleep(1000)\n".format(str(pid_file)))
    driver = drive(tmp_path, [{"script": str(script), "python": python}], wait=False)
    try:
        deadline = time.time() + 300
        while not pid_file.exists() and time.time() < deadline and driver.poll() is None:
            time.sleep(0.2)
        assert pid_file.exists(), driver.communicate()
        time.sleep(0.5)
        run_pid = int(pid_file.read_text())
        servers = [int(p.read_text()) for base in {Path("/tmp"), Path(tempfile.gettempdir())} for p in base.glob("migrate-tpu-warm-*/*.pid")
                   if _alive(int(p.read_text() or 0)) and _parent_chain_has(int(p.read_text()), driver.pid)]
        assert servers, "no warm server of the driver's"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        assert _wait_dead([run_pid] + servers) == []
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()


def _parent_chain_has(pid, ancestor):
    try:
        with open("/proc/{}/stat".format(pid)) as handle:
            return int(handle.read().rsplit(")", 1)[-1].split()[1]) == ancestor
    except (OSError, ValueError, IndexError):
        return False


def test_ctrl_c_stops_the_run_and_returns_130(tmp_path, python):
    script = tmp_path / "sleeper.py"
    pid_file = tmp_path / "pid"
    script.write_text("import os, time\nopen({!r}, 'w').write(str(os.getpid()))\ntime.sleep(1000)\n".format(str(pid_file)))
    driver = drive(tmp_path, [{"script": str(script), "python": python}], wait=False)
    try:
        deadline = time.time() + 300
        while not pid_file.exists() and time.time() < deadline and driver.poll() is None:
            time.sleep(0.2)
        assert pid_file.exists(), driver.communicate()
        time.sleep(1.0)  # the runner's handlers are in place
        os.kill(driver.pid, signal.SIGINT)
        out, err = driver.communicate(timeout=60)
        result = json.loads(out.splitlines()[-1])
        assert result["status"] == 130 and result["pid"], (out, err)
        assert "KeyboardInterrupt" in (tmp_path / "run0.err").read_text(), "the run saw Ctrl-C, as a cold one does"
        assert _wait_dead([int(pid_file.read_text())]) == []
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
