"""Start and supervise the worker processes of a multi-client ``migrate-tpu run`` (standard
library only).

A TPU program runs once even on an emulated pod (the pod's one client, in one process;
see :mod:`migrate_tpu.runtime.surfaces.emulation`).  A script that builds
``MultiWorkerMirroredStrategy`` itself is multi-client in TensorFlow: ``--hosts H`` runs
it as H worker processes of the runner on this machine.  They find each other through
``TF_CONFIG``: one ``worker`` task each, at ``localhost:PORT`` on ports that were free
when the cluster started, and worker K is task K.

Supervision keeps the promise that no process outlives ``run``:

* each worker runs in its own session (process group), so ending a worker ends
  whatever it started;
* each worker watches a pipe from the launcher and ends its own process group
  when the pipe closes, which also happens when the launcher is killed with
  SIGKILL (see :func:`watch_launcher`);
* the first worker to fail, a ``timeout`` or Ctrl-C stops every other worker:
  SIGTERM to its group, then SIGKILL after :data:`GRACE_SECONDS`.

Workers end together.  A worker whose script is done crosses a finish line held by
the launcher (:class:`FinishLine`): it says so on a pipe of its own and waits
until the launcher has heard from every worker (or seen it exit).  A collective
can end on one worker while a peer is still receiving that worker's part of it; a
worker that left then would close its sockets under the peer, which reports an
``UnavailableError``.  A barrier over TensorFlow's own collectives has the same
hole at its last step; the launcher's, outside TensorFlow, does not.

Worker 0's stdout and stderr are the launcher's own; the other workers' lines are
prefixed ``[host K] ``.  The exit status is the first failing worker's (128+N for
a worker killed by signal N), 124 after a timeout, 130 after Ctrl-C.  A single
process run with ``--timeout`` goes through the same supervision.
"""

import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from types import FrameType
from typing import IO, Any, Callable, Dict, List, Mapping, MutableMapping, NoReturn, Optional, Sequence, Union, cast

from migrate_tpu.runtime.process import noise
from migrate_tpu.runtime.program import program_code

#: How long a stopped host may take to exit after SIGTERM before it is killed.
GRACE_SECONDS = 3.0

EXIT_TIMEOUT = 124
EXIT_INTERRUPTED = 130

#: Environment variable that carries the launcher pipe's file descriptor to a host.
WATCH_FD_VARIABLE = "MIGRATE_TPU_LAUNCHER_FD"

#: Environment variable with a host's two finish-line descriptors, "DONE,RELEASE".
FINISH_FDS_VARIABLE = "MIGRATE_TPU_FINISH_FDS"


#: Set by the launcher on the workers of a multi-client cluster (a script that builds
#: ``MultiWorkerMirroredStrategy`` itself); an emulated TPU pod is one process without it.
MULTI_CLIENT_VARIABLE = "MIGRATE_TPU_MULTI_CLIENT"

#: What ``signal.signal`` takes and ``signal.getsignal`` gives (a ``signal.Handlers`` is an int).
SignalHandler = Union[Callable[[int, Optional[FrameType]], Any], int, None]


