"""The TensorFlow interpreters that ``migrate-tpu envs`` builds, and where (standard library only).

``${MIGRATE_TPU_ENVS:-~/.cache/migrate-tpu/envs}/<name>/bin/python`` for the
names below.  Used by the round-trip tests and handy for ``migrate-tpu run
--python``.  The builder is the shell script beside this module, shipped in
the wheel (the source tree's ``scripts/tf-envs`` calls it too).
"""

import os
import subprocess

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
