"""Warm interpreters: each run a fresh process forked from one that has TensorFlow imported.

``import tensorflow`` takes seconds (6 s for TF 2.21 on a loaded 2-core machine); a run
after it, under a second.  ``migrate-tpu verify`` runs a program at least three times, the
tests hundreds of times.  A *warm server* is started once per interpreter (and per
environment that could change what importing does): it imports TensorFlow, the runtime
and the compat packages that every run imports, and initialises nothing (no devices, no
eager context, no thread of its own: checked on TF 2.1.0, 2.4.1 and 2.21.0, see
docs/runtime.md, "Warm starts").  Each run is then a fresh process forked from it, which
takes the run's argv, environment, current folder, umask, priority (nice value) and
stdin/stdout/stderr, and runs the runner's ``main`` as a cold ``python -m migrate_tpu.runtime`` would.

How the pieces talk (all on this machine, one user):

* the *owner* holds a *pool*: a private folder (0700) with a FIFO, the lifeline, which the
  owner keeps open for writing as long as it lives.  A server dies when the lifeline
  reaches end-of-file (the owner is gone, however it ended) or the owner's pid is gone;
  ``MIGRATE_TPU_WARM_POOL`` hands a pool to child processes (the test session's, so that
  every ``migrate-tpu verify`` the tests start finds the servers warm);
* a server listens on ``KEY.sock`` in the pool's folder, where ``KEY`` hashes the
  interpreter, ``--verbose`` and the environment less the variables a run may change
  without another server (:func:`per_run`); it appears only once the server is ready;
* a client connects and sends the run (argv, cwd, environment, umask, nice value, the
  signals its process ignores) with its stdin, stdout, stderr and launcher-watch pipe as file
  descriptors (``SCM_RIGHTS``).  The server forks a *supervisor* for the connection, which
  forks the run's process: the supervisor sends the run's pid, waits for it, kills what is
  left of its process group, and sends its exit status.  A supervisor dies with its server
  (``PR_SET_PDEATHSIG``) and then kills the run's group; the run ends itself when its
  launcher is gone (the launcher-watch pipe, as in a cold start).

The client side (:func:`launch`, here, and the pool it asks for its server,
:mod:`migrate_tpu.runtime.process.warm_pool`) runs in the launcher's Python and imports no TensorFlow;
the server side (:mod:`migrate_tpu.runtime.process.warm_server`) runs in the TensorFlow interpreter.  Python 3.7 syntax.
"""

import json
import os
import select
import signal
import socket
import sys
import time

from migrate_tpu.runtime.process.warm_pool import _kill_group, _send_request, pool

#: ``MIGRATE_TPU_WARM=0`` (or ``off``, ``false``, ``no``) makes every run a cold start.
WARM_VARIABLE = "MIGRATE_TPU_WARM"

#: How long a stopped run may take to exit after SIGINT or SIGTERM before it is killed
#: (``pod.GRACE_SECONDS``).
GRACE_SECONDS = 3.0

EXIT_TIMEOUT = 124
EXIT_INTERRUPTED = 130

#: Signals whose disposition a cold start inherits when the launcher ignores them (an
#: ignored signal stays ignored across ``exec``): ``nohup`` (SIGHUP), a background job (SIGINT).
_INHERITED_IGNORES = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGTSTP",
                      "SIGTTIN", "SIGTTOU", "SIGCHLD", "SIGWINCH")

#: Whether runs are warm when ``MIGRATE_TPU_WARM`` says nothing.
DEFAULT = True


def wanted(environ=None):
    """Whether warm starts are asked for (``MIGRATE_TPU_WARM=1``/``0``, else :data:`DEFAULT`)."""
    value = (os.environ if environ is None else environ).get(WARM_VARIABLE, "").strip().lower()
    if not value:
        return DEFAULT
    return value not in ("0", "off", "false", "no")


def available():
    """Whether this platform forks warm servers at all (Linux: see :func:`unsafe_reason`)."""
    return sys.platform.startswith("linux") and hasattr(socket, "AF_UNIX") and hasattr(os, "fork")


