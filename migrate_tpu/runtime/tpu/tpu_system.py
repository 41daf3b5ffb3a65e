"""The emulated TPU system's state: TensorFlow's version, the TF API emulated, the
messages a TPU gives, and the logical devices that play the TPU cores of one host or of
every host of a pod (all in this process).

Nothing here patches TensorFlow; :mod:`migrate_tpu.runtime.surfaces.emulation` does.
"""

from __future__ import absolute_import, division, print_function

import os
from typing import Any, List, Optional, cast

import tensorflow as tf

from migrate_tpu.runtime.tpu import tpu_machine


# --------------------------------------------------------------------------
# Versions and messages
# --------------------------------------------------------------------------


def tf_version():
    """The running TensorFlow's (major, minor) version."""
    parts = tf.__version__.split(".")
    return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)


def default_tf_api():
    """The surface of the running TensorFlow's own release: ``'2.1'`` on TF 2.0/2.1,
    ``'2.2'`` and ``'2.3'`` on TF 2.2 and 2.3, ``'2.4'`` on anything newer."""
    version = tf_version()
    if version < (2, 2):
        return "2.1"
    if version < (2, 4):
        return "{}.{}".format(*version)
    return "2.4"


def api_version(tf_api=None):
    """The (major, minor) release of surface ``tf_api`` (default: the one emulated), e.g.
    ``(2, 2)``; the mixed surface ``'2.1+2.4'`` is 2.4's.  ``(2, 4)`` when none is set."""
    tf_api = STATE.tf_api if tf_api is None else tf_api
    if not tf_api:
        return (2, 4)
    major, minor = str(tf_api).split("+")[-1].split(".")[:2]
    return int(major), int(minor)


#: What TPUStrategy.experimental_run_v2 said in TF 2.1.0 about an eager plain function.
EAGER_RUN_MESSAGE_2_1 = (
    "TPUStrategy.experimental_run_v2(fn, ...) does not support eager "
    "execution. Either convert `fn` into a tf.function or consider "
    "calling strategy.experimental_run_v2 inside a tf.function.")

#: What TPUStrategy.run says from TF 2.2 on (2.2.3, 2.3.4, 2.4.1, 2.21), and so
#: ``experimental_run_v2`` in TF 2.2 and 2.3, where it is ``run``'s deprecated alias.
EAGER_RUN_MESSAGE_2_4 = (
    "TPUStrategy.run(fn, ...) does not support pure eager "
    "execution. please make sure the function passed into "
    "`strategy.run` is a `tf.function` or "
    "`strategy.run` is called inside a `tf.function` if "
    "eager behavior is enabled.")

#: What ``experimental_assign_to_logical_device`` & co. of a strategy without model
#: parallelism (``MirroredStrategy``) raised in TF 2.2 and 2.3 (``NotImplementedError``).
NO_MODEL_PARALLELISM_MESSAGE = ("This method should be overriden by sub-classes which support "
                                "model parallelism.")

#: What constructing ``tf.distribute.experimental.TPUStrategy`` logs from TF 2.3 on.
EXPERIMENTAL_DEPRECATION = (
    "`tf.distribute.experimental.TPUStrategy` is deprecated, please use "
    " the non experimental symbol `tf.distribute.TPUStrategy` instead.")


# --------------------------------------------------------------------------
# State of the emulated TPU system
# --------------------------------------------------------------------------


class _State(object):
    def __init__(self):
        self.installed = False
        self.replicas: Optional[int] = None  # emulated cores in all (every host, all in this process)
        self.hosts = 1             # TPU hosts of the emulated pod (input pipelines)
        self.tf_api = None
        self.devices = []          # logical device names, one per emulated TPU core
        self.device_type = "CPU"
        self.topology = None       # set by initialize_tpu_system
        self.connected = None      # resolver given to experimental_connect_to_cluster
        self.shared_gpu = False    # logical GPUs split from one physical GPU

    @property
    def machine(self):
        """The machine the TPU is attached to, ``"node"`` (a TPU Node of 2020: the default) or
        ``"vm"`` (a TPU VM): :func:`migrate_tpu.runtime.tpu.tpu_machine.select` chooses it."""
        return tpu_machine.SELECTED.machine.kind


STATE = _State()


def _list_physical(kind):
    if hasattr(tf.config, "list_physical_devices"):
        return tf.config.list_physical_devices(kind)
    return tf.config.experimental.list_physical_devices(kind)


def _list_logical(kind):
    if hasattr(tf.config, "list_logical_devices"):
        return tf.config.list_logical_devices(kind)
    return tf.config.experimental.list_logical_devices(kind)


