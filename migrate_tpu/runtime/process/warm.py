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

The client side (:func:`launch`, here) runs in the launcher's Python and imports no TensorFlow;
the server side (:mod:`migrate_tpu.runtime.process.warm_server`) runs in the TensorFlow interpreter.  Python 3.7 syntax.
"""

import array
import hashlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict

#: ``MIGRATE_TPU_WARM=0`` (or ``off``, ``false``, ``no``) makes every run a cold start.
WARM_VARIABLE = "MIGRATE_TPU_WARM"

#: A pool folder that an owner (the test session) shares with the processes it starts.
POOL_VARIABLE = "MIGRATE_TPU_WARM_POOL"

#: Servers kept in one pool; starting one more retires the one used least recently.
MAX_SERVERS = 4

#: ``MIGRATE_TPU_WARM_SERVERS=N`` keeps N instead (a pool shared by many kinds of runs, as the
#: test session's is: each interpreter and environment has its server, 0.3-0.6 GB each).
SERVERS_VARIABLE = "MIGRATE_TPU_WARM_SERVERS"

#: How long a server may take to import TensorFlow before the run starts cold.
READY_SECONDS = 300.0

#: How long a stopped run may take to exit after SIGINT or SIGTERM before it is killed
#: (``pod.GRACE_SECONDS``).
GRACE_SECONDS = 3.0

EXIT_TIMEOUT = 124
EXIT_INTERRUPTED = 130

#: Variables a run may set to another value than the server was started with: nothing reads
#: them before the fork (the runtime reads its own after it; ``tempfile``'s folder is looked up
#: again in the run; ``MPLBACKEND`` is read when matplotlib is imported, which no server does).
PER_RUN_PREFIXES = ("MIGRATE_TPU_",)
PER_RUN_NAMES = frozenset(["TMPDIR", "TEMP", "TMP", "MPLBACKEND", "PYTEST_CURRENT_TEST", "PWD", "OLDPWD",
                           "_", "SHLVL", "COLUMNS", "LINES"])

#: Signals whose disposition a cold start inherits when the launcher ignores them (an
#: ignored signal stays ignored across ``exec``): ``nohup`` (SIGHUP), a background job (SIGINT).
_INHERITED_IGNORES = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGTSTP",
                      "SIGTTIN", "SIGTTOU", "SIGCHLD", "SIGWINCH")

_SERVER_MODULE = "migrate_tpu.runtime.process.warm_server"
_HEADER = struct.Struct("!I")


def per_run(name):
    """Whether the variable ``name`` may differ between two runs of one server."""
    return name in PER_RUN_NAMES or name.startswith(PER_RUN_PREFIXES)


#: Whether runs are warm when ``MIGRATE_TPU_WARM`` says nothing.
DEFAULT = True


def max_servers(environ=None):
    """How many servers a pool keeps (:data:`MAX_SERVERS`, or ``MIGRATE_TPU_WARM_SERVERS``)."""
    try:
        return max(1, int((os.environ if environ is None else environ).get(SERVERS_VARIABLE, MAX_SERVERS)))
    except ValueError:
        return MAX_SERVERS


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
# The launcher's side: pools, servers, runs
# --------------------------------------------------------------------------


def _alive(pid):
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/{}/stat".format(pid)) as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


#: The longest folder pools are made in: a socket's path (108 bytes on Linux) holds the pool's
#: folder (26), the server's key (21), ``.sock`` and, while the server binds it, ``.PID.tmp``.
_LONGEST_BASE = 40


def _base_folder():
    """Where pools are made: the temporary folder as the process started (``verify`` points
    ``TMPDIR`` at each run's own folder meanwhile), short enough for a socket's path."""
    base = tempfile.gettempdir()
    return base if len(base) <= _LONGEST_BASE else "/tmp"


_BASE = _base_folder()


class Pool(object):
    """A folder of warm servers and the lifeline that ends them.

    ``owner`` pools (:meth:`create`) hold the lifeline and remove everything on :meth:`close`;
    a pool found through ``MIGRATE_TPU_WARM_POOL`` (:meth:`join`) only uses it."""

    def __init__(self, folder, owner):
        self.folder = folder
        self.owner = owner
        self.lifeline_fd = None
        self.started = {}  # key -> Popen, servers this process started
        self.failed = {}  # key -> why its server could not start (runs start cold)
        self.lock = threading.Lock()
        self.root = None  # the package's own folder for servers (installed packages)

    @classmethod
    def create(cls, base=None):
        folder = tempfile.mkdtemp(prefix="migrate-tpu-warm-", dir=base or _BASE)
        os.chmod(folder, 0o700)
        lifeline = os.path.join(folder, "lifeline")
        os.mkfifo(lifeline, 0o600)
        pool = cls(folder, owner=True)
        # O_RDWR: opening a FIFO for writing alone would wait for a reader
        pool.lifeline_fd = os.open(lifeline, os.O_RDWR | os.O_CLOEXEC)
        with open(os.path.join(folder, "owner"), "w") as handle:
            handle.write(str(os.getpid()))
        return pool

    @classmethod
    def join(cls, folder):
        """The shared pool in ``folder``, or ``None`` when it is not one (or its owner is gone)."""
        try:
            with open(os.path.join(folder, "owner")) as handle:
                owner = int(handle.read())
        except (OSError, ValueError):
            return None
        if not _alive(owner) or not os.path.exists(os.path.join(folder, "lifeline")):
            return None
        return cls(folder, owner=False)

    def export(self, environ=None):
        """Hand this pool to the processes started with ``environ`` (default: ``os.environ``)."""
        (os.environ if environ is None else environ)[POOL_VARIABLE] = self.folder

    def isolated_root(self, make):
        """The folder holding only ``migrate_tpu`` that this pool's servers load the runtime
        from (an installed package's site-packages would shadow the interpreter's own packages):
        ``make()`` once, removed with the pool."""
        target = os.path.join(self.folder, "root")
        with self.lock:
            if self.root is None and not os.path.isdir(os.path.join(target, "migrate_tpu")):
                made = make()
                try:
                    os.rename(made, target)
                except OSError:  # another process of a shared pool made it first
                    import shutil
                    shutil.rmtree(made, ignore_errors=True)
            self.root = target
            return self.root

    def owner_pid(self):
        with open(os.path.join(self.folder, "owner")) as handle:
            return int(handle.read())

    # -- servers

    def path(self, key, suffix):
        return os.path.join(self.folder, key + suffix)

    @staticmethod
    def key(python, env, verbose):
        """The server's name: the interpreter, ``--verbose`` and the environment less
        :func:`per_run`'s variables; and that environment."""
        server_env = dict((k, v) for k, v in env.items() if not per_run(k))
        key = hashlib.sha256(json.dumps([python, bool(verbose), sorted(server_env.items())]).encode(
            "utf-8", "surrogateescape")).hexdigest()[:20]
        return key, server_env

    def why_not(self, python, env, verbose):
        """Why this interpreter and environment have no server, or ``None``."""
        return self.failed.get(self.key(python, env, verbose)[0])

    def server(self, python, env, verbose):
        """The socket path of a ready server for this interpreter and environment (started
        now if needed), or ``None`` (then the run starts cold; :meth:`why_not` says why)."""
        key, server_env = self.key(python, env, verbose)
        if key in self.failed:
            return None
        sock = self.path(key, ".sock")
        if os.path.exists(sock):
            return sock
        with self.lock:
            import fcntl
            with open(self.path(key, ".lock"), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # one starter per key, whichever process it is in
                if os.path.exists(sock):
                    return sock
                self._make_room()
                why = self._start(key, python, server_env, verbose)
        if why is not None:
            self.failed[key] = why
            return None
        return sock

    def forget(self, sock):
        """A server that does not answer: its socket goes, the next run starts another."""
        try:
            os.unlink(sock)
        except OSError:
            pass

    def _start(self, key, python, server_env, verbose):
        ready_read, ready_write = os.pipe()
        argv = [python, "-m", _SERVER_MODULE, "--socket", self.path(key, ".sock"),
                "--lifeline", os.path.join(self.folder, "lifeline"), "--owner", str(self.owner_pid()),
                "--ready-fd", str(ready_write)]
        if verbose:
            argv.append("--verbose")
        try:
            with open(self.path(key, ".out"), "wb") as out, open(self.path(key, ".err"), "wb") as err:
                process = subprocess.Popen(argv, env=server_env, cwd=self.folder, stdin=subprocess.DEVNULL,
                                           stdout=out, stderr=err, pass_fds=(ready_write,), start_new_session=True)
        except OSError as error:
            os.close(ready_read)
            return "cannot start {}: {}".format(python, error)
        finally:
            os.close(ready_write)
        self.started[key] = process
        deadline = time.time() + READY_SECONDS
        answer = b""
        try:
            while time.time() < deadline:
                readable, _, _ = select.select([ready_read], [], [], 1.0)
                if readable:
                    chunk = os.read(ready_read, 64)
                    if not chunk:
                        break
                    answer += chunk
                    if answer.endswith(b"\n"):
                        break
                elif process.poll() is not None:
                    break
        finally:
            os.close(ready_read)
        if answer.strip() == b"ready":
            return None
        _stop_process(process)
        try:
            with open(self.path(key, ".err"), "rb") as handle:
                tail = handle.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            tail = ""
        return "the warm server did not start (exit {}): {}".format(process.poll(), tail.strip())

    def _make_room(self):
        sockets = [os.path.join(self.folder, name) for name in os.listdir(self.folder) if name.endswith(".sock")]
        sockets.sort(key=lambda p: os.stat(p).st_mtime if os.path.exists(p) else 0)
        while len(sockets) >= max_servers():
            oldest = sockets.pop(0)
            asked = _send_request(oldest, {"retire": True})  # it leaves once its runs are done
            if asked is not None:
                asked.close()
            self.forget(oldest)

    def close(self):
        """End every server of this pool (an owner's pool: and remove its folder)."""
        if self.owner and self.lifeline_fd is not None:
            pids = []  # read first: a server removes its files as it leaves
            for name in os.listdir(self.folder):
                if name.endswith(".pid"):
                    try:
                        with open(os.path.join(self.folder, name)) as handle:
                            pids.append(int(handle.read()))
                    except (OSError, ValueError):
                        pass
            with open(os.path.join(self.folder, "closing"), "w"):
                pass  # the servers need not wait to see this process gone: it removes the folder
            os.close(self.lifeline_fd)  # every server sees the end of its lifeline
            self.lifeline_fd = None
            deadline = time.time() + 10.0
            for process in self.started.values():
                try:
                    process.wait(max(0.1, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    pass
            while time.time() < deadline and any(_alive(pid) for pid in pids):
                time.sleep(0.05)
            for pid in pids:
                if _alive(pid):  # one that did not leave in 10 s
                    _kill_group(pid, signal.SIGKILL)
        for process in self.started.values():
            if process.poll() is None and self.owner:
                _stop_process(process)
        if self.owner:
            import shutil
            shutil.rmtree(self.folder, ignore_errors=True)


def _stop_process(process):
    if process.poll() is None:  # not reaped: its number is still its own
        _kill_group(process.pid, signal.SIGKILL)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        pass


def _kill_group(pid, signum):
    """``signum`` to the process group ``pid`` leads (servers and runs each lead one).  Never
    to the pid alone: once the process is reaped, its number may be another process'."""
    try:
        os.killpg(pid, signum)
    except OSError:
        pass


_POOL: Dict[str, Any] = {}  # "pool": this process' pool, once asked for
_POOL_LOCK = threading.Lock()


def pool():
    """This process' pool: the shared one ``MIGRATE_TPU_WARM_POOL`` names, else one of its own
    (closed when the process exits, whatever ends it: its servers watch the lifeline)."""
    with _POOL_LOCK:
        found = _POOL.get("pool")
        if found is not None and found.owner and found.owner_pid() != os.getpid():
            found = None  # a fork of its owner: the pool is not this process'
        if found is None:
            shared = os.environ.get(POOL_VARIABLE)
            found = Pool.join(shared) if shared else None
            if found is None:
                found = Pool.create()
                import atexit
                atexit.register(_close_own, found)
            _POOL["pool"] = found
        return found


def _close_own(found):
    if found.owner and found.owner_pid() == os.getpid():
        found.close()


def _send_request(sock_path, request, fds=()):
    """A connected socket to the server at ``sock_path`` that has been sent ``request`` (with
    ``fds``), or ``None`` when nothing answers there."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(sock_path)
        data = json.dumps(request).encode("utf-8", "surrogateescape")
        message = _HEADER.pack(len(data)) + data
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", list(fds)))] if fds else []
        sent = client.sendmsg([message], ancillary)
        if sent < len(message):
            client.sendall(message[sent:])
    except OSError:
        client.close()
        return None
    return client


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
        status = _run_on(sock, argv, env, timeout, verbose, label, run)
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


def _run_on(sock, argv, env, timeout, verbose, label, run):  # noqa: PLR0913
    """One run on the server at ``sock``; ``None`` when the server did not start it."""
    from migrate_tpu.runtime.process import pod  # the launcher's side only

    handed = _hand_over(sock, _request(argv, env), verbose)
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
