"""The pool of warm servers (:mod:`migrate_tpu.runtime.process.warm` tells the whole story): its
folder and lifeline, the key of each server, starting one and retiring the least used, this
process' own pool, and how a request reaches a server (the framing the server reads back).

Apart from :mod:`~migrate_tpu.runtime.process.warm`, which runs one run on a server, because both
sides stand on it: the launcher's run asks the pool for its server, and the server
(:mod:`~migrate_tpu.runtime.process.warm_server`) reads the same framing and stops processes the
same way.  Standard library only; runs in the launcher's Python and, for those few names, in the
TensorFlow interpreter.  Python 3.7 syntax.
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
import tempfile
import threading
import time
from typing import Any, Dict

#: A pool folder that an owner (the test session) shares with the processes it starts.
POOL_VARIABLE = "MIGRATE_TPU_WARM_POOL"

#: Servers kept in one pool; starting one more retires the one used least recently.
MAX_SERVERS = 4

#: ``MIGRATE_TPU_WARM_SERVERS=N`` keeps N instead (a pool shared by many kinds of runs, as the
#: test session's is: each interpreter and environment has its server, 0.3-0.6 GB each).
SERVERS_VARIABLE = "MIGRATE_TPU_WARM_SERVERS"

#: How long a server may take to import TensorFlow before the run starts cold.
READY_SECONDS = 300.0

#: Variables a run may set to another value than the server was started with: nothing reads
#: them before the fork (the runtime reads its own after it; ``tempfile``'s folder is looked up
#: again in the run; ``MPLBACKEND`` is read when matplotlib is imported, which no server does).
PER_RUN_PREFIXES = ("MIGRATE_TPU_",)
PER_RUN_NAMES = frozenset(["TMPDIR", "TEMP", "TMP", "MPLBACKEND", "PYTEST_CURRENT_TEST", "PWD", "OLDPWD",
                           "_", "SHLVL", "COLUMNS", "LINES"])

_SERVER_MODULE = "migrate_tpu.runtime.process.warm_server"
_HEADER = struct.Struct("!I")


def per_run(name):
    """Whether the variable ``name`` may differ between two runs of one server."""
    return name in PER_RUN_NAMES or name.startswith(PER_RUN_PREFIXES)


def max_servers(environ=None):
    """How many servers a pool keeps (:data:`MAX_SERVERS`, or ``MIGRATE_TPU_WARM_SERVERS``)."""
    try:
        return max(1, int((os.environ if environ is None else environ).get(SERVERS_VARIABLE, MAX_SERVERS)))
    except ValueError:
        return MAX_SERVERS


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