def _split_device(physical, count, memory_limit=None):
    if hasattr(tf.config, "set_logical_device_configuration"):
        make = tf.config.LogicalDeviceConfiguration
        setter = tf.config.set_logical_device_configuration
    else:  # TF 2.1 spelling
        make = tf.config.experimental.VirtualDeviceConfiguration
        setter = tf.config.experimental.set_virtual_device_configuration
    if memory_limit is None:
        configs = [make() for _ in range(count)]
    else:
        configs = [make(memory_limit=memory_limit) for _ in range(count)]
    setter(physical, configs)


def configure_devices(replicas):
    """Split the machine into ``replicas`` logical devices (this host's emulated cores).

    Must run before TensorFlow initialises its context (before the first op),
    and leaves the context uninitialised: a script may still configure
    collective ops (``MultiWorkerMirroredStrategy``) afterwards.  The devices'
    names are looked up when first needed (:func:`local_devices`).  GPUs are
    used when there are at least ``replicas`` of them, or when each can be split
    evenly (``MIGRATE_TPU_GPU_MEMORY_MB`` per logical GPU, default 1024);
    ``MIGRATE_TPU_DEVICE=cpu`` forces CPUs.
    """
    replicas = int(replicas)
    if replicas < 1:
        raise ValueError("replicas must be >= 1; got {}".format(replicas))
    kind = "CPU"
    gpus = [] if os.environ.get("MIGRATE_TPU_DEVICE", "").lower() == "cpu" else _list_physical("GPU")
    try:
        if gpus and len(gpus) >= replicas:
            kind = "GPU"
        elif gpus and replicas % len(gpus) == 0:
            limit = int(os.environ.get("MIGRATE_TPU_GPU_MEMORY_MB", "1024"))
            for gpu in gpus:
                _split_device(gpu, replicas // len(gpus), memory_limit=limit)
            kind = "GPU"
            STATE.shared_gpu = True  # NCCL cannot all-reduce between logical GPUs of one GPU
        else:
            cpus = _list_physical("CPU")
            _split_device(cpus[0], replicas)
    except RuntimeError:
        # The context already exists; use what is there if it is enough.
        pass
    STATE.devices = []
    STATE.device_type = kind
    STATE.replicas = replicas


def local_devices():
    """Names of the emulated cores, every host's (initialises TensorFlow's context)."""
    if not STATE.devices:
        wanted = cast(int, STATE.replicas)  # set: configure_devices() has run (install() runs it)
        names = [d.name for d in _list_logical(STATE.device_type)]
        if len(names) < wanted:
            raise RuntimeError(
                "migrate_tpu.runtime: {} logical {} devices are needed but TensorFlow was "
                "already initialised with {}; configure the emulation before running any "
                "TensorFlow op".format(wanted, STATE.device_type, len(names)))
        STATE.devices = names[:wanted]
    return list(STATE.devices)


def configure_pod(hosts, replicas):
    """Make the emulated TPU a pod of ``hosts`` hosts with ``replicas`` cores in all, in
    this one process, as a pod's client sees it: one program, whose dataset functions
    run once per host (``input_pipeline_id`` 0..hosts-1), host k feeding cores
    ``k*replicas/hosts .. (k+1)*replicas/hosts - 1``.  Call before
    :func:`configure_devices` (with all ``replicas``)."""
    hosts, replicas = int(hosts), int(replicas)
    if hosts < 1:
        raise ValueError("a pod needs at least one host; got {}".format(hosts))
    if replicas % hosts:
        raise ValueError("{} replicas cannot be spread evenly over {} hosts".format(replicas, hosts))
    STATE.hosts = hosts
    STATE.replicas = replicas


def cores_per_host():
    return cast(int, STATE.replicas) // STATE.hosts  # set: asked once the devices or the pod are configured


def api_modules(path, v1=True):
    """The module objects reachable as ``tf.<path>``, ``tf.compat.v2.<path>`` and
    (with ``v1``) ``tf.compat.v1.<path>``."""
    found: List[Any] = []
    compat = getattr(tf, "compat", None)
    roots = [tf, getattr(compat, "v2", None)] + ([getattr(compat, "v1", None)] if v1 else [])
    for root in roots:
        obj = root
        for part in path.split(".") if path else []:
            obj = getattr(obj, part, None) if obj is not None else None
        if obj is not None and all(obj is not f for f in found):
            found.append(obj)
    return found


def implementation_module(name):
    """TensorFlow's module ``tensorflow.python.<name>`` (``tensorflow_core.python`` in TF 2.1.0's
    wheel), imported if it is not yet, or None where the release has none."""
    import sys
    for prefix in ("tensorflow.python.", "tensorflow_core.python."):
        module = sys.modules.get(prefix + name)
        if module is not None:
            return module
    try:
        return __import__("tensorflow.python." + name, fromlist=["_"])
    except ImportError:
        return None