def unsafe_reason(argv, multi_client=False, environ=None):
    """Why a run of ``argv`` with ``environ`` must start cold here, or ``None`` when it may be forked."""
    env = os.environ if environ is None else environ
    if not available():
        # macOS: frameworks (Accelerate, the Objective-C runtime) are not fork-safe once
        # loaded; Windows has no fork.  Linux is where it was checked.
        return "not Linux"
    if multi_client:
        return "a multi-client cluster (--hosts): worker processes of their own"
    if env.get("PYTHONHASHSEED", "").strip() in ("", "random"):
        # hash randomisation is fixed when an interpreter starts: each cold run has its own
        # seed, every process forked from one server would share the server's
        return "PYTHONHASHSEED is not set (each cold run hashes strings its own way)"
    if len(argv) < 3 or list(argv[1:3]) != ["-m", "migrate_tpu.runtime"]:
        return "not a run of the runtime"
    relative = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry and not os.path.isabs(entry)]
    if relative:
        # an interpreter makes PYTHONPATH's entries absolute against the folder it starts in: a
        # server started elsewhere would look for the run's packages in its own folder
        return "PYTHONPATH has a relative entry ({!r}), found from the folder a run starts in".format(relative[0])
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            return "file descriptor {} is closed".format(fd)
    return None


# --------------------------------------------------------------------------
# The launcher's side: one run on a server (the pool and its servers: warm_pool.py)
# --------------------------------------------------------------------------


def _nice():
    """This process' nice value (a cold child inherits it; so does a warm run)."""
    try:
        return os.getpriority(os.PRIO_PROCESS, 0)
    except (AttributeError, OSError):
        return 0


def _umask():
    """This process' umask (read from /proc: setting it to read it races with other threads)."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


class _Replies(object):
    """The server's newline-ended JSON replies on ``client``."""

    def __init__(self, client):
        self.client = client
        self.buffer = b""

    def next(self, deadline=None):
        """The next reply; ``None`` when the connection ended; raises ``socket.timeout`` at
        ``deadline`` (a ``time.monotonic()`` value)."""
        while b"\n" not in self.buffer:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise socket.timeout()
            readable, _, _ = select.select([self.client], [], [], wait)
            if not readable:
                continue
            try:
                chunk = self.client.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line.decode("utf-8"))


class WarmRun(object):
    """What :func:`launch` did: the exit status, or why the run started cold."""

    def __init__(self):
        self.status = None
        self.cold_reason = None
        self.pid = None


#: The last run's :class:`WarmRun` (for the tests and the benchmark).
LAST = WarmRun()


def launch(argv, env, timeout=None, verbose=False, label="migrate-tpu run"):
    """Run ``argv`` (``[python, "-m", "migrate_tpu.runtime", ...]``) with ``env`` in a process
    forked from a warm server, as ``launch.launch`` would cold; its exit status, or ``None``
    when the run must start cold (nothing was started then).

    Statuses as a cold start gives them: without ``timeout`` as ``Popen.wait`` (``-N`` for a
    run killed by signal N), with it as the supervision of :mod:`pod` does (``128+N``; 124 at
    the timeout); 130 after Ctrl-C."""
    global LAST
    LAST = run = WarmRun()
    if not wanted(env) or not wanted():
        run.cold_reason = "{}=0".format(WARM_VARIABLE)
        return None
    run.cold_reason = unsafe_reason(argv, environ=env)
    if run.cold_reason is not None:
        return None
    try:
        warm_pool = pool()
    except OSError as error:
        run.cold_reason = "no pool: {}".format(error)
        return None
    python = argv[0]
    for _ in (1, 2):
        sock = warm_pool.server(python, env, verbose)
        if sock is None:
            run.cold_reason = warm_pool.why_not(python, env, verbose) or "the server did not start"
            return None
        status = _run_on(sock, _request(argv, env), timeout, verbose, label, run)
        if status is not None:
            run.status = status
            return status
        if run.pid is not None:  # started, then the server went away: no status to give
            sys.stderr.write("{}: the warm interpreter went away during the run\n".format(label))
            sys.stderr.flush()
            run.status = 1
            return 1
        warm_pool.forget(sock)  # a server that died before the run: start another, once
    run.cold_reason = "the server did not answer"
    return None


