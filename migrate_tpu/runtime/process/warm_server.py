"""The server side of warm interpreters (:mod:`migrate_tpu.runtime.process.warm` has the whole story and
the client side, :mod:`migrate_tpu.runtime.process.warm_pool` the pool):
``python -m migrate_tpu.runtime.process.warm_server`` imports TensorFlow and the runtime, initialises
nothing, listens on its socket in the owner's pool, and forks a supervisor and a run for each
request; it dies with its owner (the lifeline).  Runs in the TensorFlow interpreter.  Python 3.7 syntax.
"""

import array
import io
import json
import os
import select
import signal
import socket
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List

from migrate_tpu.runtime import RUNTIME_FOLDER
from migrate_tpu.runtime.process.warm import _INHERITED_IGNORES
from migrate_tpu.runtime.process.warm_pool import _HEADER, _SERVER_MODULE, _alive, _kill_group


def _prctl_death_signal(signum):
    """``PR_SET_PDEATHSIG``: ``signum`` to this process when its parent exits (Linux)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        return libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError, ImportError):
        return False


def _take_nice(nice):
    """The launcher's nice value, as a cold child inherits it (raised only: lowering it needs a
    privilege the launcher's own process did not use)."""
    try:
        if nice > os.getpriority(os.PRIO_PROCESS, 0):
            os.setpriority(os.PRIO_PROCESS, 0, nice)
    except (AttributeError, OSError):
        pass


def _receive(conn):
    """The request and its file descriptors from ``conn``."""
    fds = array.array("i")
    data, ancdata, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(16 * fds.itemsize))
    received: List[int] = []
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
    _import_while_the_owner_lives(owner, lifeline, options.verbose)
    sys.stdout.flush()
    sys.stderr.flush()
    server.replay = (_read_file_of(1), _read_file_of(2))  # what importing printed: each run prints it again
    _listen(server, options, lifeline)
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


def _import_while_the_owner_lives(owner, lifeline, verbose):
    """:func:`_import_for_runs`, this process ending at once if its owner goes meanwhile (the
    lifeline's end, or the owner's pid gone): an import takes seconds."""
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
        _import_for_runs(verbose)
    finally:
        stop_watching.set()
        watcher.join()


def _listen(server, options, lifeline):
    """Listen on the pool's socket for this server's key, its pid beside it, and tell the owner
    it is ready."""
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
    from migrate_tpu.runtime.process import runner
    runner.prepare_environment(True, verbose)
    import tensorflow as tf
    from migrate_tpu.runtime.surfaces import emulation, legacy  # noqa: F401
    from migrate_tpu.runtime.record import recorder, seeding  # noqa: F401
    emulation.import_compat_packages()
    if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
        # tf-keras, which every run on TF >= 2.16 imports (the surfaces look at tf.keras)
        getattr(tf, "keras", None)
    runner.settle_what_is_loaded()


def _supervise(server, conn):
    """In a supervisor: start the run's process, report its pid and exit status, and end."""
    request, fds = _take_request(server, conn)
    child: Dict[str, Any] = {"pid": None}

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
    _report_the_end(conn, pid, child)


def _take_request(server, conn):
    """In a supervisor: the request and its descriptors, once it dies with its server and holds
    none of the server's descriptors; a request to retire, or none read, ends the supervisor here."""
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
    return request, fds


def _report_the_end(conn, pid, child):
    """In a supervisor: wait for the run's process ``pid``, end what it left of its group, send its
    exit status, and end."""
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
    _take_signals(request)
    conn.close()
    watch_fd = _take_streams(fds)
    os.umask(int(request.get("umask", 0o022)))
    _take_nice(int(request.get("nice", 0)))
    os.chdir(request["cwd"])
    from migrate_tpu.runtime.process import pod
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
    main_file = os.path.join(RUNTIME_FOLDER, "__main__.py")
    sys.argv = [main_file] + argv[3:]
    if hasattr(sys, "orig_argv"):
        sys.orig_argv = list(argv)
    return argv[3:]


def _take_signals(request):
    """In the run's process: each signal's handler as a cold start has it, ignored where the
    launcher ignores it."""
    ignored = set(request.get("ignored", ()))
    for name in _INHERITED_IGNORES + ("SIGPIPE", "SIGXFSZ"):
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        handler: Any
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


def _take_streams(fds):
    """In the run's process: the launcher's stdin, stdout and stderr as 0, 1 and 2, and its
    launcher-watch pipe, inheritable as a cold start has it; that pipe's descriptor."""
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
    return watch_fd


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
        raw: Any = buffer if unbuffered else buffer.raw  # type: ignore[attr-defined]
        try:
            raw.name = "<{}>".format(name)
        except (AttributeError, TypeError):
            pass
        line_buffering = not unbuffered and (raw.isatty() or (fd == 2 and sys.version_info >= (3, 9)))
        stream: Any = io.TextIOWrapper(buffer, encoding=old.encoding, errors=old.errors, newline="\n",
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
    """``python -m migrate_tpu.runtime.process.warm_server``: a server; in each run's process, the runner."""
    options = _server_options(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGUSR1, lambda signum, frame: RETIRING.__setitem__(0, True))
    runner_argv = serve(options)
    if runner_argv is None:
        # the server's end, its files removed (its output files too): no user code ran in this
        # process, so nothing of the interpreter's teardown is anyone's (with TensorFlow imported
        # it takes 0.6-0.8 s, which the owner waits for at the end of every verify and run)
        os._exit(0)
    from migrate_tpu.runtime.process import runner
    return runner.main(runner_argv)


if __name__ == "__main__":
    sys.exit(main())
