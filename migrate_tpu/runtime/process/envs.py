"""The TensorFlow interpreters that ``migrate-tpu envs`` builds, and where (standard library only).

``${MIGRATE_TPU_ENVS:-~/.cache/migrate-tpu/envs}/<name>/bin/python`` for the
names below.  Used by the round-trip tests and handy for ``migrate-tpu run
--python``.  The builder is the shell script beside this module, shipped in
the wheel (the source tree's ``scripts/tf-envs`` calls it too).
"""

import os
import subprocess
import sys
from typing import List, Tuple

#: name -> (Python version, TensorFlow version)
ENVS = {
    "tf2.1": ("3.7", "2.1.0"),
    "tf2.2": ("3.8", "2.2.3"),
    "tf2.3": ("3.8", "2.3.4"),
    "tf2.4": ("3.8", "2.4.1"),
    "tf2.21": ("3.11", "2.21.0"),
}


def envs_dir(environ=None):
    env = os.environ if environ is None else environ
    return env.get("MIGRATE_TPU_ENVS") or os.path.join(
        os.path.expanduser("~"), ".cache", "migrate-tpu", "envs")


def interpreter(name, environ=None):
    """Path of the env's python if the env exists and is complete, else ``None``."""
    folder = os.path.join(envs_dir(environ), name)
    python = os.path.join(folder, "bin", "python")
    if os.path.isfile(os.path.join(folder, ".migrate-tpu-stamp")) and os.access(python, os.X_OK):
        return python
    return None


#: The command that builds an env, as a pip user can type it.
BUILD_COMMAND = "migrate-tpu envs"


def builder_script():
    """Path of the shell script that builds the envs."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "tf-envs.sh")


def build(arguments):
    """Run the builder with ``arguments`` (``--check``, env names); its exit status."""
    environ = dict(os.environ, MIGRATE_TPU_ENVS_COMMAND=BUILD_COMMAND)
    return subprocess.call(["bash", builder_script()] + list(arguments), env=environ)


def unknown_interpreter_message(python):
    """What to say when ``--python`` names neither an interpreter nor an env."""
    return ("--python {!r}: no such interpreter; give the path of a Python that has TensorFlow, "
            "or an env name: {} (build one with `{} NAME`)".format(
                python, ", ".join(sorted(ENVS, key=_version_key)), BUILD_COMMAND))


def _version_key(name):
    return tuple(int(part) for part in name[2:].split("."))


# What the interpreter is asked: its folders of installed distributions, in sys.path order
# (written for every Python 3 the envs have, 3.7 included).
_ASK_FOLDERS = r"""
import json, os, site, sys, sysconfig
paths = sysconfig.get_paths()
found = [paths.get("purelib"), paths.get("platlib")]
found += list(getattr(site, "getsitepackages", lambda: [])())
if getattr(site, "ENABLE_USER_SITE", False) and hasattr(site, "getusersitepackages"):
    found.append(site.getusersitepackages())
real = [os.path.realpath(p) for p in sys.path if p]
found = [os.path.realpath(p) for p in found if p and os.path.isdir(p)]
found.sort(key=lambda p: real.index(p) if p in real else len(real))
print(json.dumps({"executable": sys.executable, "version": "%d.%d.%d" % sys.version_info[:3], "folders": found}))
"""


def installation_folders(python: str, timeout: float = 60.0) -> Tuple[str, Tuple[str, ...]]:
    """``(version, folders)`` of the distributions ``python`` has installed, in its ``sys.path``
    order (this process' ``PYTHONPATH``/``PYTHONHOME`` left out: they are not the interpreter's
    own).  Raises ``ValueError`` with a one-line reason."""
    import json
    environ = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    try:
        done = subprocess.run([python, "-c", _ASK_FOLDERS], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                              env=environ, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as error:
        raise ValueError("cannot run {}: {}".format(python, error))
    if done.returncode != 0:
        last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["exit status {}".format(done.returncode)])[-1]
        raise ValueError("{} could not say where its packages are: {}".format(python, last))
    try:
        answer = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise ValueError("{} gave no answer as to where its packages are (is it a Python 3 interpreter?)".format(python))
    folders: List[str] = []
    for folder in answer.get("folders", []):
        if folder not in folders:
            folders.append(folder)
    return str(answer.get("version", "")), tuple(folders)


def interpreter_name():
    """How ``--python`` names this interpreter: an env's name of ``migrate-tpu envs``, else its path."""
    return next((name for name in ENVS if os.path.join(envs_dir(), name, "bin", "python") == sys.executable), sys.executable)