def _request(argv, env):
    """The run as the server is told it: argv, this folder, ``env``, the umask and the signals
    this process ignores (a cold child would inherit them)."""
    from migrate_tpu.runtime.process import pod  # the launcher's side only

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    ignored = []
    for name in _INHERITED_IGNORES:
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) is signal.SIG_IGN:
            ignored.append(int(signum))
    env = dict(env)
    env.pop(pod.WATCH_FD_VARIABLE, None)
    return {"argv": list(argv), "cwd": os.getcwd(), "env": env, "umask": _umask(), "ignored": ignored, "nice": _nice()}


def _hand_over(sock, request, verbose):
    """Send ``request`` with stdin, stdout, stderr (through a pipe whose noise the launcher
    filters, unless ``verbose``) and the launcher-watch pipe; ``(client, watch_write,
    err_read)``, or ``None`` when the server did not take it."""
    watch_read, watch_write = os.pipe()  # closes when this process ends: the run ends too
    err_read = err_write = None
    if not verbose:
        err_read, err_write = os.pipe()
    client = _send_request(sock, request, [0, 1, err_write if err_write is not None else 2, watch_read])
    os.close(watch_read)
    if err_write is not None:
        os.close(err_write)
    if client is None:
        os.close(watch_write)
        if err_read is not None:
            os.close(err_read)
        return None
    try:
        os.utime(sock, None)  # used now: the last to be retired
    except OSError:
        pass
    return client, watch_write, err_read


def _status_of(reply, timeout):
    """A run's exit status as a cold start gives it (a signal: ``128+N`` under ``--timeout``, else ``-N``)."""
    if reply is None:
        return None
    if "signal" in reply:
        return 128 + reply["signal"] if timeout is not None else -reply["signal"]
    return reply.get("exit")


def _stop(run, replies, first_signal, say):
    """``first_signal`` to the run's group, SIGKILL after the grace time; its reply."""
    if run.pid is None:
        # asked before the server said the run's pid (a short --timeout on a busy machine): the
        # run may be forking now and would outlive the launcher for a moment, so wait for its
        # pid and stop it as any run; one never started ends at once, its launcher pipe closed
        try:
            started = replies.next(time.monotonic() + GRACE_SECONDS)
        except socket.timeout:
            started = None
        if not started or "pid" not in started:
            return None
        run.pid = int(started["pid"])
    pid = run.pid
    _kill_group(pid, first_signal)
    try:
        return replies.next(time.monotonic() + GRACE_SECONDS)
    except socket.timeout:
        say("host 0 did not stop within {:.0f}s; killed".format(GRACE_SECONDS))  # as pod's supervision says
        _kill_group(pid, signal.SIGKILL)
    try:
        return replies.next(time.monotonic() + 30.0)
    except socket.timeout:
        return None


def _run_on(sock, request, timeout, verbose, label, run):
    """One run (:func:`_request`'s ``request``) on the server at ``sock``; ``None`` when the server
    did not start it."""
    from migrate_tpu.runtime.process import pod  # the launcher's side only

    handed = _hand_over(sock, request, verbose)
    if handed is None:
        return None
    client, watch_write, err_read = handed
    relay = None
    if err_read is not None:
        relay = pod.relay_without_noise(os.fdopen(err_read, "rb", buffering=0), sys.stderr)
    replies = _Replies(client)

    def say(text):
        sys.stderr.write("{}: {}\n".format(label, text))
        sys.stderr.flush()

    done = False
    try:
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            started = replies.next(deadline)  # the run's pid, once the server forked it
            if not started or "pid" not in started:  # the server went away first: start cold
                done = True
                return None
            run.pid = int(started["pid"])
            reply = replies.next(deadline)
        except socket.timeout:
            say("still running after the {:g}s timeout; stopping it".format(timeout))
            _stop(run, replies, signal.SIGTERM, say)
            done = True
            return EXIT_TIMEOUT
        done = True
        return _status_of(reply, timeout)
    except KeyboardInterrupt:
        if timeout is not None:
            say("interrupted; stopping it")
        # a cold run shares the terminal's Ctrl-C; a warm one is in a group of its own
        _stop(run, replies, signal.SIGINT if timeout is None else signal.SIGTERM, say)
        done = True
        return EXIT_INTERRUPTED
    finally:
        if not done and run.pid is not None:  # anything else that ends the wait: nothing survives
            _kill_group(run.pid, signal.SIGKILL)
        client.close()
        os.close(watch_write)
        if relay is not None:
            relay.join(5.0)  # to the end of the run's stderr
