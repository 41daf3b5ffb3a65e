"""Execute a script or notebook under the TPU emulation (``migrate-tpu run``).

``python -m migrate_tpu.runtime [--replicas N] [--tf-api 2.1|2.2|2.3|2.4] [--no-emulation]
SCRIPT|NOTEBOOK [ARGS...]`` behaves like ``python SCRIPT ARGS...``: the script
runs as ``__main__`` with ``sys.argv = [SCRIPT, *ARGS]`` and its folder first on
``sys.path``; its output and exit status pass through, and an uncaught
exception prints a traceback (from the script's frames down) and exits 1.

A notebook's code cells run in order in one namespace.  IPython lines (as
:mod:`migrate_tpu.magics` recognises them) are skipped: ``%line`` and ``!shell``
lines become ``pass`` (``%time``/``%timeit``/``%prun STATEMENT`` run the
statement once); a cell starting with ``%%time``/``%%timeit``/``%%capture``/
``%%prun`` runs its body, ``%%writefile [-a] PATH`` writes it to PATH (a module the
notebook imports next), any other ``%%`` cell is skipped.  Each cell's source
is registered with ``linecache`` under its own file name, as IPython does, so
AutoGraph and tracebacks can read it.  As in a notebook, the value of a cell's last expression is printed
unless the line ends with ``;`` (:mod:`migrate_tpu.runtime.process.notebooks`).

Before the script runs, the logical devices are configured and the TPU
emulation (and, for ``--tf-api 2.1``, ``2.2`` or ``2.3``, that release's surface) is
installed.  Nothing is emulated when ``--no-emulation`` is given or a real TPU
is announced by ``TPU_NAME``/``KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS``.

This module imports TensorFlow only inside :func:`main`, after the
environment is prepared.
"""

from __future__ import absolute_import, division, print_function

import argparse
import io
import json
import os
import re
import sys
import traceback
import types
from typing import NamedTuple, Optional

from migrate_tpu.runtime import (DEFAULT_REPLICAS, MIXED_TF_API, NATIVE_TF_API, RUNTIME_FOLDER, TARGET_VARIABLE, TF_API_CHOICES,
                                 real_tpu_reachable)
from migrate_tpu.runtime.tpu import tpu_machine
from migrate_tpu.runtime.surfaces import moved_calls
from migrate_tpu.runtime.record import recorder
from migrate_tpu.runtime.process import envs, notebooks, pod

EXIT_USAGE = 2


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m migrate_tpu.runtime",
        description="Run a TensorFlow TPU script or notebook on ordinary devices, "
                    "with TPU semantics emulated over tf.distribute.")
    parser.add_argument("--replicas", type=int, default=None,
                        help="number of emulated TPU cores, of all hosts (default {} per host: "
                             "v3-8 hosts)".format(DEFAULT_REPLICAS))
    parser.add_argument("--hosts", type=int, default=None,
                        help="this process is one host of an emulated pod of HOSTS hosts; "
                             "TF_CONFIG says which (worker task K is host K)")
    parser.add_argument("--tf-api", choices=TF_API_CHOICES, default=None,
                        help="TensorFlow API the code is written for (default: the interpreter's "
                             "release, 2.4 on anything newer); 2.1, 2.2 and 2.3 show that release's "
                             "names on a newer TensorFlow; 2.1+2.4 offers both 2.1's and 2.4's "
                             "names (partly migrated code); native: the interpreter's own, as it is")
    parser.add_argument("--api-record", metavar="FILE", default=None,
                        help="write the record of the moved APIs the run called (JSON) to FILE")
    parser.add_argument("--tpu-env", choices=sorted(tpu_machine.MACHINES), default=None,
                        help="the machine the emulated TPU is attached to: a TPU Node of 2020 "
                             "(files on gs:// only, no Python on the TPU worker): colab (TPU_NAME and "
                             "COLAB_TPU_ADDR announce it; the default), node (TPU_NAME names it) or "
                             "none (nothing does: TPUClusterResolver(tpu='') fails from TF 2.2 on); "
                             "or vm, a TPU VM (local files and Python input work); also "
                             "${}".format(tpu_machine.MACHINE_VARIABLE))
    parser.add_argument("--gcs", metavar="DIR", default=None,
                        help="read and write gs://BUCKET/PATH as DIR/BUCKET/PATH; also "
                             "${}".format(tpu_machine.GCS_VARIABLE))
    parser.add_argument("--no-emulation", action="store_true",
                        help="emulate nothing (run on a real TPU)")
    parser.add_argument("--quiet", action="store_true", help="no banner on stderr")
    parser.add_argument("--verbose", action="store_true",
                        help="show TensorFlow's own logs and the emulation's frames in tracebacks")
    parser.add_argument("script", help="a .py script or .ipynb notebook")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    return parser


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


