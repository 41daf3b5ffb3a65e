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
  only on the stable class of TF >= 2.4, as on a real TPU;
* constructor keywords are per class (``experimental_device_assignment`` for
  the stable class, ``device_assignment`` for the experimental one);
* the topology is 3-D (x, y, core) under the TF 2.1 API and 4-D
  (x, y, z, core) from TF 2.3 on, and ``DeviceAssignment.build`` checks the
  rank of ``computation_shape``/``computation_stride`` against it.

The emulated machine is a single TPU host with ``replicas`` cores (8: a v3-8),
laid out as 2 cores per chip, or a pod of ``hosts`` such hosts
(:func:`configure_pod`) in this one process, as a pod's one client sees it: the
strategy's input workers are the hosts, so a dataset function runs once per host
and host k's pipeline feeds its own cores.  Strategy classes carry TensorFlow's own names
(``TPUStrategy``, ``TPUStrategyV2``, ``TPUStrategyV1``): Keras decides by that
name how a TPU combines per-replica logs and creates metric variables.
"""

from __future__ import absolute_import, division, print_function

import inspect
import itertools
import logging
import os
import sys

import numpy as np
import tensorflow as tf

_log = logging.getLogger("migrate_tpu.runtime")

# --------------------------------------------------------------------------
# Versions and messages
# --------------------------------------------------------------------------


def tf_version():
    """The running TensorFlow's (major, minor) version."""
    parts = tf.__version__.split(".")
    return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)


def default_tf_api():
    """``'2.1'`` on TF 2.0/2.1, ``'2.4'`` on anything newer."""
    return "2.1" if tf_version() < (2, 2) else "2.4"


#: What TPUStrategy.experimental_run_v2 said in TF 2.1.0 about an eager plain function.
EAGER_RUN_MESSAGE_2_1 = (
    "TPUStrategy.experimental_run_v2(fn, ...) does not support eager "
    "execution. Either convert `fn` into a tf.function or consider "
    "calling strategy.experimental_run_v2 inside a tf.function.")

#: What TPUStrategy.run says from TF 2.2 on (2.4.1, 2.21).
EAGER_RUN_MESSAGE_2_4 = (
    "TPUStrategy.run(fn, ...) does not support pure eager "
    "execution. please make sure the function passed into "
    "`strategy.run` is a `tf.function` or "
    "`strategy.run` is called inside a `tf.function` if "
    "eager behavior is enabled.")

EXPERIMENTAL_DEPRECATION = (
    "`tf.distribute.experimental.TPUStrategy` is deprecated, please use "
    " the non experimental symbol `tf.distribute.TPUStrategy` instead.")

# --------------------------------------------------------------------------
# State of the emulated TPU system
# --------------------------------------------------------------------------


class _State(object):
    def __init__(self):
        self.installed = False
        self.replicas = None       # emulated cores in all (every host, all in this process)
        self.hosts = 1             # TPU hosts of the emulated pod (input pipelines)
        self.tf_api = None
        self.devices = []          # logical device names, one per emulated TPU core
        self.device_type = "CPU"
        self.topology = None       # set by initialize_tpu_system
        self.connected = None      # resolver given to experimental_connect_to_cluster
        self.originals = []        # (module, name, value or _MISSING) for uninstall
        self.shared_gpu = False    # logical GPUs split from one physical GPU


_MISSING = object()
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
        wanted = STATE.replicas
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
    return STATE.replicas // STATE.hosts


# --------------------------------------------------------------------------
# Topology and device assignment
# --------------------------------------------------------------------------


def _topology_rank():
    return 3 if STATE.tf_api == "2.1" else 4


def default_mesh_shape(cores, rank=4):
    """Mesh of a single-host TPU slice with ``cores`` cores: 2 cores per chip when even."""
    per_chip = 2 if cores % 2 == 0 else 1
    chips = cores // per_chip
    x = 1
    for d in range(1, int(chips ** 0.5) + 1):
        if chips % d == 0:
            x = d
    y = chips // x
    return [x, y, per_chip] if rank == 3 else [x, y, 1, per_chip]


