"""Start the runtime runner in a chosen interpreter (used by ``migrate-tpu run``).

Imports nothing outside the standard library, so the CLI can call it without
TensorFlow installed.  The interpreter given by ``python`` (e.g. a TF 2.1
virtualenv) need not have migrate-tpu installed: the folder that contains the
``migrate_tpu`` package is put first on its ``PYTHONPATH``.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from typing import IO, Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Union, cast

import migrate_tpu
from migrate_tpu.runtime import DEFAULT_REPLICAS
from migrate_tpu.runtime.process import envs, pod, warm, warm_pool

#: A script's path, as the command line and ``verify`` give it.
ScriptPath = Union[str, "os.PathLike[str]"]


def package_root() -> str:
    """The folder that contains the ``migrate_tpu`` package."""
    return os.path.dirname(os.path.dirname(os.path.abspath(migrate_tpu.__file__)))


class RunnerOptions(NamedTuple):
    """How :func:`command` starts the runner: the interpreter (``python``, default this one) and the
    runner's own options (``python -m migrate_tpu.runtime --help``), each left out of the argv
    when it has its default."""
    replicas: Optional[int] = None
    tf_api: Optional[str] = None
    python: Optional[str] = None
    emulation: bool = True
    hosts: Optional[int] = None
    quiet: bool = False
    tpu_env: Optional[str] = None
    verbose: bool = False
    api_record: Optional[str] = None


def command(script: ScriptPath, args: Sequence[object] = (), options: Optional[RunnerOptions] = None) -> List[str]:
    """The argv that :func:`launch` runs (for one host of a pod when ``options.hosts`` is given)."""
    options = options or RunnerOptions()
    argv = [options.python or sys.executable, "-m", "migrate_tpu.runtime"]
    if options.verbose:
        argv.append("--verbose")
    if options.api_record is not None:
        argv += ["--api-record", str(options.api_record)]
    if options.hosts is not None:
        argv += ["--hosts", str(int(options.hosts))]
    if options.replicas is not None:
        argv += ["--replicas", str(int(options.replicas))]
    if options.tf_api is not None:
        argv += ["--tf-api", str(options.tf_api)]
    if not options.emulation:
        argv.append("--no-emulation")
    if options.quiet:
        argv.append("--quiet")
    if options.tpu_env is not None:
        argv += ["--tpu-env", str(options.tpu_env)]
    argv.append(os.fspath(script) if hasattr(os, "fspath") else str(script))
    argv += [str(a) for a in args]
    return argv


def _is_shared(root: str) -> bool:
    """Whether ``root`` holds other packages too (an installed site-packages): putting it
    on another interpreter's path would shadow that interpreter's own packages."""
    return os.path.basename(os.path.normpath(root)) in ("site-packages", "dist-packages")


def isolated_root() -> str:
    """A new temporary folder holding only ``migrate_tpu`` (a link, or a copy)."""
    folder = tempfile.mkdtemp(prefix="migrate-tpu-runtime-")
    package = os.path.dirname(os.path.abspath(migrate_tpu.__file__))
    target = os.path.join(folder, "migrate_tpu")
    try:
        os.symlink(package, target, target_is_directory=True)
    except (OSError, NotImplementedError, AttributeError):
        shutil.copytree(package, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return folder


def environment(base: Optional[Mapping[str, str]] = None, root: Optional[str] = None) -> Dict[str, str]:
    """``base`` (default ``os.environ``) with ``root`` (default: the folder that
    contains the ``migrate_tpu`` package) first on ``PYTHONPATH``."""
    env = dict(os.environ if base is None else base)
    root = root or package_root()
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    env["PYTHONPATH"] = os.pathsep.join([root] + parts)
    return env


def _is_interpreter(python: str) -> bool:
    """Whether ``python`` can be started: a path to an executable, or a command on PATH."""
    if os.sep in python or (os.altsep and os.altsep in python):
        return os.path.isfile(python) and os.access(python, os.X_OK)
    return shutil.which(python) is not None


def resolve_python(python: Optional[str]) -> Optional[str]:
    """``python`` itself, or for an env name of ``migrate-tpu envs`` (``tf2.1``, ``tf2.4``,
    ``tf2.21``) that env's interpreter; ``None`` when such a name has no env yet."""
    if python and python in envs.ENVS and not os.path.exists(python):
        return envs.interpreter(python)
    return python


def builds_its_own_cluster(script: ScriptPath) -> bool:
    """Whether ``script`` builds ``MultiWorkerMirroredStrategy`` itself (with ``hosts`` it
    then runs as that many worker processes, each one replica on the CPU)."""
    return pod.is_multi_client_script(script)


def pod_replicas(hosts: int, replicas: Optional[int] = None) -> int:
    """Cores of a pod of ``hosts`` hosts: ``replicas``, or 8 per host (v3-8 hosts)."""
    return DEFAULT_REPLICAS * int(hosts) if replicas is None else int(replicas)


class LaunchOptions(NamedTuple):
    """How :func:`launch` runs a script (each as its docstring says)."""
    replicas: Optional[int] = None
    tf_api: Optional[str] = None
    python: Optional[str] = None
    emulation: bool = True
    hosts: Optional[int] = None
    timeout: Optional[float] = None
    tpu_env: Optional[str] = None
    verbose: bool = False
    api_record: Optional[str] = None


