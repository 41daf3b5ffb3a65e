"""TPU semantics over real ``tf.distribute`` on logical CPU (or GPU) devices.

Call :func:`configure_devices` before TensorFlow creates its context, then
:func:`install`.  From then on the public TPU entry points resolve to the
classes of this module:

=====================================================  ==============================
``tf.distribute.cluster_resolver.TPUClusterResolver``  :class:`TPUClusterResolver`
``tf.config.experimental_connect_to_cluster``          no-op (records the resolver)
``tf.tpu.experimental.initialize_tpu_system``          returns a :class:`Topology`
``tf.tpu.experimental.shutdown_tpu_system``            no-op
``tf.tpu.experimental.DeviceAssignment`` / ``Topology``  :class:`DeviceAssignment`, :class:`Topology`
``tf.distribute.TPUStrategy`` (TF >= 2.3)              stable emulated strategy
``tf.distribute.experimental.TPUStrategy``             experimental emulated strategy
=====================================================  ==============================

Both strategies are real ``tf.distribute.MirroredStrategy`` objects, one replica
per logical device, so all-reduce, dataset splitting, ``InputContext``,
``reduce``, ``experimental_local_results``, ``gather`` and friends are
TensorFlow's own.  Where a TPU's rules differ from MirroredStrategy's they are
enforced here:

* ``run`` (and, for TF 2.1, ``experimental_run_v2``) refuses a plain Python
  function when executing eagerly, with the exact condition and message of the
  TF version whose API is emulated;
* the logical-device helpers validate their arguments against the device
  assignment (same ``ValueError`` cases and messages as TPUStrategy) and exist
  on the stable class, and on the experimental one under the TF 2.2 and 2.3 APIs
  (whose strategies all had them), as on a real TPU;
* constructor keywords are per class (``experimental_device_assignment`` for
  the stable class, ``device_assignment`` for the experimental one);
* the topology is 3-D (x, y, core) under the TF 2.1 and 2.2 APIs and 4-D
  (x, y, z, core) from TF 2.3 on, and ``DeviceAssignment.build`` checks the
  rank of ``computation_shape``/``computation_stride`` against it;
* a value all-reduced inside the step (a replica's merge call: ``all_reduce``,
  ``apply_gradients``) of a dtype the release's ``CrossReplicaSum`` does not take
  (float64, int64, ...) raises that op's ``TypeError``, and ``initialize_tpu_system``
  and the strategies refuse a core count no TPU has
  (:mod:`migrate_tpu.runtime.tpu.tpu_rules`).

Whichever API is emulated, :mod:`migrate_tpu.runtime.surfaces.releases` shows the user's code
that release's version, Keras optimizers and mixed-precision API.

The emulated machine is a single TPU host with ``replicas`` cores (8: a v3-8),
laid out as 2 cores per chip, or a pod of ``hosts`` such hosts
(:func:`configure_pod`) in this one process, as a pod's one client sees it: the
strategy's input workers are the hosts, so a dataset function runs once per host
and host k's pipeline feeds its own cores.  Strategy classes carry TensorFlow's own names
(``TPUStrategy``, ``TPUStrategyV2``, ``TPUStrategyV1``): Keras decides by that
name how a TPU combines per-replica logs and creates metric variables.
"""

from __future__ import absolute_import, division, print_function

import importlib
import inspect
import sys
from typing import cast

import tensorflow as tf

from migrate_tpu.runtime import NATIVE_TF_API
from migrate_tpu.runtime.tpu import bfloat16_kernels, tpu_machine, tpu_machine_io, tpu_contexts, tpu_worker_input
from migrate_tpu.runtime.surfaces import api_paths, releases
from migrate_tpu.runtime.tpu.resolver import (TPUClusterResolver, experimental_connect_to_cluster,
                                          experimental_connect_to_host, initialize_tpu_system, refuse_sessions_to_the_tpu,
                                          shutdown_tpu_system)
from migrate_tpu.runtime.tpu.strategies import (LOGICAL_DEVICE_HELPERS, _EmulatedTPU, _StableTPUStrategy,
                                            _strategy_experimental_run_v2, _strategy_experimental_run_v2_of_2_2,
                                            _strategy_run, strategy_classes, TPUStrategyV1)
