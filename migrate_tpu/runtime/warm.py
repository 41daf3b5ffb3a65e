"""Warm interpreters: each run a fresh process forked from one that has TensorFlow imported.

``import tensorflow`` takes seconds (6 s for TF 2.21 on a loaded 2-core machine); a run
after it, under a second.  ``migrate-tpu verify`` runs a program at least three times, the
tests hundreds of times.  A *warm server* is started once per interpreter (and per
environment that could change what importing does): it imports TensorFlow, the runtime
and the compat packages that every run imports, and initialises nothing (no devices, no
eager context, no thread of its own: checked on TF 2.1.0, 2.4.1 and 2.21.0, see
docs/runtime.md, "Warm starts").  Each run is then a fresh process forked from it, which
takes the run's argv, environment, current folder, umask and stdin/stdout/stderr, and runs
the runner's ``main`` as a cold ``python -m migrate_tpu.runtime`` would.

How the pieces talk (all on this machine, one user):

* the *owner* holds a *pool*: a private folder (0700) with a FIFO, the lifeline, which the
  owner keeps open for writing as long as it lives.  A server dies when the lifeline
  reaches end-of-file (the owner is gone, however it ended) or the owner's pid is gone;
  ``MIGRATE_TPU_WARM_POOL`` hands a pool to child processes (the test session's, so that
  every ``migrate-tpu verify`` the tests start finds the servers warm);
* a server listens on ``KEY.sock`` in the pool's folder, where ``KEY`` hashes the
  interpreter, ``--verbose`` and the environment less the variables a run may change
  without another server (:func:`per_run`); it appears only once the server is ready;
* a client connects and sends the run (argv, cwd, environment, umask, the signals its
  process ignores) with its stdin, stdout, stderr and launcher-watch pipe as file
  descriptors (``SCM_RIGHTS``).  The server forks a *supervisor* for the connection, which
  forks the run's process: the supervisor sends the run's pid, waits for it, kills what is
  left of its process group, and sends its exit status.  A supervisor dies with its server
  (``PR_SET_PDEATHSIG``) and then kills the run's group; the run ends itself when its
  launcher is gone (the launcher-watch pipe, as in a cold start).

The client side (:func:`launch`) runs in the launcher's Python and imports no TensorFlow; the
server side (:func:`serve`) runs in the TensorFlow interpreter.  Python 3.7 syntax.
"""

import array
import hashlib
import io
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

#: ``MIGRATE_TPU_WARM=0`` (or ``off``, ``false``, ``no``) makes every run a cold start.
WARM_VARIABLE = "MIGRATE_TPU_WARM"

#: A pool folder that an owner (the test session) shares with the processes it starts.
POOL_VARIABLE = "MIGRATE_TPU_WARM_POOL"

#: Servers kept in one pool; starting one more retires the one used least recently.
MAX_SERVERS = 4

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

_SERVER_MODULE = "migrate_tpu.runtime.warm"
_HEADER = struct.Struct("!I")


def per_run(name):
    """Whether the variable ``name`` may differ between two runs of one server."""
    return name in PER_RUN_NAMES or name.startswith(PER_RUN_PREFIXES)


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


def _base_folder():
    """Where pools are made: the temporary folder as the process started (``verify`` points
    ``TMPDIR`` at each run's own folder meanwhile), short enough for a socket's path."""
    base = tempfile.gettempdir()
    return base if len(base) < 60 else "/tmp"


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
        while len(sockets) >= MAX_SERVERS:
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


_POOL = {}  # "pool": this process' pool, once asked for
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


def close_pool():
    """End this process' own pool now (its servers too); the next run makes a new one."""
    with _POOL_LOCK:
        found = _POOL.pop("pool", None)
    if found is not None:
        _close_own(found)
        if not found.owner:
            for process in found.started.values():
                process.poll()


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