#: Whether tracebacks keep the emulation's own frames (``--verbose``).
SHOW_EMULATION_FRAMES = False

def _is_emulation_frame(filename):
    """A frame of this package's runtime (any of its folders): how the TPU is emulated, never the
    user's code (a real TPU's traceback has TensorFlow's frames there, which are kept)."""
    return os.path.abspath(filename).startswith(RUNTIME_FOLDER + os.sep)


def _print_exception(exc_type, exc, tb, skip_frames):
    for _ in range(skip_frames):
        if tb is not None:
            tb = tb.tb_next
    if SHOW_EMULATION_FRAMES:
        traceback.print_exception(exc_type, exc, tb)
    else:
        sys.stderr.write("".join(_format_without_emulation(exc, tb, set())))
    if KERAS_3_FAILURE in str(exc) and "tensorflow" in sys.modules:
        version = tuple(int(part) for part in sys.modules["tensorflow"].__version__.split(".")[:2])
        if keras_3_in_use(version):
            sys.stderr.write("migrate-tpu run: note: {}\n".format(KERAS_3_NOTE))
    machine_note = tpu_machine.note_for(str(exc))
    if machine_note:
        sys.stderr.write("migrate-tpu run: note: {}\n".format(machine_note))


def _format_without_emulation(exc, tb, seen):
    """``traceback.format_exception``'s text, chained exceptions included, without the
    emulation's frames (a line says how many were left out and how to see them)."""
    seen.add(id(exc))
    lines = []
    cause, context = exc.__cause__, exc.__context__
    if cause is not None and id(cause) not in seen:
        lines += _format_without_emulation(cause, cause.__traceback__, seen)
        lines.append("\nThe above exception was the direct cause of the following exception:\n\n")
    elif context is not None and not exc.__suppress_context__ and id(context) not in seen:
        lines += _format_without_emulation(context, context.__traceback__, seen)
        lines.append("\nDuring handling of the above exception, another exception occurred:\n\n")
    frames = traceback.extract_tb(tb)
    kept = [frame for frame in frames if not _is_emulation_frame(frame.filename)]
    if kept:
        lines.append("Traceback (most recent call last):\n")
        lines += traceback.format_list(kept)
    message, in_message = _message_without_emulation(traceback.format_exception_only(type(exc), exc))
    hidden = len(frames) - len(kept) + in_message
    if hidden:
        lines.append("  ({} {} of the TPU emulation left out; `migrate-tpu run --verbose` shows {})\n".format(
            hidden, "frame" if hidden == 1 else "frames", "it" if hidden == 1 else "them"))
    return lines + message


# A frame quoted in an exception's message: AutoGraph's "in user code" stack (TF 2.21: `File
# "path", line N, in name`; TF 2.1-2.4: `path:N name`), each followed by its source line.
_QUOTED_FRAME = re.compile(r'^\s+(?:File "(?P<file>[^"]+)", line \d+|(?P<path>\S+\.py):\d+ \S+)')