from migrate_tpu.runtime.tpu.topology import DeviceAssignment, Topology
from migrate_tpu.runtime.tpu.tpu_extended import mirrored_replica_context_class, relay_refusals
from migrate_tpu.runtime.tpu.tpu_rules import check_core_count, keras_loss_scaling_patches
from migrate_tpu.runtime import patches
from migrate_tpu.runtime.tpu.tpu_system import (STATE, api_modules, api_version, configure_devices, configure_pod,
                                            cores_per_host, default_tf_api, implementation_module, local_devices, tf_version)

# What other modules and programs reach through this entry point.
__all__ = ["STATE", "api_version", "configure_devices", "configure_pod", "cores_per_host", "default_tf_api",
           "describe", "install", "local_devices", "tf_version", "uninstall"]



# --------------------------------------------------------------------------
# Installing the emulation into the tf namespace
# --------------------------------------------------------------------------


def _tpu_names_of_logical_devices(original):
    def list_logical_devices(device_type=None):
        if device_type is not None and device_type.upper() == "TPU":
            make = getattr(tf.config, "LogicalDevice", None)
            per_host = cast(int, STATE.replicas) // STATE.hosts  # set: install() has run
            names = ["/job:worker/replica:0/task:{}/device:TPU:{}".format(t, i)
                     for t in range(STATE.hosts) for i in range(per_host)]
            if make is None:
                return names
            return [make(name=n, device_type="TPU") for n in names]
        return original(device_type) if device_type is not None else original()
    list_logical_devices.__doc__ = original.__doc__
    return list_logical_devices


def _single_worker_on_this_hosts_devices(original):
    """``CollectiveAllReduceExtended._initialize_local`` giving a single-worker
    ``MultiWorkerMirroredStrategy`` this host's emulated devices, as ``MirroredStrategy()``
    gets them.  TensorFlow gives a worker without GPUs its CPU alone, one replica, where a
    reduction's SUM and MEAN agree; a worker with N accelerators gets N replicas, and the
    emulated host's devices are its accelerators.  Explicit devices are kept."""
    def initialize_local(self, cluster_resolver, devices=None):
        if not devices:
            devices = tuple(local_devices()[:cores_per_host()])
        return original(self, cluster_resolver, devices=devices)
    initialize_local.__doc__ = original.__doc__
    return initialize_local


def _on_a_tpu_machine(initialize):
    """``initialize_tpu_system`` that first says so where no TPU has the emulated core count
    (``--replicas 3``): where a TPU program first meets the machine."""
    def initialize_tpu_system(*args, **kwargs):
        check_core_count(cast(int, STATE.replicas), STATE.hosts)
        return initialize(*args, **kwargs)
    initialize_tpu_system.__doc__ = initialize.__doc__
    return initialize_tpu_system


def _collective_extended():
    """TensorFlow's ``CollectiveAllReduceExtended`` class, or None where it cannot be found."""
    try:
        from tensorflow.python.distribute import collective_all_reduce_strategy
    except ImportError:
        return None
    extended = getattr(collective_all_reduce_strategy, "CollectiveAllReduceExtended", None)
    if extended is None or "_initialize_local" not in extended.__dict__:
        return None
    return extended


def _patch(module, name, value, only_if_present=True):
    if module is None:
        return
    if isinstance(module, type):
        current = module.__dict__.get(name, patches.MISSING)
        if current is patches.MISSING and only_if_present and not hasattr(module, name):
            return
    else:
        current = getattr(module, name, patches.MISSING)
        if current is patches.MISSING and only_if_present:
            return
    patches.patch("emulation", module, name, value)