def is_multi_client_worker(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether this process is one worker of a multi-client localhost cluster."""
    return (os.environ if environ is None else environ).get(MULTI_CLIENT_VARIABLE) == "1"


def is_multi_client_script(path: Union[str, "os.PathLike[str]"]) -> bool:
    """Whether the script at ``path`` (or a module of its folder it imports) builds
    ``MultiWorkerMirroredStrategy`` itself and no TPU strategy: TensorFlow runs such a program
    once per worker.  A TPU program runs once, on a pod's one client, whatever the number of
    hosts.  Read as :mod:`~migrate_tpu.runtime.program.program_code` reads a program for verify
    too: a comment or a string that names the strategy does not count."""
    try:
        script = os.fspath(path)
    except TypeError:
        return False
    return program_code.names_used(script, {"MultiWorkerMirroredStrategy", "TPUStrategy"}) == {"MultiWorkerMirroredStrategy"}


def tf_config_workers(environ: Optional[Mapping[str, str]] = None) -> List[str]:
    """``host:port`` of every worker that ``TF_CONFIG`` names."""
    config = json.loads((os.environ if environ is None else environ).get("TF_CONFIG") or "{}")
    return list(config.get("cluster", {}).get("worker", []))


def free_ports(count: int, host: str = "localhost") -> List[int]:
    """``count`` distinct TCP ports free on ``host`` right now."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def tf_configs(hosts: int, ports: Optional[Sequence[int]] = None) -> List[str]:
    """The ``TF_CONFIG`` of every host of a pod of ``hosts`` hosts (host K is worker K)."""
    ports = ports or free_ports(hosts)
    cluster = {"worker": ["localhost:{}".format(port) for port in ports]}
    return [json.dumps({"cluster": cluster, "task": {"type": "worker", "index": k}})
            for k in range(hosts)]


# --------------------------------------------------------------------------
# Inside a host: end with the launcher
# --------------------------------------------------------------------------


def _end_own_group() -> NoReturn:
    try:
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)
    finally:
        os._exit(137)


def watch_launcher(environ: Optional[MutableMapping[str, str]] = None, label: str = "migrate-tpu run") -> Optional[threading.Thread]:
    """In a host: end this process (and its group) as soon as the launcher is gone.

    The launcher keeps the write end of a pipe whose read end each host
    inherits (its number is in ``MIGRATE_TPU_LAUNCHER_FD``); reading it returns
    only when every write end is closed, that is when the launcher has exited,
    however it ended.  Returns the watching thread, or ``None`` when no pipe
    was given.
    """
    env = os.environ if environ is None else environ
    value = env.pop(WATCH_FD_VARIABLE, None)
    if not value:
        return None
    fd = int(value)

    def watch() -> None:
        try:
            while os.read(fd, 1):
                pass
        except OSError:
            pass
        try:  # stderr may be a pipe to the launcher that is gone
            sys.stderr.write("{}: the launcher is gone; stopping\n".format(label))
            sys.stderr.flush()
        except Exception:
            pass
        _end_own_group()

    thread = threading.Thread(target=watch, name="migrate-tpu-launcher-watch")
    thread.daemon = True
    thread.start()
    return thread


def whole_lines() -> None:
    """In a host: make ``sys.stdout`` and ``sys.stderr`` write whole lines at once.

    Host 0 shares the launcher's stdout and stderr with the lines relayed from the
    other hosts.  Unbuffered (``PYTHONUNBUFFERED``, ``-u``), ``print`` writes a
    line in pieces; block-buffered (a pipe, as in ``run ... | tee log``), the
    buffer is written when full, in the middle of a line.  Either way a relayed
    ``[host K]`` line could land inside one of host 0's lines.  Line-buffered,
    a line goes out in one write (the other hosts' lines reach the launcher
    as they are printed, too).
    """
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        if not isinstance(stream, io.TextIOWrapper):
            continue
        if stream.line_buffering and not isinstance(stream.buffer, io.RawIOBase):
            continue  # a terminal: already line by line
        try:
            fd = stream.fileno()
            stream.flush()
        except (OSError, ValueError):
            continue
        raw = io.FileIO(fd, "w", closefd=False)
        setattr(sys, name, io.TextIOWrapper(io.BufferedWriter(raw), encoding=stream.encoding,
                                            errors=stream.errors, line_buffering=True))


class FinishLine(object):
    """A host's side of the launcher's barrier: ``cross()`` writes one byte on the
    host's own *done* pipe, then blocks until the launcher closes the shared
    *release* pipe, which it does once every host has crossed or exited (and
    which also closes when the launcher itself is gone)."""

    def __init__(self, done_fd: int, release_fd: int) -> None:
        self.done_fd = done_fd
        self.release_fd = release_fd

    @classmethod
    def take(cls, environ: Optional[MutableMapping[str, str]] = None) -> Optional["FinishLine"]:
        """The finish line the launcher gave this host, or ``None``; the variable
        is removed so that what the script starts does not see it."""
        env = os.environ if environ is None else environ
        value = env.pop(FINISH_FDS_VARIABLE, None)
        if not value:
            return None
        done_fd, release_fd = (int(part) for part in value.split(","))
        return cls(done_fd, release_fd)

    def cross(self) -> None:
        try:
            os.write(self.done_fd, b"!")
        except OSError:  # the launcher is gone; the watch thread ends this host
            pass
        try:
            while os.read(self.release_fd, 1):
                pass
        except OSError:
            pass