class Topology(object):
    """Physical layout of the emulated TPU slice (one host).

    ``mesh_shape`` is ``[x, y, core]`` under the TF 2.1 API and ``[x, y, z,
    core]`` from 2.3 on.  Device ordinal ``i`` (``TPU:i``) is the i-th core in
    (y, x, z, core) order, cores of one chip being neighbours.
    """

    def __init__(self, serialized=None, mesh_shape=None, device_coordinates=None):
        rank = _topology_rank()
        if serialized is not None:
            raise ValueError("the emulated TPU topology cannot be built from a serialized proto")
        if mesh_shape is None:
            mesh_shape = default_mesh_shape(STATE.replicas or 8, rank)
        self._mesh_shape = np.asarray(mesh_shape, dtype=np.int32)
        if len(self._mesh_shape) != rank or any(self._mesh_shape < 1):
            raise ValueError("`mesh_shape` must be a sequence of {} positive "
                             "entries; got {}".format(rank, self._mesh_shape))
        if device_coordinates is None:
            coords = []
            dims = [range(int(n)) for n in self._mesh_shape]
            # ordinal order: y slowest, then x, then z, then core fastest
            order = [1, 0] + list(range(2, rank))
            for combo in itertools.product(*[dims[i] for i in order]):
                point = [0] * rank
                for axis, value in zip(order, combo):
                    point[axis] = value
                coords.append(point)
            hosts = STATE.hosts if len(coords) % STATE.hosts == 0 else 1
            per_host = len(coords) // hosts
            # host k holds the k-th run of cores in ordinal order (a block of chips)
            device_coordinates = [coords[k * per_host:(k + 1) * per_host] for k in range(hosts)]
        self._device_coordinates = np.asarray(device_coordinates, dtype=np.int32)
        if (self._device_coordinates.ndim != 3 or
                self._device_coordinates.shape[2] != rank):
            raise ValueError("`device_coordinates` must be a rank 3 int32 array "
                             "with minor dimension equal to the mesh shape rank")
        self._ordinal_at = {}
        for task, row in enumerate(self._device_coordinates):
            for ordinal, point in enumerate(row):
                self._ordinal_at[tuple(int(v) for v in point)] = (task, ordinal)

    @property
    def mesh_shape(self):
        return self._mesh_shape

    @property
    def mesh_rank(self):
        return len(self._mesh_shape)

    @property
    def device_coordinates(self):
        return self._device_coordinates

    @property
    def missing_devices(self):
        return np.zeros((0, self.mesh_rank), dtype=np.int32)

    @property
    def num_tasks(self):
        return self._device_coordinates.shape[0]

    @property
    def num_tpus_per_task(self):
        return self._device_coordinates.shape[1]

    def _lookup(self, device_coordinates):
        key = tuple(int(v) for v in np.asarray(device_coordinates).ravel())
        if key not in self._ordinal_at:
            raise ValueError("no TPU core at coordinates {}".format(list(key)))
        return self._ordinal_at[key]

    def task_ordinal_at_coordinates(self, device_coordinates):
        return self._lookup(device_coordinates)[0]

    def tpu_device_ordinal_at_coordinates(self, device_coordinates):
        return self._lookup(device_coordinates)[1]

    def cpu_device_name_at_coordinates(self, device_coordinates, job=None):
        # every emulated host is this process: its CPU, where the host's pipeline runs
        del job
        return "/job:localhost/replica:0/task:0/device:CPU:0"

    def tpu_device_name_at_coordinates(self, device_coordinates, job=None):
        # the logical device that plays the core (a name ``tf.device`` can place on)
        del job
        task, ordinal = self._lookup(device_coordinates)
        return local_devices()[task * self.num_tpus_per_task + ordinal]

    def serialized(self):
        return b""

    def __repr__(self):
        return "Topology(mesh_shape={})".format(list(self._mesh_shape))


class DeviceAssignment(object):
    """Mapping of (replica, logical core) to cores of an emulated :class:`Topology`."""

    def __init__(self, topology, core_assignment):
        if not isinstance(topology, Topology):
            raise ValueError("topology must be a Topology object, got {}".format(type(topology)))
        core_assignment = np.asarray(core_assignment, dtype=np.int32)
        self._topology = topology
        if core_assignment.ndim != 3:
            raise ValueError("core_assignment must be a rank 3 numpy array, "
                             "got shape {}".format(core_assignment.shape))
        if core_assignment.shape[-1] != topology.mesh_rank:
            raise ValueError(
                "minor dimension of core_assignment must have size equal to topology "
                "rank ({}), got shape {}".format(topology.mesh_rank, core_assignment.shape))
        self._core_assignment = core_assignment
        self._num_replicas = core_assignment.shape[0]
        self._num_cores_per_replica = core_assignment.shape[1]

    @property
    def topology(self):
        return self._topology

    @property
    def num_cores_per_replica(self):
        return self._num_cores_per_replica

    @property
    def num_replicas(self):
        return self._num_replicas

    @property
    def core_assignment(self):
        return self._core_assignment

    def coordinates(self, replica, logical_core):
        return tuple(self._core_assignment[replica, logical_core, :])

    def lookup_replicas(self, task_id, logical_core):
        found = [r for r in range(self._num_replicas)
                 if self._topology.task_ordinal_at_coordinates(
                     self.coordinates(r, logical_core)) == task_id]
        if not found:
            raise ValueError("Can not find any replica in task: {} contains logical_core: {} "
                             .format(task_id, logical_core))
        return found

    def tpu_ordinal(self, replica=0, logical_core=0):
        return self._topology.tpu_device_ordinal_at_coordinates(self.coordinates(replica, logical_core))

    def host_device(self, replica=0, logical_core=0, job=None):
        return self._topology.cpu_device_name_at_coordinates(self.coordinates(replica, logical_core), job=job)

    def tpu_device(self, replica=0, logical_core=0, job=None):
        return self._topology.tpu_device_name_at_coordinates(self.coordinates(replica, logical_core), job=job)

    @staticmethod
    def build(topology, computation_shape=None, computation_stride=None, num_replicas=1):
        return build_device_assignment(topology, computation_shape, computation_stride, num_replicas)

    def __repr__(self):
        return "DeviceAssignment(num_replicas={}, num_cores_per_replica={})".format(
            self._num_replicas, self._num_cores_per_replica)