def _run_on(sock, argv, env, timeout, verbose, label, run):
    """One run on the server at ``sock``; ``None`` when the server did not start it."""
    from migrate_tpu.runtime import pod  # the launcher's side only

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    umask = _umask()
    ignored = []
    for name in _INHERITED_IGNORES:
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) is signal.SIG_IGN:
            ignored.append(int(signum))
    watch_read, watch_write = os.pipe()  # closes when this process ends: the run ends too
    err_read = err_write = None
    if not verbose:
        err_read, err_write = os.pipe()
    env = dict(env)
    env.pop(pod.WATCH_FD_VARIABLE, None)
    request = {"argv": list(argv), "cwd": os.getcwd(), "env": env, "umask": umask, "ignored": ignored}
    fds = [0, 1, err_write if err_write is not None else 2, watch_read]
    client = _send_request(sock, request, fds)
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
    relay = None
    if err_read is not None:
        relay = pod.relay_without_noise(os.fdopen(err_read, "rb", buffering=0), sys.stderr)
    replies = _Replies(client)

    def say(text):
        sys.stderr.write("{}: {}\n".format(label, text))
        sys.stderr.flush()

    def status_of(reply):
        if reply is None:
            return None
        if "signal" in reply:
            return 128 + reply["signal"] if timeout is not None else -reply["signal"]
        return reply.get("exit")

    def stop(first_signal):
        """``first_signal`` to the run's group, SIGKILL after the grace time; its reply."""
        pid = run.pid
        if pid is None:  # not started yet: closing the launcher pipe below ends it if it starts
            return None
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
            stop(signal.SIGTERM)
            done = True
            return EXIT_TIMEOUT
        done = True
        if reply is None:
            return None
        return status_of(reply)
    except KeyboardInterrupt:
        if timeout is not None:
            say("interrupted; stopping it")
        # a cold run shares the terminal's Ctrl-C; a warm one is in a group of its own
        stop(signal.SIGINT if timeout is None else signal.SIGTERM)
        done = True
        return EXIT_INTERRUPTED
    finally:
        if not done and run.pid is not None:  # anything else that ends the wait: nothing survives
            _kill_group(run.pid, signal.SIGKILL)
        client.close()
        os.close(watch_write)
        if relay is not None:
            relay.join(5.0)  # to the end of the run's stderr


# --------------------------------------------------------------------------
# The server's side (in the TensorFlow interpreter)
# --------------------------------------------------------------------------


def _prctl_death_signal(signum):
    """``PR_SET_PDEATHSIG``: ``signum`` to this process when its parent exits (Linux)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        return libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError, ImportError):
        return False


def _receive(conn):
    """The request and its file descriptors from ``conn``."""
    fds = array.array("i")
    data, ancdata, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(16 * fds.itemsize))
    received = []
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            chunk = array.array("i")
            chunk.frombytes(payload[:len(payload) - (len(payload) % chunk.itemsize)])
            received.extend(chunk)
    while len(data) < _HEADER.size:
        chunk = conn.recv(_HEADER.size - len(data))
        if not chunk:
            raise ValueError("short request")
        data += chunk
    (size,) = _HEADER.unpack(data[:_HEADER.size])
    body = data[_HEADER.size:]
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ValueError("short request")
        body += chunk
    return json.loads(body.decode("utf-8", "surrogateescape")), received


def _reply(conn, message):
    try:
        conn.sendall(json.dumps(message).encode("utf-8") + b"\n")
    except OSError:  # the launcher is gone: the run ends through its watch pipe
        pass


class _Server(object):
    def __init__(self, options):
        self.options = options
        self.listener = None
        self.lifeline = None
        self.supervisors = set()
        self.retiring = False
        self.replay = (b"", b"")
        self.cwd = os.getcwd()
        self.pid = os.getpid()
        self.path0 = sys.path[0] if sys.path else None
        self.own_fds = []
        self.owner_gone = False

    def closing_fds(self):
        return [fd for fd in self.own_fds if fd is not None]


def serve(options):
    """Import, then fork a supervisor per request; returns the argv of the runner's ``main``
    in a run's process, and ``None`` in the server when it is done (its files removed)."""
    server = _Server(options)
    try:
        return _serve(server, options)
    finally:
        if os.getpid() == server.pid:
            _clean_up(server, options)