def launch(script: ScriptPath, args: Sequence[object], options: Optional[LaunchOptions] = None, **asked: Any) -> int:
    """Run ``script`` (a .py file or .ipynb notebook) with ``args`` under the runtime, as
    ``options`` say, or the same asked by name (:class:`LaunchOptions`).

    stdin, stdout and stderr are inherited; returns the script's exit status.
    ``python`` picks the interpreter (default: this one; ``tf2.1``, ``tf2.4`` and
    ``tf2.21`` name the environments that ``migrate-tpu envs`` builds); ``tf_api`` is
    ``'2.1'``, ``'2.4'`` or ``None`` (the interpreter's own TF); ``emulation``
    False runs on a real TPU.  ``hosts`` emulates a pod of that many TPU hosts
    in the one process of the pod's client (``replicas`` then counting the cores of all
    hosts), or, for a script that builds ``MultiWorkerMirroredStrategy`` itself, runs
    that many worker processes (see :mod:`migrate_tpu.runtime.process.pod`); ``tpu_env`` names the machine the emulated
    TPU is attached to (``colab``, ``none``); ``timeout`` (seconds) stops every process
    after that long (exit status 124).  Unless ``verbose``, TensorFlow's start-up
    noise is taken out of the script's stderr (:mod:`migrate_tpu.runtime.process.noise`)
    and tracebacks leave out the emulation's own frames; ``api_record`` names a file for the record of
    the moved APIs the run called (JSON).  Exit status 2 means the runtime refused
    the request (bad options, missing file); 127 that the interpreter was not
    found.
    """
    replicas, tf_api, python, emulation, hosts, timeout, tpu_env, verbose, api_record = options or LaunchOptions(**asked)
    resolved = resolve_python(python)
    refused = _refused(hosts, replicas, python, resolved)
    if refused is not None:
        return refused
    package = package_root()
    root: Optional[str] = package
    multi_client = hosts is not None and pod.is_multi_client_script(script)
    use_warm = warm.wanted() and warm.available() and not multi_client
    temporary = None
    if _is_shared(package):
        # a warm pool keeps one such folder for its servers; a cold run makes its own
        root = warm_pool.pool().isolated_root(isolated_root) if use_warm else None
        temporary = None if root else isolated_root()
    try:
        env = environment(root=temporary or root)
        if multi_client:
            count = int(hosts or 1)  # multi_client: hosts was given
            argvs = [command(script, args, RunnerOptions(pod_replicas(count, replicas), tf_api, resolved, emulation, hosts=count, quiet=k > 0,
                                                         tpu_env=tpu_env, verbose=verbose, api_record=None if k else api_record))
                     for k in range(count)]
            return pod.run_hosts(argvs, _worker_environments(env, count), timeout=timeout, filter_noise=not verbose)
        # A TPU program, on one host or a pod: one process, the pod's one client.
        if hosts is not None:
            replicas = pod_replicas(hosts, replicas)
        argv = command(script, args, RunnerOptions(replicas, tf_api, resolved, emulation, hosts=hosts,
                                                   tpu_env=tpu_env, verbose=verbose, api_record=api_record))
        if use_warm:  # forked from a warm interpreter (runtime/process/warm.py), where that is safe
            status = warm.launch(argv, env, timeout=timeout, verbose=verbose)
            if status is not None:
                return status
        if timeout is not None:
            return pod.run_hosts([argv], [env], timeout=timeout, filter_noise=not verbose)
        return _run_cold(argv, env, verbose)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


def _refused(hosts: Optional[int], replicas: Optional[int], python: Optional[str], resolved: Optional[str]) -> Optional[int]:
    """The exit status of a request the launcher refuses, with its one line on stderr; else None
    (``resolved``: ``python`` as :func:`resolve_python` found it)."""
    if hosts is not None and int(hosts) < 1:
        sys.stderr.write("migrate-tpu run: --hosts must be >= 1\n")
        return 2
    if hosts is not None and pod_replicas(hosts, replicas) % int(hosts):
        sys.stderr.write("migrate-tpu run: {} replicas cannot be spread evenly over {} hosts\n"
                         .format(replicas, hosts))
        return 2
    if python and resolved is None:
        sys.stderr.write("migrate-tpu run: no environment {!r} under {}; create it with "
                         "{} {}\n".format(python, envs.envs_dir(), envs.BUILD_COMMAND, python))
        return 127
    if python and not _is_interpreter(cast(str, resolved)):  # not None: refused just above
        sys.stderr.write("migrate-tpu run: {}\n".format(envs.unknown_interpreter_message(python)))
        return 127
    return None


def _worker_environments(env: Dict[str, str], count: int) -> List[Dict[str, str]]:
    """Each worker's environment of a localhost cluster of ``count``: its TF_CONFIG, and marked multi-client."""
    found = []
    for config in pod.tf_configs(count):
        host_env = dict(env)
        host_env["TF_CONFIG"] = config
        host_env[pod.MULTI_CLIENT_VARIABLE] = "1"
        found.append(host_env)
    return found


def _run_cold(argv: List[str], env: Dict[str, str], verbose: bool) -> int:
    """A run started as a new interpreter, its stdin and stdout inherited, its stderr relayed
    without TensorFlow's noise (unless ``verbose``); it ends when this process does."""
    read_end, write_end = os.pipe()  # closes when this process ends: the runner ends too
    env[pod.WATCH_FD_VARIABLE] = str(read_end)
    try:
        process = subprocess.Popen(argv, env=env, pass_fds=(read_end,),
                                   stderr=None if verbose else subprocess.PIPE)
    except OSError as error:
        sys.stderr.write("migrate-tpu run: cannot start {}: {}\n".format(argv[0], error))
        return 127
    finally:
        os.close(read_end)
    # Unless ``verbose``, stderr is a pipe (``Popen`` above).
    relay = None if verbose else pod.relay_without_noise(cast("IO[bytes]", process.stderr), sys.stderr)
    try:
        return process.wait()
    except KeyboardInterrupt:
        process.wait()
        return 130
    finally:
        os.close(write_end)
        if relay is not None:
            relay.join(5.0)  # to the end of the script's stderr (a child that keeps it open: not for ever)
