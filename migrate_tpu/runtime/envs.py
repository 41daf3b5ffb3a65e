"""Where ``scripts/tf-envs`` keeps its TensorFlow interpreters (standard library only).

``${MIGRATE_TPU_ENVS:-~/.cache/migrate-tpu/envs}/<name>/bin/python`` for the
names below.  Used by the round-trip tests and handy for ``migrate-tpu run
--python``.
"""

import os

#: name -> (Python version, TensorFlow version)
ENVS = {
    "tf2.1": ("3.7", "2.1.0"),
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