def build_device_assignment(topology, computation_shape=None, computation_stride=None,
                            num_replicas=1):
    """Place ``num_replicas`` copies of a computation on the emulated mesh.

    Same validation as ``tf.tpu.experimental.DeviceAssignment.build``: shapes
    must have the topology's rank (3 under the TF 2.1 API, 4 from 2.3 on), be
    positive, fit in the mesh, and enough copies must fit.  Replica copies
    tile the mesh; within a copy, logical cores follow C order over
    ``computation_shape`` (the core axis fastest).
    """
    if not isinstance(topology, Topology):
        raise ValueError("`topology` is not a Topology object; got {}".format(type(topology)))
    mesh = topology.mesh_shape
    rank = len(mesh)
    shape = np.ones(rank, dtype=np.int32) if computation_shape is None else \
        np.asarray(computation_shape, dtype=np.int32)
    stride = np.ones(rank, dtype=np.int32) if computation_stride is None else \
        np.asarray(computation_stride, dtype=np.int32)
    if shape.shape != (rank,):
        raise ValueError("computation_shape must have shape [{}]; got {}".format(rank, shape.shape))
    if stride.shape != (rank,):
        raise ValueError("computation_stride must have shape [{}]; got {}".format(rank, stride.shape))
    if any(shape < 1):
        raise ValueError("computation_shape must be positive; got computation_shape={}".format(shape))
    if any(stride < 1):
        raise ValueError("computation_stride must be positive; got computation_stride={}".format(stride))
    footprint = shape * stride
    if any(footprint > mesh):
        raise ValueError("computation footprint {} does not fit in TPU topology shape {}".format(
            footprint, mesh))
    blocks = mesh // footprint
    copies = blocks * stride
    max_replicas = int(np.prod(copies))
    if num_replicas is None:
        num_replicas = max_replicas
    if num_replicas > max_replicas:
        raise ValueError(
            "requested {} replicas but only {} replicas with shape {} and "
            "computation_stride {} fit in a TPU mesh of shape {}".format(
                num_replicas, max_replicas, shape, stride, mesh))
    replicas = []
    for copy in itertools.product(*[range(int(c)) for c in copies]):
        copy = np.asarray(copy, dtype=np.int32)
        base = (copy // stride) * footprint + copy % stride
        cores = [base + np.asarray(offset, dtype=np.int32) * stride
                 for offset in itertools.product(*[range(int(s)) for s in shape])]
        replicas.append(cores)
    # First replica on TPU:0, and so on: order copies by their first core's ordinal.
    replicas.sort(key=lambda cores: topology._lookup(cores[0]))  # (task, ordinal)
    return DeviceAssignment(topology, np.asarray(replicas[:num_replicas], dtype=np.int32))


# --------------------------------------------------------------------------
# Cluster resolver and TPU system
# --------------------------------------------------------------------------

_EMULATED_ADDRESS = "grpc://localhost:8470"


class TPUClusterResolver(tf.distribute.cluster_resolver.ClusterResolver):
    """Resolver for the emulated TPU host.

    The emulated machine plays a Cloud/Colab host whose TPU is found through
    the environment, so ``TPUClusterResolver()``, ``tpu=''``, ``tpu='local'``,
    a name or a ``grpc://`` address all resolve.  ``master()`` follows the
    emulated TF API: under 2.1, ``''`` means a local TPU (``master() == ''``)
    and ``'local'`` is kept verbatim; from 2.2 on, ``''`` is looked up like
    ``None`` and ``'local'`` gives ``''``.
    """

    def __init__(self, tpu=None, zone=None, project=None, job_name="worker",
                 coordinator_name=None, coordinator_address=None,
                 credentials="default", service=None, discovery_url=None):
        if isinstance(tpu, bytes):
            tpu = tpu.decode("utf-8")
        if isinstance(tpu, (list, tuple)):
            tpu = tpu[0] if tpu else None
        self._requested = tpu
        self._zone = zone
        self._project = project
        self._job_name = job_name
        self._coordinator_name = coordinator_name
        self._coordinator_address = coordinator_address
        self._credentials = credentials
        # the client of a pod is task 0 of the TPU workers' job, as TF 2.4.1's resolver sets it
        self._task_type = job_name
        self._task_id = 0
        self._rpc_layer = "grpc"
        if not tpu and not (STATE.tf_api == "2.1" and tpu == ""):
            # None (and from 2.2 on also ''): the TPU the environment announces
            tpu = (os.environ.get("KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS") or
                   os.environ.get("TPU_NAME") or None)
            if tpu is None:
                raise ValueError("Please provide a TPU Name to connect to.")
        if STATE.tf_api == "2.1":
            if tpu == "" or tpu == "local":
                self._master = tpu
            elif tpu is None:
                self._master = _EMULATED_ADDRESS
            else:
                self._master = tpu if tpu.startswith("grpc://") else _EMULATED_ADDRESS
        else:
            if tpu == "local":
                self._master = ""
            elif not tpu:
                self._master = _EMULATED_ADDRESS
            else:
                self._master = tpu if tpu.startswith("grpc://") else _EMULATED_ADDRESS
        self._tpu = self._master if self._master else (tpu or "")

    @classmethod
    def connect(cls, tpu=None, zone=None, project=None):
        resolver = cls(tpu, zone, project)
        experimental_connect_to_cluster(resolver)
        initialize_tpu_system(resolver)
        return resolver

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        del task_type, task_id
        if rpc_layer is not None and self._master.startswith("grpc://"):
            return rpc_layer + "://" + self._master[len("grpc://"):]
        return self._master

    def get_master(self):
        return self.master()

    def get_job_name(self):
        return self._job_name

    def cluster_spec(self):
        if STATE.hosts > 1:
            # the TPU hosts (and the coordinator, when named); the addresses are never dialled
            jobs = {self._job_name: ["10.240.1.{}:8470".format(2 + k) for k in range(STATE.hosts)]}
            if self._coordinator_name:
                jobs[self._coordinator_name] = [self._coordinator_address or "localhost:8471"]
            return tf.train.ClusterSpec(jobs)
        if not self._master:
            return tf.train.ClusterSpec({})
        return tf.train.ClusterSpec({self._job_name: [self._master[len("grpc://"):]]})

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        """TPU cores of one host, as TensorFlow reports them."""
        del task_type, task_id, config_proto
        return {"TPU": cores_per_host() if STATE.replicas else 8}

    def get_tpu_system_metadata(self):
        return _system_metadata()

    @property
    def environment(self):
        return ""

    @property
    def task_type(self):
        return self._task_type

    @task_type.setter
    def task_type(self, value):
        self._task_type = value

    @property
    def task_id(self):
        return self._task_id

    @task_id.setter
    def task_id(self, value):
        self._task_id = value

    @property
    def rpc_layer(self):
        return self._rpc_layer

    @rpc_layer.setter
    def rpc_layer(self, value):
        self._rpc_layer = value

    def __repr__(self):
        return "TPUClusterResolver(emulated, tpu={!r}, master={!r})".format(self._requested, self._master)


def _system_metadata():
    from collections import namedtuple
    meta = namedtuple("TPUSystemMetadata",
                      ["num_cores", "num_hosts", "num_of_cores_per_host", "topology", "devices"])
    topo = _current_topology()
    cores = STATE.replicas
    names = ["/job:worker/replica:0/task:{}/device:TPU:{}".format(t, i)
             for t in range(STATE.hosts) for i in range(cores // STATE.hosts)]
    return meta(cores, STATE.hosts, cores // STATE.hosts, topo, names)


def _current_topology():
    if STATE.topology is None:
        STATE.topology = Topology()
    return STATE.topology


def experimental_connect_to_cluster(cluster_spec_or_resolver, job_name="localhost", task_index=0,
                                    protocol=None, make_master_device_default=True,
                                    cluster_device_filters=None):
    """Emulated: the TPU host is this process, so there is nothing to connect to."""
    del job_name, task_index, protocol, make_master_device_default, cluster_device_filters
    STATE.connected = cluster_spec_or_resolver


def experimental_connect_to_host(remote_host=None, job_name="worker"):
    del remote_host, job_name


def initialize_tpu_system(cluster_resolver=None):
    """Emulated: returns the :class:`Topology` of the emulated slice."""
    del cluster_resolver
    _log.info("Initializing the emulated TPU system: %d cores on %s",
              STATE.replicas, STATE.device_type)
    STATE.topology = Topology()
    return STATE.topology


def shutdown_tpu_system(cluster_resolver=None):
    del cluster_resolver
    STATE.topology = None


# --------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------

_FUNCTION_TYPES = None


def _function_types():
    """(tf.function class, ConcreteFunction class) of the running TF."""
    global _FUNCTION_TYPES
    if _FUNCTION_TYPES is None:
        fn = tf.function(lambda: tf.constant(0))
        concrete = type(fn.get_concrete_function())
        for klass in concrete.__mro__:
            if klass.__name__ == "ConcreteFunction":
                concrete = klass
                break
        _FUNCTION_TYPES = (type(fn), concrete)
    return _FUNCTION_TYPES


def reject_eager_plain_function(fn, message):
    """TPU's rule for ``run``: raise ``NotImplementedError(message)`` when, executing
    eagerly, ``fn`` is neither a ``tf.function``, a ``ConcreteFunction``, nor a
    callable whose ``__call__`` is a ``tf.function``."""
    if not tf.executing_eagerly():
        return
    function_type, concrete_type = _function_types()
    if isinstance(fn, function_type) or isinstance(fn, concrete_type):
        return
    if callable(fn) and isinstance(getattr(fn, "__call__", None), function_type):
        return
    raise NotImplementedError(message)


def _mirrored_run(strategy, fn, args, kwargs, options):
    base = tf.distribute.Strategy
    if hasattr(base, "run"):
        if options is None:
            return base.run(strategy, fn, args=args, kwargs=kwargs)
        return base.run(strategy, fn, args=args, kwargs=kwargs, options=options)
    return base.experimental_run_v2(strategy, fn, args=args, kwargs=kwargs)


class _EmulatedTPU(object):
    """What every emulated TPUStrategy adds to the ``tf.distribute`` strategy it runs on:
    the device assignment, the resolver, TPU's attributes of ``extended``, and
    TensorFlow's class name in users' errors."""

    #: the name TensorFlow's own class has (errors name it, not the emulation)
    _tf_class_name = "TPUStrategy"

    def _emulated_init(self, tpu_cluster_resolver, device_assignment):
        if not STATE.installed:
            raise RuntimeError("migrate_tpu.runtime.emulation.install() has not run")
        if tpu_cluster_resolver is None:
            tpu_cluster_resolver = TPUClusterResolver("")
        topology = _current_topology()
        if device_assignment is None:
            device_assignment = build_device_assignment(
                topology, num_replicas=int(np.prod(topology.mesh_shape)))
        elif not isinstance(device_assignment, DeviceAssignment):
            raise ValueError("device_assignment must be a tf.tpu.experimental.DeviceAssignment, "
                             "got {}".format(type(device_assignment)))
        self._start_replicas(device_assignment)
        self._emulated_resolver = tpu_cluster_resolver
        self._emulated_device_assignment = device_assignment
        ext = self.extended
        ext.num_hosts = STATE.hosts
        ext.num_replicas_per_host = device_assignment.num_replicas // STATE.hosts
        ext.experimental_enable_dynamic_batch_size = True
        ext.steps_per_run = 1
        ext._tpu_cluster_resolver = tpu_cluster_resolver
        ext._device_assignment = device_assignment
        ext.emulated_tpu = True

    @property
    def cluster_resolver(self):
        return self._emulated_resolver

    @property
    def emulated_device_assignment(self):
        return self._emulated_device_assignment

    def __getattr__(self, name):
        # only reached when normal lookup failed: say it as TensorFlow would
        raise AttributeError("'{}' object has no attribute '{}'".format(self._tf_class_name, name))


class _EmulatedTPUStrategyBase(_EmulatedTPU, tf.distribute.MirroredStrategy):
    """The TPU system (one host or a pod): a MirroredStrategy with one replica per emulated
    core of the assignment, whose input workers are the TPU hosts."""

    _mirrored_class = tf.distribute.MirroredStrategy

    def _start_replicas(self, device_assignment):
        devices = local_devices()
        topology = device_assignment.topology
        per_task = topology.num_tpus_per_task
        placed = []
        for r in range(device_assignment.num_replicas):
            task, ordinal = topology._lookup(device_assignment.coordinates(r, 0))
            placed.append(devices[task * per_task + ordinal])
        cross_device_ops = tf.distribute.ReductionToOneDevice() if STATE.shared_gpu else None
        self._mirrored_class.__init__(self, devices=placed, cross_device_ops=cross_device_ops)
        if STATE.hosts > 1:
            _one_input_worker_per_host(self.extended, placed)


def _one_input_worker_per_host(extended, devices):
    """Make each emulated TPU host an input worker of ``extended`` feeding its own cores.

    TensorFlow's MirroredStrategy then does what TPUStrategy does on a pod: it calls a
    dataset function once per input worker (``InputContext(num_input_pipelines=H,
    input_pipeline_id=k)``), shards a distributed dataset per worker, and host k's
    pipeline feeds replicas ``k*N/H .. (k+1)*N/H - 1``.  Every host's pipeline runs on
    this process's CPU (checked on TF 2.4.1 and 2.21, whose MirroredExtended keeps the
    (host device, compute devices) pairs in ``_input_workers_devices``).
    """
    if not hasattr(extended, "_input_workers_devices"):
        raise NotImplementedError(
            "migrate_tpu.runtime: an emulated pod needs TensorFlow >= 2.4 (this is {}); run "
            "the pod with --python tf2.4 --tf-api 2.1".format(tf.__version__))
    per_host = len(devices) // STATE.hosts
    host_device = extended._input_workers_devices[0][0]
    extended._input_workers_devices = tuple(
        (host_device, tuple(devices[k * per_host:(k + 1) * per_host])) for k in range(STATE.hosts))


def _strategy_run(self, fn, args=(), kwargs=None, options=None):
    """Like ``Strategy.run``, with TPU's refusal of eager plain functions."""
    reject_eager_plain_function(fn, EAGER_RUN_MESSAGE_2_4)
    return _mirrored_run(self, fn, args, kwargs, options)


def _strategy_experimental_run_v2(self, fn, args=(), kwargs=None):
    """TF 2.1's name for ``run``, with TF 2.1's refusal message."""
    reject_eager_plain_function(fn, EAGER_RUN_MESSAGE_2_1)
    if tf_version() < (2, 2):
        fn = _outputs_as_tensors(fn)
    return _mirrored_run(self, fn, args, kwargs, None)


def _as_tensor(value):
    if isinstance(value, (bool, int, float, np.number, np.ndarray)):
        return tf.convert_to_tensor(value)
    return value


def _outputs_as_tensors(fn):
    """``fn`` with its Python numbers returned as tensors, as TPU's ``tpu.replicate``
    returns every output of a replica.  TF 2.1's ``reduce(MEAN, v, axis=N)`` runs a
    helper that returns the static size of that axis as a Python int: a TPU reduces
    the replicas' tensors, MirroredStrategy would refuse to SUM one plain number
    (``A non-DistributedValues value 2 cannot be reduced``)."""
    def replica_fn(*args, **kwargs):
        return tf.nest.map_structure(_as_tensor, fn(*args, **kwargs))
    return replica_fn


class _ExperimentalTPUStrategy(object):
    """``tf.distribute.experimental.TPUStrategy`` on emulated TPU cores."""

    _tf_class_name = "TPUStrategy"

    def __init__(self, tpu_cluster_resolver=None, device_assignment=None):
        if STATE.tf_api != "2.1":
            tf.compat.v1.logging.warning(EXPERIMENTAL_DEPRECATION)
        self._emulated_init(tpu_cluster_resolver, device_assignment)


def _num_logical_devices_per_replica(strategy):
    return strategy._emulated_device_assignment.num_cores_per_replica


class _StableTPUStrategy(object):
    """``tf.distribute.TPUStrategy`` (TF >= 2.3) on emulated TPU cores."""

    _tf_class_name = "TPUStrategyV2"
    _extra_kwargs = ()

    def __init__(self, tpu_cluster_resolver=None, experimental_device_assignment=None, **kwargs):
        unknown = [k for k in kwargs if k not in self._extra_kwargs]
        if unknown:
            raise TypeError("__init__() got an unexpected keyword argument '{}'".format(unknown[0]))
        self._emulated_init(tpu_cluster_resolver, experimental_device_assignment)

    def experimental_assign_to_logical_device(self, tensor, logical_device_id):
        """Annotates ``tensor`` for one logical core; the value is unchanged."""
        count = _num_logical_devices_per_replica(self)
        if logical_device_id < 0 or logical_device_id >= count:
            raise ValueError("`logical_core_id` to assign must be lower then total "
                             "number of logical devices per replica. Received "
                             "logical device id {} but there are only total of {} "
                             "logical devices in replica.".format(logical_device_id, count))
        return tf.identity(tensor)

    def experimental_split_to_logical_devices(self, tensor, partition_dimensions):
        """Annotates ``tensor`` to be tiled over the logical cores; the value is unchanged."""
        count = _num_logical_devices_per_replica(self)
        splits = int(np.prod(partition_dimensions))
        shape = tensor.shape
        rank = len(shape)
        if rank != len(partition_dimensions):
            raise ValueError("Length of `partition_dimensions` ({}) must be  "
                             "equal to the rank of `x` ({}).".format(len(partition_dimensions), rank))
        for index, size in enumerate(shape.as_list() if hasattr(shape, "as_list") else shape):
            if size is None:
                continue
            if size % partition_dimensions[index] != 0:
                raise ValueError("Tensor shape at dimension ({}) must be "
                                 "divisible by corresponding value specified "
                                 "by `partition_dimensions` ({}).".format(
                                     index, partition_dimensions[index]))
        if splits != count:
            raise ValueError("Number of logical devices ({}) does not match the "
                             "number of partition splits specified ({}).".format(count, splits))
        return tf.identity(tensor)

    def experimental_replicate_to_logical_devices(self, tensor):
        """Annotates ``tensor`` to be replicated on every logical core; the value is unchanged."""
        return tf.identity(tensor)


class TPUStrategy(_ExperimentalTPUStrategy, _EmulatedTPUStrategyBase):
    """``tf.distribute.experimental.TPUStrategy`` on emulated TPU cores.

    The class names are TensorFlow's own (``TPUStrategy``, ``TPUStrategyV2``,
    ``TPUStrategyV1``): Keras and tf-keras decide how a TPU differs by the class
    name's prefix (per-replica logs take the first replica's value, metric
    variables are ON_WRITE, ...), so the emulation must answer those checks as a
    TPU does.
    """


class TPUStrategyV2(_StableTPUStrategy, _EmulatedTPUStrategyBase):
    """``tf.distribute.TPUStrategy`` (TF >= 2.3) on emulated TPU cores."""


class TPUStrategyV1(_EmulatedTPU, tf.compat.v1.distribute.MirroredStrategy):
    """``tf.compat.v1.distribute.experimental.TPUStrategy`` on one emulated TPU host: the
    TF1-style API (``experimental_run``, ``make_dataset_iterator``, ...) of a
    ``compat.v1`` MirroredStrategy, with ``steps_per_run``."""

    _tf_class_name = "TPUStrategyV1"
    _mirrored_class = tf.compat.v1.distribute.MirroredStrategy

    def __init__(self, tpu_cluster_resolver=None, steps_per_run=None, device_assignment=None):
        self._emulated_init(tpu_cluster_resolver, device_assignment)
        self.extended.steps_per_run = steps_per_run or 1

    _start_replicas = _EmulatedTPUStrategyBase.__dict__["_start_replicas"]

    @property
    def steps_per_run(self):
        """DEPRECATED: use .extended.steps_per_run instead."""
        return self.extended.steps_per_run


def strategy_classes():
    """(experimental, stable) emulated TPUStrategy classes."""
    return TPUStrategy, TPUStrategyV2


# --------------------------------------------------------------------------
# Installing the emulation into the tf namespace
# --------------------------------------------------------------------------


def _tpu_names_of_logical_devices(original):
    def list_logical_devices(device_type=None):
        if device_type is not None and device_type.upper() == "TPU":
            make = getattr(tf.config, "LogicalDevice", None)
            per_host = STATE.replicas // STATE.hosts
            names = ["/job:worker/replica:0/task:{}/device:TPU:{}".format(t, i)
                     for t in range(STATE.hosts) for i in range(per_host)]
            if make is None:
                return names
            return [make(name=n, device_type="TPU") for n in names]
        return original(device_type) if device_type is not None else original()
    list_logical_devices.__doc__ = original.__doc__
    return list_logical_devices


def _patch(module, name, value, only_if_present=True):
    if module is None:
        return
    if isinstance(module, type):
        current = module.__dict__.get(name, _MISSING)
        if current is _MISSING and only_if_present and not hasattr(module, name):
            return
    else:
        current = getattr(module, name, _MISSING)
        if current is _MISSING and only_if_present:
            return
    STATE.originals.append((module, name, current))
    setattr(module, name, value)


def _modules(path, v1=True):
    """The module objects reachable as ``tf.<path>``, ``tf.compat.v2.<path>`` and
    (with ``v1``) ``tf.compat.v1.<path>``."""
    found = []
    compat = getattr(tf, "compat", None)
    roots = [tf, getattr(compat, "v2", None)] + ([getattr(compat, "v1", None)] if v1 else [])
    for root in roots:
        obj = root
        for part in path.split(".") if path else []:
            obj = getattr(obj, part, None) if obj is not None else None
        if obj is not None and all(obj is not f for f in found):
            found.append(obj)
    return found


def install(replicas=None, tf_api=None):
    """Switch the emulation on.  Idempotent; ``configure_devices`` runs if it has not."""
    if STATE.installed:
        return STATE
    if tf_api is None:
        tf_api = default_tf_api()
    if tf_api not in ("2.1", "2.4"):
        raise ValueError("tf_api must be '2.1' or '2.4'; got {!r}".format(tf_api))
    if tf_api == "2.4" and tf_version() < (2, 2):
        raise ValueError("--tf-api 2.4 needs TensorFlow >= 2.4; this is TensorFlow {}".format(tf.__version__))
    if STATE.replicas is None:
        configure_devices(replicas or 8)
    STATE.tf_api = tf_api

    real_stable = getattr(tf.distribute, "TPUStrategy", None)
    if real_stable is not None:
        try:
            params = inspect.signature(real_stable.__init__).parameters
            _StableTPUStrategy._extra_kwargs = tuple(
                p for p in params if p not in ("self", "tpu_cluster_resolver", "experimental_device_assignment"))
        except (TypeError, ValueError):
            pass

    for mod in _modules("distribute.cluster_resolver"):
        _patch(mod, "TPUClusterResolver", TPUClusterResolver)
    for mod in _modules("config"):
        _patch(mod, "experimental_connect_to_cluster", experimental_connect_to_cluster)
        _patch(mod, "experimental_connect_to_host", experimental_connect_to_host)
        _patch(mod, "list_logical_devices", _tpu_names_of_logical_devices(mod.list_logical_devices)
               if hasattr(mod, "list_logical_devices") else None)
    for mod in _modules("config.experimental"):
        if hasattr(mod, "list_logical_devices"):
            _patch(mod, "list_logical_devices", _tpu_names_of_logical_devices(mod.list_logical_devices))
    for mod in _modules("tpu.experimental"):
        _patch(mod, "initialize_tpu_system", initialize_tpu_system)
        _patch(mod, "shutdown_tpu_system", shutdown_tpu_system)
        _patch(mod, "DeviceAssignment", DeviceAssignment)
        _patch(mod, "Topology", Topology)
    # Methods exist only where the emulated TF version had them.
    base = tf.distribute.MirroredStrategy
    if hasattr(base, "run"):
        _patch(_EmulatedTPU, "run", _strategy_run, only_if_present=False)
    if tf_api == "2.1":
        _patch(_EmulatedTPU, "experimental_run_v2", _strategy_experimental_run_v2,
               only_if_present=False)
    experimental, stable = strategy_classes()
    for mod in _modules("distribute.experimental", v1=False):
        _patch(mod, "TPUStrategy", experimental)
    for mod in _modules("distribute", v1=False):
        if getattr(mod, "TPUStrategy", None) is not None:
            _patch(mod, "TPUStrategy", stable)
    _patch(getattr(getattr(getattr(tf.compat, "v1", None), "distribute", None), "experimental", None),
           "TPUStrategy", TPUStrategyV1)
    STATE.installed = True
    return STATE


def uninstall():
    """Put back what :func:`install` replaced (the logical devices stay)."""
    for module, name, value in reversed(STATE.originals):
        if value is _MISSING:
            try:
                delattr(module, name)
            except AttributeError:
                pass
        else:
            setattr(module, name, value)
    del STATE.originals[:]
    STATE.installed = False
    STATE.topology = None


def describe():
    """One line about the emulated system, for the runner's banner."""
    if STATE.hosts > 1:
        return ("TPU emulation: a {}-host pod, {} replicas ({} per host) on {} logical {} "
                "devices in this one process, TF {} with the TF {} API".format(
                    STATE.hosts, STATE.replicas, cores_per_host(), STATE.replicas,
                    STATE.device_type, tf.__version__, STATE.tf_api))
    return "TPU emulation: {} replicas on {} logical {} devices, TF {} with the TF {} API".format(
        STATE.replicas, STATE.replicas, STATE.device_type, tf.__version__, STATE.tf_api)


if sys.version_info < (3, 7):  # pragma: no cover
    raise ImportError("migrate_tpu.runtime needs Python 3.7 or newer")