def wait_until_closed(addresses: Sequence[str], timeout: float = 10.0, poll: float = 0.05) -> bool:
    """Wait (at most ``timeout`` seconds) until nothing listens at any ``host:port``
    of ``addresses`` any more: the first host, which leads TensorFlow's
    coordination service, ends after the others so that none reports it lost."""
    deadline = time.time() + timeout
    pending = list(addresses)
    while pending and time.time() < deadline:
        host, _, port = pending[0].rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=1.0).close()
        except (OSError, ValueError):
            pending.pop(0)
            continue
        time.sleep(poll)
    return not pending


# --------------------------------------------------------------------------
# In the launcher
# --------------------------------------------------------------------------


def _forward(stream: IO[bytes], sink: IO[bytes], prefix: bytes, lock: threading.Lock, filter_noise: bool = False) -> None:
    """Copy ``stream`` line by line to ``sink`` with ``prefix`` before each line
    (TensorFlow's start-up noise left out with ``filter_noise``)."""
    for line in iter(stream.readline, b""):
        if filter_noise and noise.is_noise(line):
            continue
        with lock:
            sink.write(prefix + line)
            sink.flush()
    stream.close()


def relay_without_noise(stream: IO[bytes], sink: IO[Any]) -> threading.Thread:
    """A started thread copying ``stream`` to ``sink`` as it comes, without TensorFlow's
    start-up noise (:mod:`migrate_tpu.runtime.process.noise`); partial lines pass at once."""
    out = _sink(sink)

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    def copy() -> None:
        lines = noise.NoiseFilter(write)
        try:
            while True:
                chunk = os.read(stream.fileno(), 65536)
                if not chunk:
                    break
                lines.feed(chunk)
            lines.close()
        except (OSError, ValueError):  # the sink went away: nothing more to show
            pass
        finally:
            stream.close()

    thread = threading.Thread(target=copy)
    thread.daemon = True
    thread.start()
    return thread


def _sink(stream: IO[Any]) -> IO[bytes]:
    """The bytes under a text stream (``sys.stdout.buffer``), or the stream itself."""
    return getattr(stream, "buffer", stream)


def _status(returncode: Optional[int]) -> Optional[int]:
    if returncode is None:
        return None
    return 128 - returncode if returncode < 0 else returncode