def import_compat_packages():
    """``import tensorflow.compat.v2 as tf`` (or ``v1``: the TF 2.1-era TPU examples do) makes
    module objects of its own, and binds ``tf.compat.v2`` to them, after which a script sees
    TensorFlow's own ``initialize_tpu_system`` there.  Imported before anything is patched,
    they are the ones patched."""
    for name in ("tensorflow.compat.v2", "tensorflow.compat.v1"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def _release_emulated(tf_api):
    """(the release ``tf_api`` emulates, whether it is the interpreter's own: ``native``, which
    installs no surface), or ValueError for an unknown one."""
    if tf_api is None:
        return default_tf_api(), False
    if tf_api == NATIVE_TF_API:
        return releases.native_release(), True
    if tf_api not in releases.RELEASES:
        raise ValueError("tf_api must be one of {}; got {!r}".format(
            ", ".join(repr(r) for r in sorted(releases.RELEASES) + [NATIVE_TF_API]), tf_api))
    return tf_api, False


def _patch_entry_points():
    """The TPU system's entry points (resolver, connect, initialize, topology) as the emulated
    machine's, wherever the program can reach them."""
    for mod in api_modules("distribute.cluster_resolver"):
        _patch(mod, "TPUClusterResolver", TPUClusterResolver)
    for mod in api_modules("config"):
        _patch(mod, "experimental_connect_to_cluster", experimental_connect_to_cluster)
        _patch(mod, "experimental_connect_to_host", experimental_connect_to_host)
        _patch(mod, "list_logical_devices", _tpu_names_of_logical_devices(mod.list_logical_devices)
               if hasattr(mod, "list_logical_devices") else None)
    # the implementation's own names too (`from tensorflow.python.eager import remote`): a run
    # never dials the TPU address the emulated machine announces
    remote = implementation_module("eager.remote")
    _patch(remote, "connect_to_cluster", experimental_connect_to_cluster)
    _patch(remote, "connect_to_remote_host", experimental_connect_to_host)
    session = getattr(implementation_module("client.session"), "BaseSession", None)
    if session is not None:  # TPUEstimator's session would dial the announced TPU and wait
        _patch(session, "__init__", refuse_sessions_to_the_tpu(session.__dict__["__init__"]))
    for mod in api_modules("config.experimental"):
        if hasattr(mod, "list_logical_devices"):
            _patch(mod, "list_logical_devices", _tpu_names_of_logical_devices(mod.list_logical_devices))
    for mod in api_modules("tpu"):  # tf.compat.v1.tpu (TF 2 exports it there only)
        if getattr(mod, "outside_compilation", None) is not None:
            _patch(mod, "outside_compilation", tpu_contexts.outside_compilation(mod.outside_compilation))
    for mod in api_modules("tpu.experimental"):
        _patch(mod, "initialize_tpu_system", _on_a_tpu_machine(initialize_tpu_system))
        _patch(mod, "shutdown_tpu_system", shutdown_tpu_system)
        _patch(mod, "DeviceAssignment", DeviceAssignment)
        _patch(mod, "Topology", Topology)


def install(replicas=None, tf_api=None):
    """Switch the emulation on.  Idempotent; ``configure_devices`` runs if it has not."""
    if STATE.installed:
        return STATE
    import_compat_packages()
    tf_api, native = _release_emulated(tf_api)
    if api_version(tf_api) > tf_version():
        raise ValueError("--tf-api {} needs TensorFlow >= {}; this is TensorFlow {}".format(
            tf_api, tf_api, tf.__version__))
    if STATE.replicas is None:
        configure_devices(replicas or 8)
    STATE.tf_api = tf_api
    _take_the_stable_class_keywords()
    _patch_entry_points()
    experimental, stable = _install_strategies(tf_api)
    collective = _collective_extended()
    if collective is not None:
        _patch(collective, "_initialize_local", _single_worker_on_this_hosts_devices(collective.__dict__["_initialize_local"]))
    replica_context = mirrored_replica_context_class()
    if replica_context is not None:
        # an emulated TPU's replicas all-reduce with the TPU's dtypes (tpu_extended); others are untouched
        _patch(replica_context, "_merge_call", relay_refusals(replica_context.__dict__["_merge_call"]))
    # what else user code sees of the release: its version, Keras optimizers, mixed precision
    if not native:
        releases.install(tf_api)
    # Keras's own refusal of loss scaling with TPUStrategy (the release's Keras, once loaded)
    for module, name, value in keras_loss_scaling_patches((experimental, stable, TPUStrategyV1), tf_api):
        _patch(module, name, value)
    # the machine: where files and the input pipeline are (a TPU Node's worker, or a TPU VM)
    tpu_machine_io.install()
    # what a TPU computed in bfloat16 and this CPU has no kernel for (TF 2.4.1)
    tpu_machine_io.rebind_everywhere(bfloat16_kernels.replacements(tf_version()))
    tpu_worker_input.install(_EmulatedTPU)
    # `from tensorflow.config import ...` reaches the modules patched above
    api_paths.install()
    STATE.installed = True
    return STATE


def _take_the_stable_class_keywords():
    """The keywords the interpreter's own ``tf.distribute.TPUStrategy`` takes beyond the two the
    emulated class has: the emulated class takes them too."""
    real_stable = getattr(tf.distribute, "TPUStrategy", None)
    if real_stable is None:
        return
    try:
        params = inspect.signature(real_stable.__init__).parameters
    except (TypeError, ValueError):
        return
    _StableTPUStrategy._extra_kwargs = tuple(
        p for p in params if p not in ("self", "tpu_cluster_resolver", "experimental_device_assignment"))


def _install_strategies(tf_api):
    """The emulated TPUStrategy classes where the program finds TensorFlow's, with the methods of
    the emulated release (methods exist only where that release had them); returns the
    (experimental, stable) classes."""
    base = tf.distribute.MirroredStrategy
    if hasattr(base, "run"):
        _patch(_EmulatedTPU, "run", _strategy_run, only_if_present=False)
    if tf_api == "2.1":
        _patch(_EmulatedTPU, "experimental_run_v2", _strategy_experimental_run_v2,
               only_if_present=False)
    elif tf_api in ("2.2", "2.3") and not hasattr(base, "experimental_run_v2"):
        _patch(_EmulatedTPU, "experimental_run_v2", _strategy_experimental_run_v2_of_2_2,
               only_if_present=False)
    experimental, stable = strategy_classes()
    if tf_api in ("2.2", "2.3"):
        # TF 2.2 and 2.3 had the model-parallelism helpers on every strategy (TF 2.4 kept them on
        # tf.distribute.TPUStrategy alone): the experimental class checks arguments as TPUs do
        for name in LOGICAL_DEVICE_HELPERS:
            _patch(experimental, name, _StableTPUStrategy.__dict__[name], only_if_present=False)
    for mod in api_modules("distribute.experimental", v1=False):
        _patch(mod, "TPUStrategy", experimental)
    for mod in api_modules("distribute", v1=False):
        if getattr(mod, "TPUStrategy", None) is not None:
            _patch(mod, "TPUStrategy", stable)
    _patch(getattr(getattr(getattr(tf.compat, "v1", None), "distribute", None), "experimental", None),
           "TPUStrategy", TPUStrategyV1)
    return experimental, stable


def uninstall():
    """Put back what :func:`install` replaced (the logical devices stay)."""
    # what install patched, itself and through the parts it installs (which wrap each other's
    # patches: tpu_machine_io's connect wraps the emulated one), newest first; the compile step's
    # first-copy readers of variables too
    patches.undo("emulation", "releases", "tpu_machine_io", "tpu_worker_input", "api_paths", "tpu_replicate")
    api_paths.uninstall()
    tpu_worker_input.uninstall()
    tpu_machine_io.uninstall()
    releases.uninstall()
    STATE.installed = False
    STATE.topology = None


def describe():
    """One line about the emulated system, for the runner's banner."""
    if STATE.hosts > 1:
        text = ("TPU emulation: a {}-host pod, {} replicas ({} per host) on {} logical {} "
                "devices in this one process, TF {} with the TF {} API".format(
                    STATE.hosts, STATE.replicas, cores_per_host(), STATE.replicas,
                    STATE.device_type, tf.__version__, STATE.tf_api))
    else:
        text = "TPU emulation: {} replicas on {} logical {} devices, TF {} with the TF {} API".format(
            STATE.replicas, STATE.replicas, STATE.device_type, tf.__version__, STATE.tf_api)
    return "{}; the machine: {}".format(text, tpu_machine.describe())


if sys.version_info < (3, 7):  # pragma: no cover
    raise ImportError("migrate_tpu.runtime needs Python 3.7 or newer")