def _serve(server, options):
    owner = options.owner
    lifeline = os.open(options.lifeline, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    server.lifeline = lifeline
    stop_watching = threading.Event()

    def watch_during_import():
        while not stop_watching.is_set():
            readable, _, _ = select.select([lifeline], [], [], 0.2)
            if (readable and not _read_or_eof(lifeline)) or not _alive(owner):
                os._exit(0)

    watcher = threading.Thread(target=watch_during_import, name="migrate-tpu-warm-import")
    watcher.daemon = True
    watcher.start()
    try:
        _import_for_runs(options.verbose)
    finally:
        stop_watching.set()
        watcher.join()
    sys.stdout.flush()
    sys.stderr.flush()
    server.replay = (_read_file_of(1), _read_file_of(2))  # what importing printed: each run prints it again
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    temporary = "{}.{}.tmp".format(options.socket, os.getpid())
    listener.bind(temporary)
    listener.listen(64)
    os.rename(temporary, options.socket)  # connectable from now on
    server.listener = listener
    server.own_fds = [listener.fileno(), lifeline, options.ready_fd]
    with open(options.socket[:-len(".sock")] + ".pid", "w") as handle:
        handle.write(str(os.getpid()))
    os.write(options.ready_fd, b"ready\n")
    os.close(options.ready_fd)
    server.own_fds.remove(options.ready_fd)
    while True:
        _reap(server)
        if RETIRING[0] and server.listener is not None:
            server.listener.close()  # the retiring client removed the socket's name
            server.listener = None
        if server.listener is None and not server.supervisors:
            return None
        if not _alive(owner):
            return None
        watched = [lifeline] + ([server.listener] if server.listener is not None else [])
        readable, _, _ = select.select(watched, [], [], 0.5)
        if lifeline in readable and not _read_or_eof(lifeline):
            server.owner_gone = True
            return None
        if server.listener is not None and server.listener in readable:
            try:
                conn, _ = server.listener.accept()
            except OSError:
                continue
            pid = os.fork()
            if pid == 0:
                return _supervise(server, conn)  # returns in the run's process only
            conn.close()
            server.supervisors.add(pid)


def _clean_up(server, options):
    """The server's end: its supervisors told (they end their runs), its files removed, and
    the pool's folder once its owner is gone and nothing else is left in it."""
    for pid in server.supervisors:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    stem = options.socket[:-len(".sock")]
    folder = os.path.dirname(options.socket)
    closing = os.path.exists(os.path.join(folder, "closing"))  # the owner closes the pool itself
    deadline = time.time() + 2.0  # an owner killed closes its lifeline an instant before it is gone
    while server.owner_gone and not closing and _alive(options.owner) and time.time() < deadline:
        time.sleep(0.05)
    owner_dead = not closing and not _alive(options.owner)  # then nobody else removes the folder
    names = [".pid", ".out", ".err", ".lock"] + ([".sock"] if server.owner_gone or owner_dead else [])
    for suffix in names:
        try:
            os.unlink(stem + suffix)
        except OSError:
            pass
    if owner_dead:
        try:
            if not any(n.endswith(".sock") for n in os.listdir(folder)):  # the last server
                import shutil
                shutil.rmtree(os.path.join(folder, "root"), ignore_errors=True)
                for name in ("lifeline", "owner"):
                    os.unlink(os.path.join(folder, name))
            os.rmdir(folder)
        except OSError:
            pass


def _read_or_eof(fd):
    """Drain ``fd``; False at end of file."""
    try:
        return bool(os.read(fd, 4096))
    except BlockingIOError:
        return True
    except OSError:
        return False


def _read_file_of(fd):
    """What the regular file open on ``fd`` holds (the server's import output)."""
    try:
        if not os.path.isfile("/proc/self/fd/{}".format(fd)):
            return b""
        with open("/proc/self/fd/{}".format(fd), "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def _reap(server):
    for pid in list(server.supervisors):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            server.supervisors.discard(pid)


def _import_for_runs(verbose):
    """What every run imports, nothing initialised (see the module's docstring)."""
    from migrate_tpu.runtime import runner
    runner.prepare_environment(True, verbose)
    import tensorflow as tf
    from migrate_tpu.runtime import emulation, legacy, recorder, seeding  # noqa: F401
    emulation.import_compat_packages()
    if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
        # tf-keras, which every run on TF >= 2.16 imports (the surfaces look at tf.keras)
        getattr(tf, "keras", None)


def _supervise(server, conn):
    """In a supervisor: start the run's process, report its pid and exit status, and end."""
    try:
        server_pid = os.getppid()
        _prctl_death_signal(signal.SIGTERM)
        if os.getppid() != server_pid:
            os._exit(1)
        for fd in server.closing_fds():
            try:
                os.close(fd)
            except OSError:
                pass
        request, fds = _receive(conn)
        if request.get("retire"):
            os.kill(server_pid, signal.SIGUSR1)
            os._exit(0)
    except Exception:
        os._exit(1)
    child = {"pid": None}

    def end(signum, frame):  # the server is gone: so is the run
        if child["pid"]:
            _kill_group(child["pid"], signal.SIGKILL)
        os._exit(1)

    signal.signal(signal.SIGTERM, end)
    pid = os.fork()
    if pid == 0:
        try:
            return _become_run(server, conn, request, fds)
        except BaseException:
            import traceback
            try:
                os.write(2, traceback.format_exc().encode("utf-8", "replace"))
            finally:
                os._exit(1)
    child["pid"] = pid
    try:
        os.setpgid(pid, pid)  # as the run does itself: a group of its own before anyone signals it
    except OSError:
        pass
    for fd in fds:
        os.close(fd)
    _reply(conn, {"pid": pid})
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            status = 0
            break
    child["pid"] = None
    _kill_group(pid, signal.SIGKILL)  # what the run started ends with it
    if os.WIFSIGNALED(status):
        _reply(conn, {"signal": os.WTERMSIG(status)})
    else:
        _reply(conn, {"exit": os.WEXITSTATUS(status)})
    os._exit(0)


def _become_run(server, conn, request, fds):
    """In the run's process: take the run's descriptors, folder, environment and argv; the
    runner's argv."""
    os.setpgid(0, 0)
    ignored = set(request.get("ignored", ()))
    for name in _INHERITED_IGNORES + ("SIGPIPE", "SIGXFSZ"):
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        if int(signum) in ignored or name in ("SIGPIPE", "SIGXFSZ"):  # as Python starts
            handler = signal.SIG_IGN
        elif name == "SIGINT":
            handler = signal.default_int_handler
        else:
            handler = signal.SIG_DFL
        signal.signal(signum, handler)
    try:
        signal.set_wakeup_fd(-1)
    except (ValueError, OSError):
        pass
    conn.close()
    stdin, stdout, stderr, watch = fds
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os.dup2(stdin, 0)
    os.dup2(stdout, 1)
    os.dup2(stderr, 2)
    watch_fd = os.dup(watch)
    os.set_inheritable(watch_fd, True)  # as Popen's pass_fds leaves it
    for fd in set(fds):
        if fd > 2 and fd != watch_fd:
            os.close(fd)
    os.umask(int(request.get("umask", 0o022)))
    os.chdir(request["cwd"])
    from migrate_tpu.runtime import pod
    env = dict(request["env"])
    env[pod.WATCH_FD_VARIABLE] = str(watch_fd)
    os.environ.clear()
    os.environ.update(env)  # putenv: TensorFlow's C++ reads the run's variables too
    out, err = server.replay
    _write_all(1, out)
    _write_all(2, err)
    _fresh_stdio()
    _fresh_state()
    argv = list(request["argv"])
    if server.path0 is not None and sys.path and sys.path[0] == server.path0 and server.path0 == server.cwd:
        sys.path[0] = os.getcwd()  # `python -m` puts the current folder first
    main_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__main__.py")
    sys.argv = [main_file] + argv[3:]
    if hasattr(sys, "orig_argv"):
        sys.orig_argv = list(argv)
    return argv[3:]


def _write_all(fd, data):
    while data:
        try:
            written = os.write(fd, data)
        except OSError:
            return
        data = data[written:]


def _fresh_stdio():
    """``sys.stdin``/``stdout``/``stderr`` made for the run's descriptors as the interpreter
    makes them at start (a terminal's stdout is line-buffered, a pipe's is not), and the
    logging handlers that importing made pointed at them."""
    replaced = {}
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        old = getattr(sys, name, None)
        if old is None:
            continue
        writing = fd != 0
        unbuffered = writing and bool(getattr(old, "write_through", False))
        buffer = io.open(fd, "wb" if writing else "rb", 0 if unbuffered else -1, closefd=False)
        raw = buffer if unbuffered else buffer.raw
        try:
            raw.name = "<{}>".format(name)
        except (AttributeError, TypeError):
            pass
        line_buffering = not unbuffered and (raw.isatty() or (fd == 2 and sys.version_info >= (3, 9)))
        stream = io.TextIOWrapper(buffer, encoding=old.encoding, errors=old.errors, newline="\n",
                                  line_buffering=line_buffering, write_through=unbuffered)
        try:
            stream.mode = "w" if writing else "r"
        except AttributeError:
            pass
        replaced[id(old)] = stream
        if getattr(sys, "__{}__".format(name), None) is old:
            setattr(sys, "__{}__".format(name), stream)
        setattr(sys, name, stream)
    import logging
    for ref in list(getattr(logging, "_handlerList", [])):
        handler = ref() if callable(ref) else ref
        stream = getattr(handler, "stream", None)
        if stream is not None and id(stream) in replaced:
            handler.stream = replaced[id(stream)]
    import faulthandler
    if faulthandler.is_enabled():
        faulthandler.enable(sys.stderr, all_threads=True)


def _fresh_state():
    """What a new process has that a fork shares with its server: numpy's global random state
    (Python's ``random`` reseeds itself after a fork), ``tempfile``'s folder (``TMPDIR`` of the
    run)."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        try:
            numpy.random.seed()
        except Exception:
            pass
    tempfile.tempdir = None


def _server_options(argv):
    import argparse
    parser = argparse.ArgumentParser(prog="python -m " + _SERVER_MODULE)
    parser.add_argument("--socket", required=True)
    parser.add_argument("--lifeline", required=True)
    parser.add_argument("--owner", type=int, required=True)
    parser.add_argument("--ready-fd", type=int, required=True)
    parser.add_argument("--verbose", action="store_true")
    return parser.parse_args(argv)


#: Set in a server asked to retire (SIGUSR1 from a supervisor): it takes no new runs.
RETIRING = [False]


def main(argv=None):
    """``python -m migrate_tpu.runtime.warm``: a server; in each run's process, the runner."""
    options = _server_options(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGUSR1, lambda signum, frame: RETIRING.__setitem__(0, True))
    runner_argv = serve(options)
    if runner_argv is None:
        return 0
    from migrate_tpu.runtime import runner
    return runner.main(runner_argv)


if __name__ == "__main__":
    sys.exit(main())