def _signal_group(process: "subprocess.Popen[bytes]", signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except (OSError, ProcessLookupError):
        pass


def _stop(processes: Sequence["subprocess.Popen[bytes]"], say: Callable[[str], None]) -> None:
    """SIGTERM every running host's group, then SIGKILL what is left after the grace time."""
    running = [(k, p) for k, p in enumerate(processes) if p.poll() is None]
    for _, process in running:
        _signal_group(process, signal.SIGTERM)
    deadline = time.time() + GRACE_SECONDS
    for k, process in running:
        try:
            process.wait(max(0.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            say("host {} did not stop within {:.0f}s; killed".format(k, GRACE_SECONDS))
    for _, process in enumerate(processes):
        _signal_group(process, signal.SIGKILL)  # anything the host started, too
        process.wait()


def _heard(done_fd: int) -> bool:
    """Whether the host on the other end of ``done_fd`` crossed its finish line or
    exited (closing the pipe); the descriptor is closed once it has."""
    try:
        os.read(done_fd, 1)  # b"!" when it crossed, b"" when it exited
    except BlockingIOError:
        return False
    except OSError:
        pass
    os.close(done_fd)
    return True


def _interrupts_raise_keyboard_interrupt() -> SignalHandler:
    """Make Ctrl-C (SIGINT) raise ``KeyboardInterrupt`` in this thread, whatever handler
    the caller installed (the command line's turns it into its own exit); returns the
    handler to put back, or ``None``.  A launcher that ignores SIGINT (started in the
    background) keeps ignoring it."""
    if threading.current_thread() is not threading.main_thread():
        return None
    current = signal.getsignal(signal.SIGINT)
    if current in (signal.SIG_IGN, signal.default_int_handler):
        return None
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return current


def run_hosts(argvs: Sequence[Sequence[str]], envs: Sequence[Mapping[str, str]], timeout: Optional[float] = None,
              label: str = "migrate-tpu run", poll: float = 0.05, filter_noise: bool = False) -> int:
    """Start one process per host (``argvs[k]`` with environment ``envs[k]``) and
    supervise them until all have exited; returns the pod's exit status.
    ``filter_noise`` leaves TensorFlow's start-up noise out of their stderr."""
    previous_handler = _interrupts_raise_keyboard_interrupt()
    try:
        return _run_hosts(argvs, envs, timeout, label, poll, filter_noise)
    finally:
        if previous_handler is not None:
            signal.signal(signal.SIGINT, previous_handler)


def _run_hosts(argvs: Sequence[Sequence[str]], envs: Sequence[Mapping[str, str]], timeout: Optional[float], label: str,
               poll: float, filter_noise: bool = False) -> int:
    pod = _Pod(label, filter_noise)
    try:
        for k, (argv, env) in enumerate(zip(argvs, envs)):
            if not pod.start(k, argv, env):
                return 127
        pod.all_started()
        return pod.supervise(timeout, poll)
    except KeyboardInterrupt:
        pod.say("interrupted; stopping " + ("it" if len(pod.processes) == 1 else "every host"))
        _stop(pod.processes, pod.say)
        return EXIT_INTERRUPTED
    finally:
        pod.close()  # whatever happened above, nothing survives


class _Pod(object):
    """The launcher's side of a running pod: its hosts, the threads relaying their output,
    and the pipes it shares with them: the launcher pipe each host watches (it closes
    when the launcher is gone), the finish line's release pipe and each host's done
    pipe (:class:`FinishLine`)."""

    def __init__(self, label: str, filter_noise: bool) -> None:
        self.label = label
        self.filter_noise = filter_noise
        self.lock = threading.Lock()
        self.stdout, self.stderr = _sink(sys.stdout), _sink(sys.stderr)
        self.read_end: Optional[int]  # these three are None once closed
        self.release_read: Optional[int]
        self.release_write: Optional[int]
        self.read_end, self.write_end = os.pipe()
        self.release_read, self.release_write = os.pipe()
        self.finishers: List[int] = []  # per host: the launcher's read end of its done pipe, None once heard
        self.processes: List["subprocess.Popen[bytes]"] = []
        self.threads: List[threading.Thread] = []

    def say(self, text: str) -> None:
        with self.lock:
            self.stderr.write("{}: {}\n".format(self.label, text).encode("utf-8", "replace"))
            self.stderr.flush()

    def start(self, k: int, argv: Sequence[str], env: Mapping[str, str]) -> bool:
        """Start host ``k``, which inherits the launcher pipe, its own done pipe and the
        release pipe, and relay its output; False (said, every host started stopped)
        where it cannot start."""
        read_end, release_read = self.read_end, self.release_read
        assert read_end is not None and release_read is not None, "open until every host has started"
        done_read, done_write = os.pipe()
        os.set_blocking(done_read, False)
        self.finishers.append(done_read)
        env = dict(env)
        env[WATCH_FD_VARIABLE] = str(read_end)
        env[FINISH_FDS_VARIABLE] = "{},{}".format(done_write, release_read)
        # Popen's stdin/stdout/stderr; Any, as ``**pipes`` is matched against every keyword of Popen.
        pipes: Dict[str, Any] = {} if k == 0 else {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE,
                                                   "stderr": subprocess.PIPE}
        if k == 0 and self.filter_noise:
            pipes = {"stderr": subprocess.PIPE}
        try:
            process = subprocess.Popen(argv, env=env, pass_fds=(read_end, done_write, release_read),
                                       start_new_session=True, **pipes)
        except OSError as error:
            self.say("cannot start host {} ({}): {}".format(k, argv[0], error))
            _stop(self.processes, self.say)
            return False
        finally:
            os.close(done_write)
        self.processes.append(process)
        self._relay(k, process)
        return True

    def _relay(self, k: int, process: "subprocess.Popen[bytes]") -> None:
        """Host 0 writes to the launcher's own stdout and stderr (its stderr through the noise
        filter, with ``filter_noise``); every other host's lines are prefixed ``[host K] ``."""
        if k:
            prefix = "[host {}] ".format(k).encode("ascii")
            for stream, sink in ((process.stdout, self.stdout), (process.stderr, self.stderr)):
                thread = threading.Thread(target=_forward, args=(stream, sink, prefix, self.lock,
                                                                 self.filter_noise and sink is self.stderr))
                thread.daemon = True
                thread.start()
                self.threads.append(thread)
        elif self.filter_noise:
            self.threads.append(relay_without_noise(cast("IO[bytes]", process.stderr), sys.stderr))  # a pipe (``pipes``)

    def all_started(self) -> None:
        """Close the launcher's copies of the ends only the hosts read: the launcher pipe then
        closes when the launcher goes, the release pipe when it lets them go."""
        for fd in (self.read_end, self.release_read):
            if fd is not None:  # open until now (``start``)
                os.close(fd)
        self.read_end = self.release_read = None

    def supervise(self, timeout: Optional[float], poll: float) -> int:
        """Wait until every host has exited, the first to fail (which stops the others), or
        the timeout; the pod's exit status."""
        started = time.time()
        while True:
            self._release_when_all_crossed()
            codes = [p.poll() for p in self.processes]
            failed = [k for k, code in enumerate(codes) if code not in (None, 0)]
            if failed:
                return self._failed(failed[0], codes)
            for process, code in zip(self.processes, codes):
                if code is not None:  # what a finished host started ends with it
                    _signal_group(process, signal.SIGKILL)
            if all(code is not None for code in codes):
                return 0
            if timeout is not None and time.time() - started > timeout:
                return self._timed_out(timeout, codes)
            time.sleep(poll)

    def _release_when_all_crossed(self) -> None:
        self.finishers = [fd for fd in self.finishers if not _heard(fd)]
        if not self.finishers and self.release_write is not None:
            os.close(self.release_write)  # every host is done: let them all go
            self.release_write = None

    def _failed(self, first: int, codes: Sequence[Optional[int]]) -> int:
        """Host ``first`` failed: the others are stopped; its status is the pod's."""
        status = cast(int, _status(codes[first]))  # a failed host's code: a number
        if any(code is None for code in codes):
            self.say("host {} exited with status {}; stopping the other hosts".format(first, status))
            _stop(self.processes, self.say)
        elif len(self.processes) > 1:
            self.say("host {} exited with status {}".format(first, status))
        return status

    def _timed_out(self, timeout: float, codes: Sequence[Optional[int]]) -> int:
        waiting = [k for k, code in enumerate(codes) if code is None]
        if len(self.processes) == 1:  # a single process under --timeout: no hosts to speak of
            self.say("still running after the {:g}s timeout; stopping it".format(timeout))
        else:
            self.say("host{} {} still running after the {:g}s timeout; stopping every host".format(
                "s" if len(waiting) > 1 else "", ", ".join(str(k) for k in waiting), timeout))
        _stop(self.processes, self.say)
        return EXIT_TIMEOUT

    def close(self) -> None:
        """Kill every host still running (and what it started), wait for the relays, close
        every descriptor still open."""
        for process in self.processes:
            if process.poll() is None:
                _signal_group(process, signal.SIGKILL)
                process.wait()
        for thread in self.threads:
            thread.join(5)
        for fd in [self.read_end, self.release_read, self.release_write] + self.finishers:
            if fd is not None:
                os.close(fd)
        os.close(self.write_end)
