"""Pods: the supervision of host processes (real processes, no TensorFlow) and, under the
``roundtrip`` marker, emulated pods of 1, 2 and 4 hosts in the real TensorFlow interpreters."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from migrate_tpu.runtime.process import launch, pod

REPO = Path(__file__).resolve().parents[2]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose
    try:
        with open("/proc/{}/stat".format(pid)) as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _wait_dead(pids, seconds=60):  # returns as soon as they are gone; the margin is for a loaded machine
    deadline = time.time() + seconds
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def _host_program(tmp_path, body):
    """A host stand-in: watches the launcher as the runner does, records its pid (and the
    pid of a child it starts, to check that groups end), then runs ``body``."""
    script = tmp_path / "host.py"
    script.write_text(textwrap.dedent("""\
        import json, os, subprocess, sys, time
        from migrate_tpu.runtime.process import pod
        pod.watch_launcher()
        finish_line = pod.FinishLine.take()
        k = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
        def say(*words):
            # one write per line: host 0 shares the launcher's stdout with the lines relayed
            # from the other hosts, and print() may write a line in pieces (PYTHONUNBUFFERED)
            os.write(1, (" ".join(str(w) for w in words) + "\\n").encode())
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        with open(os.path.join(sys.argv[1], "pids-%d" % k), "w") as f:
            f.write("%d %d" % (os.getpid(), child.pid))
        say("line one of", k)
        sys.stderr.write("err of %d\\n" % k)
        sys.stderr.flush()
        """) + textwrap.dedent(body))
    return script


def _pids(folder):
    found = []
    for path in Path(folder).glob("pids-*"):
        found += [int(v) for v in path.read_text().split()]
    return found


def _supervise(tmp_path, body, hosts=3, timeout=None, cli_signals=False):
    """Run ``hosts`` stand-ins under pod.run_hosts in a separate launcher process (with
    ``cli_signals``, inside the command line's own handling of stop signals)."""
    script = _host_program(tmp_path, body)
    code = textwrap.dedent("""\
        import contextlib, os, sys
        from migrate_tpu.runtime.process import launch, pod
        hosts, folder, script = int(sys.argv[1]), sys.argv[2], sys.argv[3]
        timeout = float(sys.argv[4]) if sys.argv[4] != "-" else None
        envs = []
        for config in pod.tf_configs(hosts):
            env = launch.environment()
            env["TF_CONFIG"] = config
            envs.append(env)
        guard = contextlib.nullcontext()
        if sys.argv[5] == "cli":
            from migrate_tpu.engine.pipeline import stop_signals
            guard = stop_signals()
        with guard:
            sys.exit(pod.run_hosts([[sys.executable, script, folder]] * hosts, envs, timeout=timeout))
        """)
    argv = [sys.executable, "-c", code, str(hosts), str(tmp_path), str(script),
            "-" if timeout is None else str(timeout), "cli" if cli_signals else "-"]
    return argv


def _run(argv, limit=120):
    start = time.time()
    done = subprocess.run(argv, cwd=str(REPO), env=launch.environment(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=limit)
    return done, time.time() - start


def test_tf_configs_give_each_host_its_worker_task():
    configs = [json.loads(c) for c in pod.tf_configs(3, ports=[1001, 1002, 1003])]
    assert [c["task"] for c in configs] == [{"type": "worker", "index": k} for k in range(3)]
    assert all(c["cluster"] == {"worker": ["localhost:1001", "localhost:1002", "localhost:1003"]}
               for c in configs)
    ports = pod.free_ports(4)
    assert len(set(ports)) == 4


def test_hosts_output_exit_status_and_nothing_left(tmp_path):
    done, _ = _run(_supervise(tmp_path, "sys.exit(0 if k != 2 else 0)\n"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "line one of 0" in lines  # host 0 unchanged
    assert "[host 1] line one of 1" in lines and "[host 2] line one of 2" in lines
    assert "[host 2] err of 2" in done.stderr.splitlines() and "err of 0" in done.stderr.splitlines()
    assert _wait_dead(_pids(tmp_path)) == []  # the hosts' own children too


@pytest.mark.slow
def test_no_host_passes_the_finish_line_before_every_host_crossed_it(tmp_path):
    # Host 0 crosses at once; the last host only after a while, having first left a mark.
    # Host 0 must find the mark once released: a host that left while a peer was still in a
    # collective with it would close the peer's sockets (the CI failure this line prevents).
    body = textwrap.dedent("""\
        mark = os.path.join(sys.argv[1], "crossing-%d" % k)
        if k == 2:
            time.sleep(2)
        open(mark, "w").close()
        finish_line.cross()
        others = sorted(os.listdir(sys.argv[1]))
        say("released", k, [n for n in others if n.startswith("crossing-")])
        say("variable of %d: %s" % (k, os.environ.get("MIGRATE_TPU_FINISH_FDS")))
        """)
    done, _ = _run(_supervise(tmp_path, body, timeout=100))
    assert done.returncode == 0, done.stderr
    everyone = "['crossing-0', 'crossing-1', 'crossing-2']"
    assert "released 0 " + everyone in done.stdout.splitlines()
    assert "[host 1] released 1 " + everyone in done.stdout.splitlines()
    # the host took the variable out of its environment: what the script starts never sees it
    assert "variable of 0: None" in done.stdout.splitlines()


@pytest.mark.slow
def test_a_host_that_exits_without_crossing_releases_the_others(tmp_path):
    body = textwrap.dedent("""\
        if k == 1:
            time.sleep(1)
            sys.exit(0)
        finish_line.cross()
        say("released", k)
        """)
    done, _ = _run(_supervise(tmp_path, body, timeout=100))
    assert done.returncode == 0, done.stderr
    assert "released 0" in done.stdout.splitlines()
    assert "[host 2] released 2" in done.stdout.splitlines()


@pytest.mark.slow
def test_a_failing_host_stops_every_host_and_gives_its_status(tmp_path):
    body = "if k == 1:\n    time.sleep(1); sys.exit(5)\ntime.sleep(300)\n"
    done, took = _run(_supervise(tmp_path, body))
    assert done.returncode == 5, done.stderr
    assert "host 1 exited with status 5; stopping the other hosts" in done.stderr
    assert took < 60
    assert _wait_dead(_pids(tmp_path)) == []


def test_a_host_killed_by_a_signal(tmp_path):
    body = "if k == 2:\n    os.kill(os.getpid(), 9)\ntime.sleep(300)\n"
    done, _ = _run(_supervise(tmp_path, body))
    assert done.returncode == 128 + 9, done.stderr
    assert "host 2 exited with status 137" in done.stderr
    assert _wait_dead(_pids(tmp_path)) == []


@pytest.mark.slow
def test_timeout_stops_a_hanging_pod_and_names_the_hosts(tmp_path):
    body = "if k == 0:\n    sys.exit(0)\ntime.sleep(300)\n"
    done, took = _run(_supervise(tmp_path, body, timeout=3))
    assert done.returncode == pod.EXIT_TIMEOUT, done.stderr
    assert "hosts 1, 2 still running after the 3s timeout; stopping every host" in done.stderr
    assert took < 60
    assert _wait_dead(_pids(tmp_path)) == []


def _wait_for_pids(folder, count, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline and len(_pids(folder)) < count:
        time.sleep(0.1)
    return _pids(folder)


@pytest.mark.parametrize("signum,cli_signals", [(signal.SIGINT, False), (signal.SIGKILL, False),
                                                (signal.SIGINT, True)])
def test_launcher_interrupted_or_killed_leaves_no_process(tmp_path, signum, cli_signals):
    """Ctrl-C (SIGINT to the launcher) stops the pod, also under the command line's own
    signal handling (`migrate-tpu run`); SIGKILL of the launcher, which can do nothing, is
    noticed by every host through the launcher's pipe."""
    launcher = subprocess.Popen(_supervise(tmp_path, "time.sleep(300)\n", cli_signals=cli_signals),
                                cwd=str(REPO),
                                env=launch.environment(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True)
    try:
        pids = _wait_for_pids(tmp_path, 6)
        assert len(pids) == 6, launcher.stderr.read() if launcher.poll() is not None else pids
        launcher.send_signal(signum)
        out, err = launcher.communicate(timeout=60)
        if signum == signal.SIGINT:
            assert launcher.returncode == pod.EXIT_INTERRUPTED, err
            assert "interrupted; stopping every host" in err
        assert _wait_dead(pids) == [], err
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        for pid in _pids(tmp_path):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_uneven_replicas_are_a_usage_error(tmp_path, capsys):
    script = tmp_path / "x.py"
    script.write_text("print('never')\n")
    assert launch.launch(str(script), [], replicas=6, hosts=4) == 2
    assert "6 replicas cannot be spread evenly over 4 hosts" in capsys.readouterr().err
    assert launch.command("s.py", [], launch.RunnerOptions(replicas=8, hosts=2, quiet=True))[3:] == [
        "--hosts", "2", "--replicas", "8", "--quiet", "s.py"]
    assert launch.pod_replicas(4) == 32 and launch.pod_replicas(2, 4) == 4


@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_a_host_writes_whole_lines(unbuffered):
    """Host 0 shares the launcher's stdout with the lines relayed from the other hosts: a
    line that host 0 prints in pieces (``print`` under PYTHONUNBUFFERED) must not let a
    relayed line in between its pieces."""
    code = textwrap.dedent("""\
        import os, sys
        from migrate_tpu.runtime.process import pod
        pod.whole_lines()
        print("host 0", "says", end="")
        os.write(1, b"[host 1] a relayed line\\n")  # the launcher, meanwhile
        print(" hello")
        sys.stderr.write("an error ")
        os.write(2, b"[host 1] relayed\\n")
        sys.stderr.write("of host 0\\n")
        """)
    env = launch.environment()
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = unbuffered
    done = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[host 1] a relayed line", "host 0 says hello"]
    assert done.stderr.splitlines() == ["[host 1] relayed", "an error of host 0"]


def test_only_a_script_that_builds_mwms_itself_is_multi_client(tmp_path):
    """A TPU program is one program on a pod (its client); a script that builds
    MultiWorkerMirroredStrategy and no TPUStrategy is TensorFlow's multi-client model."""
    cases = {
        "mwms.py": ("strategy = tf.distribute.MultiWorkerMirroredStrategy()\n", True),
        "tpu.py": ("strategy = tf.distribute.TPUStrategy(resolver)\n", False),
        "both.py": ("a = tf.distribute.TPUStrategy(r)\nb = tf.distribute.MultiWorkerMirroredStrategy()\n", False),
        "plain.py": ("print('hello')\n", False),
    }
    for name, (source, expected) in cases.items():
        (tmp_path / name).write_text(source)
        assert pod.is_multi_client_script(str(tmp_path / name)) is expected, name
    assert pod.is_multi_client_script(str(tmp_path / "missing.py")) is False


def test_multi_client_is_read_from_the_code_as_verify_reads_it(tmp_path):
    """One reading of a program's code for `run` and verify (runtime/program/program_code.py): a
    comment, a string or a notebook's output that names the strategy is no code that builds it
    (the run would have been split into workers for a word); a helper module of the program's
    folder that builds it is (the program ran once per worker, and looked like one client)."""
    (tmp_path / "commented.py").write_text("# unlike MultiWorkerMirroredStrategy, one worker\nprint('MultiWorkerMirroredStrategy')\n")
    assert pod.is_multi_client_script(str(tmp_path / "commented.py")) is False
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "dist.py").write_text("import tensorflow as tf\n\ndef make():\n    return tf.distribute.MultiWorkerMirroredStrategy()\n")
    (tmp_path / "main.py").write_text("from helpers.dist import make\nstrategy = make()\n")
    assert pod.is_multi_client_script(str(tmp_path / "main.py")) is True
    cells = [{"cell_type": "code", "source": "print(1)", "outputs": [{"text": "MultiWorkerMirroredStrategy"}]},
             {"cell_type": "markdown", "source": "tf.distribute.MultiWorkerMirroredStrategy()"},
             {"cell_type": "code", "source": ["!pip list\n", "s = tf.distribute.experimental.MultiWorkerMirroredStrategy()\n"]}]
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": cells[:2], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}))
    assert pod.is_multi_client_script(str(tmp_path / "nb.ipynb")) is False
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 5, "metadata": {}}))
    assert pod.is_multi_client_script(str(tmp_path / "nb.ipynb")) is True
