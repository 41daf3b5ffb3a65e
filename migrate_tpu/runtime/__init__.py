"""TPU semantics on ordinary devices, for executing code before and after migration.

``migrate_tpu.runtime`` lets a TensorFlow TPU program run on a laptop or a CI
machine.  It is built on TensorFlow's own ``tf.distribute`` machinery: a real
``MirroredStrategy`` over N logical CPU devices (or GPUs) stands in for the TPU,
and the parts where a TPU behaves differently are added on top.  Its folders are its
layers, bottom first; a module imports its own folder or one below, never one above
(``tests/test_walls.py``, ``RUNTIME_LAYERS``; docs/architecture.md has the table):

* ``program/`` -- whose code a frame runs and what a line of it calls;
* ``tpu/`` -- the emulated TPU (system calls, topology, resolver, the ``TPUStrategy``
  classes, the compile step and its rules) and the machine it is attached to (a TPU
  Node of 2020 or a TPU VM, ``--tpu-env``; gs:// as a folder, ``--gcs``);
* ``surfaces/`` -- what the program sees of TensorFlow: the emulation installed, the
  release's surface, the TF 2.1, 2.2 and 2.3 surfaces, the record of moved APIs;
* ``record/`` -- what ``verify`` records of a run, its seeds and its power;
* ``process/`` -- the runner, the launcher, warm interpreters, pods, the interpreters.

This package module and ``process/launch`` import neither TensorFlow nor anything
outside the standard library, and everything here keeps Python 3.7 syntax, so
the runtime can be loaded into a bare TF 2.1 / Python 3.7 environment.
"""

import os

#: The runtime's own folder (its wings below it): frames of code there are the emulation's, never
#: the user's, and the package's ``__main__`` is in it.
RUNTIME_FOLDER = os.path.dirname(os.path.abspath(__file__))

#: Replicas of the emulated TPU when nothing else is asked for: a v3-8.
DEFAULT_REPLICAS = 8

#: Both surfaces' names at once, for partly migrated code (what verify's blame runs): the 2.4
#: surface, with the TF 2.1 names a newer TensorFlow lacks added and none hidden.
MIXED_TF_API = "2.1+2.4"

#: The API surfaces, oldest first: each is the release it names (TF 2.1.0, 2.2.3, 2.3.4, 2.4.1),
#: whatever interpreter runs it (``releases.RELEASES``; ``legacy.SURFACES`` for the older ones).
TF_APIS = ("2.1", "2.2", "2.3", "2.4")

#: The interpreter's own API, as it is, for the program and every package it imports alike: no
#: release's names restored, none hidden (``--tf-api native``: what ``-march=native`` is to a
#: compiler, the machine it runs on).  On TF 2.1 to 2.4 it is that release's surface.
NATIVE_TF_API = "native"

#: Values accepted by ``--tf-api``.
TF_API_CHOICES = TF_APIS + (MIXED_TF_API, NATIVE_TF_API)

#: The migration's target (``2.4`` or ``latest``) whose moves the run-time record of moved APIs
#: watches for (``moved_calls``); verify sets it to its ``--target``.
TARGET_VARIABLE = "MIGRATE_TPU_TARGET"

#: Environment variables through which TensorFlow finds a real (Cloud) TPU.
TPU_ENV_VARS = ("TPU_NAME", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS")



def real_tpu_reachable(environ=None):
    """Whether a real TPU is announced in the environment (then nothing is emulated)."""
    env = os.environ if environ is None else environ
    return any(env.get(name) for name in TPU_ENV_VARS)


__all__ = ["DEFAULT_REPLICAS", "MIXED_TF_API", "NATIVE_TF_API", "RUNTIME_FOLDER", "TARGET_VARIABLE", "TF_APIS",
           "TF_API_CHOICES", "TPU_ENV_VARS", "real_tpu_reachable"]
