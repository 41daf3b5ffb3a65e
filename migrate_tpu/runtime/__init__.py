"""TPU semantics on ordinary devices, for executing code before and after migration.

``migrate_tpu.runtime`` lets a TensorFlow TPU program run on a laptop or a CI
machine.  It is built on TensorFlow's own ``tf.distribute`` machinery: a real
``MirroredStrategy`` over N logical CPU devices (or GPUs) stands in for the TPU,
and the parts where a TPU behaves differently are added on top:

* the emulated TPU, in modules that each import only those listed before them:
  :mod:`~migrate_tpu.runtime.tpu_system` (versions, messages, the logical devices
  that play the cores of one host or of a pod's H hosts),
  :mod:`~migrate_tpu.runtime.topology` (``Topology``, ``DeviceAssignment``),
  :mod:`~migrate_tpu.runtime.resolver` (``TPUClusterResolver``,
  ``initialize_tpu_system``), :mod:`~migrate_tpu.runtime.strategies` (the
  ``TPUStrategy`` classes: TPU's eager-``run`` rule, logical-device argument
  checks, one input worker per host) and :mod:`~migrate_tpu.runtime.emulation`
  (``install``: puts them in the ``tf`` namespace);
* the machine the TPU is attached to: :mod:`~migrate_tpu.runtime.tpu_machine` (a TPU Node
  of 2020 or a TPU VM, ``--tpu-env``; gs:// as a folder, ``--gcs``; standard library only),
  :mod:`~migrate_tpu.runtime.tpu_machine_io` (TensorFlow's file entry points on it) and
  :mod:`~migrate_tpu.runtime.tpu_worker_input` (the input pipeline a TPUStrategy distributes);
* :mod:`migrate_tpu.runtime.legacy` -- the TF 2.1, 2.2 and 2.3 API surfaces
  (``experimental_run_v2``, ``experimental_make_numpy_dataset``, ...) on a
  newer TensorFlow, so code written before the migration can execute;
* :mod:`migrate_tpu.runtime.runner` -- runs a script or notebook under both;
* :mod:`migrate_tpu.runtime.launch` -- starts the runner in any interpreter;
* :mod:`migrate_tpu.runtime.pod` -- starts and supervises the worker processes of
  a script that builds ``MultiWorkerMirroredStrategy`` itself (``--hosts``; a TPU
  pod is one process).

This package module and ``launch`` import neither TensorFlow nor anything
outside the standard library, and everything here keeps Python 3.7 syntax, so
the runtime can be loaded into a bare TF 2.1 / Python 3.7 environment.
"""

import os

from migrate_tpu.runtime import tpu_machine

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


#: The machines an emulated TPU can be attached to (``--tpu-env``), as the environment
#: variables they announce it by (:mod:`~migrate_tpu.runtime.tpu_machine` has each machine:
#: a TPU Node of 2020 or a TPU VM).  TensorFlow >= 2.2 resolves ``TPUClusterResolver()``
#: and ``TPUClusterResolver(tpu='')`` through ``TPU_NAME``; without it they raise
#: ``ValueError: Please provide a TPU Name to connect to.`` (TF 2.1: ``tpu=''`` is the
#: local TPU, ``None`` is looked up like this).
TPU_ENVIRONMENTS = {name: dict(machine.announced) for name, machine in tpu_machine.MACHINES.items()}
DEFAULT_TPU_ENVIRONMENT = tpu_machine.DEFAULT_MACHINE
TPU_ENVIRONMENT_VARIABLE = tpu_machine.MACHINE_VARIABLE


def real_tpu_reachable(environ=None):
    """Whether a real TPU is announced in the environment (then nothing is emulated)."""
    env = os.environ if environ is None else environ
    return any(env.get(name) for name in TPU_ENV_VARS)


__all__ = ["DEFAULT_REPLICAS", "DEFAULT_TPU_ENVIRONMENT", "MIXED_TF_API", "NATIVE_TF_API", "TARGET_VARIABLE", "TF_APIS",
           "TF_API_CHOICES", "TPU_ENVIRONMENTS", "TPU_ENVIRONMENT_VARIABLE", "TPU_ENV_VARS", "real_tpu_reachable"]
