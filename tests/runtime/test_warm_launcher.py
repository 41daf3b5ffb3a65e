"""The launcher's side of a warm run (runtime/process/warm.py) against a stand-in server (no TensorFlow):
a run whose pid the server tells only after the launcher's timeout is stopped all the same, not
left running after the launcher returns (verify's `--timeout 2` on a busy machine left one)."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from migrate_tpu.runtime.process import warm, warm_server


def _server_telling_the_pid_late(sock_path, delay, runs):
    """Serve one request as the warm server does (pid first, then the exit), telling the pid
    ``delay`` seconds after the run started; the run sleeps."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path)
    listener.listen(1)

    def serve():
        conn, _ = listener.accept()
        _, fds = warm_server._receive(conn)
        for fd in fds:
            os.close(fd)
        run = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
        runs.append(run)
        time.sleep(delay)
        conn.sendall(json.dumps({"pid": run.pid}).encode() + b"\n")
        status = run.wait()
        conn.sendall(json.dumps({"signal": -status} if status < 0 else {"exit": status}).encode() + b"\n")
        conn.close()
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_a_run_whose_pid_comes_after_the_timeout_is_stopped_before_the_launcher_returns(tmp_path):
    runs = []
    sock = str(tmp_path / "server.sock")
    thread = _server_telling_the_pid_late(sock, 0.4, runs)
    try:
        run = warm.WarmRun()
        status = warm._run_on(sock, warm._request([sys.executable, "-m", "migrate_tpu.runtime", "x.py"], dict(os.environ)),
                              0.1, True, "migrate-tpu run", run)
        assert status == warm.EXIT_TIMEOUT
        assert len(runs) == 1 and run.pid == runs[0].pid
        assert runs[0].poll() == -signal.SIGTERM  # stopped (and reaped) before _run_on returned
    finally:
        for started in runs:
            if started.poll() is None:
                started.kill()
                started.wait()
        thread.join(10)