def _message_without_emulation(lines):
    """An exception's message lines without the emulation's frames AutoGraph quotes in it (with the
    source line under each), and how many were left out."""
    kept, hidden, skip_source = [], 0, False
    for line in "".join(lines).splitlines(True):
        if skip_source:
            skip_source = False
            if line.startswith(" " * 8):
                continue
        quoted = _QUOTED_FRAME.match(line)
        if quoted and _is_emulation_frame(quoted.group("file") or quoted.group("path")):
            hidden, skip_source = hidden + 1, True
            continue
        kept.append(line)
    return kept, hidden


def _exit_status(code):
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write("{}\n".format(code))
    return 1


def execute(path, args):
    """Run ``path`` (script or notebook) as ``__main__``; return its exit status."""
    given = path
    path = os.path.abspath(path)
    display_path = path
    is_notebook = path.endswith(".ipynb")
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": display_path, "__builtins__": __builtins__,
                          "__package__": None, "__spec__": None, "__loader__": None})
    sys.modules["__main__"] = main  # the script's module stays there for atexit handlers
    sys.argv[:] = [given] + list(args)  # as `python SCRIPT` does
    folder = os.path.dirname(path)
    if sys.path and sys.path[0] in ("", os.getcwd()) and folder != sys.path[0]:
        sys.path[0] = folder
    else:
        sys.path.insert(0, folder)
    try:
        if is_notebook:
            cells = notebooks.notebook_cells(path)
            for label, code in cells:
                notebooks.run_cell(code, label, main.__dict__)
        else:
            with io.open(path, "rb") as handle:
                source = handle.read()
            code = compile(source, display_path, "exec", dont_inherit=True)
            exec(code, main.__dict__)
    except recorder.StopAfterSteps:  # verify's --steps: the steps asked for are done
        return 0
    except SystemExit as stop:
        return _exit_status(stop.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        return 130
    except BaseException:
        exc_type, exc, tb = sys.exc_info()
        recorder.note_exception(exc)
        moved_calls.note_failure(exc)
        # drop this function's frame (and the cell runner's, for notebooks)
        _print_exception(exc_type, exc, tb, 2 if is_notebook else 1)
        return 1
    finally:
        _flush()
    return 0


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def prepare_environment(emulate, verbose=False):
    """Environment variables that must be set before TensorFlow is imported."""
    if not verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # TF >= 2.16 makes tf.keras Keras 3; 2.x-era code is Keras 2 code, which the
    # tf-keras package provides.  (Older TF ignores the variable.)
    if "TF_USE_LEGACY_KERAS" not in os.environ:
        try:
            import importlib.util
            has_tf_keras = importlib.util.find_spec("tf_keras") is not None
        except (ImportError, ValueError):
            has_tf_keras = False
        if has_tf_keras:
            os.environ["TF_USE_LEGACY_KERAS"] = "1"
    del emulate


def pod_task(hosts, environ=None):
    """This host's index in a pod of ``hosts`` hosts, from ``TF_CONFIG``."""
    env = os.environ if environ is None else environ
    try:
        config = json.loads(env.get("TF_CONFIG") or "{}")
        workers = config["cluster"]["worker"]
        task = config["task"]
        index = int(task["index"])
    except (ValueError, KeyError, TypeError):
        raise ValueError("--hosts needs TF_CONFIG naming one worker task per host "
                         "(`migrate-tpu run --hosts` sets it)")
    if len(workers) != hosts or task.get("type") != "worker" or not 0 <= index < hosts:
        raise ValueError("TF_CONFIG names {} workers and task {}; --hosts is {}".format(
            len(workers), task, hosts))
    return index


class SetupOptions(NamedTuple):
    """What :func:`setup` switches on: the runner's ``--replicas``, ``--tf-api``, ``--quiet``,
    ``--hosts``, ``--tpu-env``, ``--verbose`` and ``--gcs``, and whether the TPU is emulated at all."""
    replicas: Optional[int] = None
    tf_api: Optional[str] = None
    emulation: bool = True
    quiet: bool = False
    hosts: Optional[int] = None
    tpu_env: Optional[str] = None
    verbose: bool = False
    gcs: Optional[str] = None


def setup(options=None):
    """Import TensorFlow and switch on what ``options`` (:class:`SetupOptions`) ask for.  Returns a description."""
    options = options or SetupOptions()
    prepare_environment(options.emulation, options.verbose)
    if options.hosts and pod.is_multi_client_worker():
        pod_task(options.hosts)  # a worker of a multi-client cluster: TF_CONFIG must name it
    try:
        import tensorflow  # noqa: F401
    except ImportError as error:
        raise ValueError("cannot import TensorFlow in {} ({}); install it (pip install "
                         "'migrate-tpu[runtime]') or pick an interpreter that has it with --python"
                         .format(sys.executable, error))
    from migrate_tpu.runtime.surfaces import emulation as emu  # imports TensorFlow
    from migrate_tpu.runtime.program.autograph_scope import leave_the_runtime_unconverted
    leave_the_runtime_unconverted()  # as AutoGraph leaves TensorFlow's own code
    tf_api, mixed = _surface_asked(emu, options.tf_api)
    if options.emulation:
        text = _install_emulation(emu, options, tf_api)
    else:
        text = _install_without_emulation(emu, tf_api)
    if tf_api in ("2.1", "2.2", "2.3") or mixed:
        from migrate_tpu.runtime.surfaces import legacy
        # the older release's names (nothing to add on TF 2.0/2.1 itself), then its names alone
        legacy.install(emulated=options.emulation, release="2.1" if mixed else tf_api)
        if not mixed:
            legacy.restrict_to(tf_api)
    if not options.quiet:
        sys.stderr.write("migrate-tpu run: {}\n".format(text))
        if keras_3_in_use(emu.tf_version()) and _mentions_keras(SCRIPT_PATH):
            sys.stderr.write("migrate-tpu run: note: {}\n".format(KERAS_3_NOTE))
        sys.stderr.flush()
    settle_what_is_loaded()
    return text


def _surface_asked(emu, tf_api):
    """``(tf_api, mixed)``: the surface ``--tf-api`` asks for on this TensorFlow (``mixed``: 2.1+2.4,
    whose surface is 2.4's); ValueError for one it cannot show."""
    tf_api = tf_api or emu.default_tf_api()
    if tf_api not in TF_API_CHOICES:
        raise ValueError("unknown TF API {!r} (choose from {})".format(tf_api, ", ".join(TF_API_CHOICES)))
    if tf_api == NATIVE_TF_API and emu.tf_version() <= (2, 4):
        tf_api = emu.default_tf_api()  # TF 2.1 to 2.4: the release's surface is the interpreter itself
    if tf_api != NATIVE_TF_API and emu.api_version(tf_api) > emu.tf_version():  # a surface is its release: none on an older TensorFlow
        raise ValueError("--tf-api {} needs TensorFlow >= {}; this interpreter has TensorFlow {}".format(
            tf_api, ".".join(map(str, emu.api_version(tf_api))), emu.tf.__version__))
    mixed = tf_api == MIXED_TF_API
    if mixed:  # the 2.4 surface, the 2.1 names added below and none hidden
        tf_api = "2.4"
    return tf_api, mixed


def _install_emulation(emu, options, tf_api):
    """The TPU emulated on the machine ``options`` names, with its cores (a pod's, or one worker's
    share); the description."""
    replicas, hosts = options.replicas, options.hosts
    machine = tpu_machine.select(options.tpu_env, options.gcs)  # ValueError naming the choices
    for name, value in machine.announced.items():
        os.environ.setdefault(name, value)
    if hosts and pod.is_multi_client_worker():
        # one worker of the script's own MultiWorkerMirroredStrategy: its share of the cores
        emu.configure_devices((replicas or DEFAULT_REPLICAS * hosts) // hosts)
    elif hosts:
        replicas = replicas or DEFAULT_REPLICAS * hosts
        emu.configure_pod(hosts, replicas)
        emu.configure_devices(replicas)
    else:
        emu.configure_devices(replicas or DEFAULT_REPLICAS)
    emu.install(tf_api=tf_api)
    return emu.describe()


def _install_without_emulation(emu, tf_api):
    """No TPU emulated (``--no-emulation``, a real TPU): the release's surface alone; the description."""
    from migrate_tpu.runtime.surfaces import releases
    emu.STATE.tf_api = releases.native_release() if tf_api == NATIVE_TF_API else tf_api
    text = "no TPU emulation: TF {} with the TF {} API".format(emu.tf.__version__, emu.STATE.tf_api)
    emu.import_compat_packages()  # before the surfaces patch them (emu.install does it otherwise)
    if tf_api != NATIVE_TF_API:
        releases.install(tf_api)  # what the release shows user code (its version, optimizers), as under emulation
    return text


def settle_what_is_loaded():
    """Hand every object alive now to the collector's permanent generation (``gc.freeze``,
    Python >= 3.7): TensorFlow's modules, the runtime and what it installed, which live as long
    as the run does.  The collector then walks none of them again, during the run or at the
    interpreter's exit, where walking and freeing TensorFlow's 160,000 (TF 2.4.1) to 285,000
    (TF 2.21) objects took 0.4 to 1.0 CPU s: about what a small program's run costs.  The
    program's own objects are made after this and are collected and finalised as under
    ``python``.  A warm server calls it before it forks, so that no run writes to the pages
    of those objects for the collector's sake."""
    import gc
    freeze = getattr(gc, "freeze", None)
    if freeze is not None:
        freeze()


#: What to tell a user whose 2.x-era Keras code meets Keras 3 (TF >= 2.16 without tf-keras).
KERAS_3_NOTE = ("tf.keras is Keras 3 in this interpreter (TF >= 2.16 without tf-keras, or "
                "TF_USE_LEGACY_KERAS unset); code written for TF 2.1-2.4 is Keras 2 code, and some "
                "of it fails under Keras 3 (`You must feed a value for placeholder tensor` with "
                "steps_per_execution > 1, or a model built by its first call inside `run`): "
                "`pip install tf-keras` into this interpreter and run again (run then sets "
                "TF_USE_LEGACY_KERAS=1), or pick an interpreter with --python tf2.4")
# Keras 3's known failure on 2.x-era code under tf.distribute (an open Keras issue).
KERAS_3_FAILURE = "You must feed a value for placeholder tensor"

#: The script being run (for the note above); set by :func:`main`.
SCRIPT_PATH = None


def keras_3_in_use(tf_version, environ=None):
    """Whether ``tf.keras`` is Keras 3: TensorFlow >= 2.16 unless TF_USE_LEGACY_KERAS asks
    for tf-keras (which :func:`prepare_environment` does when tf-keras is installed)."""
    env = os.environ if environ is None else environ
    return tuple(tf_version[:2]) >= (2, 16) and env.get("TF_USE_LEGACY_KERAS", "").lower() not in ("1", "true")


def _mentions_keras(path):
    try:
        with io.open(path, "rb") as handle:
            return b"keras" in handle.read()
    except (OSError, TypeError):
        return False


def main(argv=None):
    parser = build_parser()
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    pod.watch_launcher()
    finish_line = pod.FinishLine.take()
    multi_client = bool(options.hosts) and pod.is_multi_client_worker()
    if multi_client:
        pod.whole_lines()
    if options.replicas is not None and options.replicas < 1:
        parser.error("--replicas must be >= 1")
    if options.hosts is not None and options.hosts < 1:
        parser.error("--hosts must be >= 1")
    if not os.path.exists(options.script):
        sys.stderr.write("migrate-tpu run: {}: no such file\n".format(options.script))
        return EXIT_USAGE
    emulate = not options.no_emulation and not real_tpu_reachable()
    global SHOW_EMULATION_FRAMES, SCRIPT_PATH
    SHOW_EMULATION_FRAMES = options.verbose
    SCRIPT_PATH = options.script
    try:
        setup(SetupOptions(options.replicas, options.tf_api, emulate, options.quiet, options.hosts,
                           options.tpu_env, options.verbose, options.gcs))
    except ValueError as error:
        sys.stderr.write("migrate-tpu run: {}\n".format(error))
        return EXIT_USAGE
    recording = recorder.from_environment()  # verify's record (MIGRATE_TPU_RECORD), else None
    watching = _watch_moved_calls(options)
    status = execute(options.script, options.args)
    for line in tpu_machine.end_lines() if emulate and not options.quiet else ():
        sys.stderr.write("migrate-tpu run: {}\n".format(line))
    if watching:
        _end_moved_calls(options, recording, multi_client)
    if recording is not None:
        recording.finish(status)  # before a pod's exit below, which skips the interpreter's teardown
    if status == 0 and multi_client and emulate:
        _end_pod_host(finish_line, pod_task(options.hosts))
    if options.hosts and emulate:
        _end_without_teardown(status)
    if recording is not None:
        # verify's run: all it reads is written (the record, its exit status, the output); the
        # interpreter's teardown after the exit functions is nobody's: 0.1-0.3 CPU s since
        # settle_what_is_loaded (0.8 s on TF 2.21 and 0.3 s on 2.1 and 2.4 before it)
        _wait_for_threads()
        _end_without_teardown(status)
    return status


def _wait_for_threads():
    """Wait for the program's non-daemon threads, as the interpreter does before its exit
    functions."""
    import threading
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()


def _watch_moved_calls(options):
    """Start the record of the moved APIs the run calls (unless MIGRATE_TPU_MOVED_CALLS=0), for
    the target verify names, else 2.4 (latest under the native API of a TensorFlow newer than
    2.4); the script's folder is the user's tree."""
    if not moved_calls.wanted():
        return False
    from migrate_tpu.runtime.tpu.tpu_system import STATE, tf_version
    native = options.tf_api == NATIVE_TF_API
    target = os.environ.get(TARGET_VARIABLE) or ("latest" if native and tf_version() > (2, 4) else "2.4")
    surface = NATIVE_TF_API if native else (options.tf_api or STATE.tf_api)
    try:
        moved_calls.install(surface, target, os.path.dirname(os.path.abspath(options.script)))
    except Exception as error:  # the run goes on without its record rather than not at all
        moved_calls.uninstall()
        sys.stderr.write("migrate-tpu run: no record of moved APIs: {}: {}\n".format(type(error).__name__, error))
        return False
    return True


def _end_moved_calls(options, recording, multi_client):
    """The record of moved APIs: into verify's record, the --api-record file, and a summary on
    stderr (not in verify's runs, whose report says it; one host of a cluster says it)."""
    data = moved_calls.as_json(python=envs.interpreter_name())
    if recording is not None:
        recording.moved_apis = data
    if options.api_record:
        moved_calls.write(options.api_record, data)
    if recording is None and not (multi_client and pod_task(options.hosts)):
        lines = moved_calls.summary(data, verbose=options.verbose)
        if lines:
            _flush()
            sys.stderr.write("\n".join(lines) + "\n")
            _flush()


def _end_without_teardown(status):
    """End an emulated pod's program once its exit functions ran, skipping the interpreter's
    teardown: TF 2.21 could hang there for ever with several hosts' input pipelines (seen
    at 4 hosts, after the script had finished and printed everything)."""
    import atexit
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_functions is not None:
        run_exit_functions()
    _flush()
    os._exit(status)


def _end_pod_host(finish_line, task):
    """End one worker of a multi-client cluster once the script is done: together with the others (the
    launcher's finish line), the first host last, and without TensorFlow's slow
    teardown, during which the coordination service would report the host as lost."""
    import atexit
    if finish_line is not None:
        finish_line.cross()
    if task == 0:
        pod.wait_until_closed(pod.tf_config_workers()[1:])
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_functions is not None:
        run_exit_functions()
    _flush()
    os._exit(0)
