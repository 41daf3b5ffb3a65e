"""The emulated TPU's physical layout: :class:`Topology` (``mesh_shape``,
``device_coordinates``, H tasks on a pod) and :class:`DeviceAssignment` with its
``build``, validating as ``tf.tpu.experimental`` does for the TF API emulated.
"""

from __future__ import absolute_import, division, print_function

import itertools

import numpy as np

from migrate_tpu.runtime.tpu.tpu_system import STATE, api_version, local_devices


# --------------------------------------------------------------------------
# Topology and device assignment
# --------------------------------------------------------------------------


def topology_rank():
    """3 (x, y, core) under the TF 2.1 and 2.2 APIs, 4 (x, y, z, core) from TF 2.3 on: TF 2.2.3's
    ``Topology`` takes only 3-D meshes, TF 2.3.4's only 4-D ones."""
    return 3 if api_version() < (2, 3) else 4


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

    ``mesh_shape`` is ``[x, y, core]`` under the TF 2.1 and 2.2 APIs and ``[x, y, z,
    core]`` from 2.3 on.  Device ordinal ``i`` (``TPU:i``) is the i-th core in
    (y, x, z, core) order, cores of one chip being neighbours.
    """

    def __init__(self, serialized=None, mesh_shape=None, device_coordinates=None):
        rank = topology_rank()
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
    must have the topology's rank (3 under the TF 2.1 and 2.2 APIs, 4 from 2.3 on), be
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
    for place in itertools.product(*[range(int(c)) for c in copies]):
        copy = np.asarray(place, dtype=np.int32)
        base = (copy // stride) * footprint + copy % stride
        cores = [base + np.asarray(offset, dtype=np.int32) * stride
                 for offset in itertools.product(*[range(int(s)) for s in shape])]
        replicas.append(cores)
    # First replica on TPU:0, and so on: order copies by their first core's ordinal.
    replicas.sort(key=lambda cores: topology._lookup(cores[0]))  # (task, ordinal)
    return DeviceAssignment(topology, np.asarray(replicas[:num_replicas], dtype=np.int32))


def current_topology():
    if STATE.topology is None:
        STATE.topology = Topology()
    return STATE.topology
