"""The emulated ``TPUClusterResolver`` and TPU system calls
(``experimental_connect_to_cluster``, ``initialize_tpu_system``, ...), as a pod's client
sees them: the ``worker`` job of H TPU hosts, the client being task 0.
"""

from __future__ import absolute_import, division, print_function

import logging
import os
from typing import cast

import tensorflow as tf

from migrate_tpu.runtime.tpu.topology import Topology, current_topology
from migrate_tpu.runtime.tpu.tpu_system import STATE, api_version, cores_per_host

_log = logging.getLogger("migrate_tpu.runtime")


# --------------------------------------------------------------------------
# Cluster resolver and TPU system
# --------------------------------------------------------------------------

_EMULATED_ADDRESS = "grpc://localhost:8470"

#: The TPU addresses ("host:port") the emulated resolvers have answered with: nothing listens
#: there, so a TF1 session must not dial them (:func:`refuse_sessions_to_the_tpu`).
ANNOUNCED = {_EMULATED_ADDRESS[len("grpc://"):]}

SESSION_MESSAGE = ("migrate_tpu.runtime: a TF1 session to the TPU's address {target!r} (TPUEstimator, "
                   "tf.compat.v1.Session(resolver.master())) is not emulated: the emulated TPU runs "
                   "tf.distribute's TPUStrategy and has no gRPC server, and dialling the address would "
                   "wait for ever. Run this program on a TPU, or move it to TPUStrategy.")


def refuse_sessions_to_the_tpu(original_init):
    """``BaseSession.__init__`` that fails at once for a target naming an address the emulated
    resolver announced, instead of dialling it for ever; other targets are TensorFlow's."""
    def __init__(self, target="", graph=None, config=None):
        text = target.decode("utf-8", "replace") if isinstance(target, bytes) else str(target or "")
        address = text.split("://", 1)[-1]
        if text.startswith("grpc://") and address in ANNOUNCED:
            self._session = None  # what TensorFlow's __del__ reads of a session never made
            raise NotImplementedError(SESSION_MESSAGE.format(target=text))
        original_init(self, target, graph, config)
    return __init__


class TPUClusterResolver(tf.distribute.cluster_resolver.ClusterResolver):
    """Resolver for the emulated TPU host.

    The emulated machine plays a Cloud/Colab host whose TPU is found through
    the environment, so ``TPUClusterResolver()``, ``tpu=''``, ``tpu='local'``,
    a name or a ``grpc://`` address all resolve.  ``master()`` follows the
    emulated TF API: under 2.1, ``''`` means a local TPU (``master() == ''``)
    and ``'local'`` is kept verbatim; from 2.2 on, ``''`` is looked up like
    ``None`` (checked on TF 2.2.3, 2.3.4 and 2.4.1); ``'local'`` is a TPU's name under
    2.2 and 2.3 (TF 2.2.3 and 2.3.4 ask the Cloud TPU API for a TPU called ``local``)
    and the local TPU, ``master() == ''``, from 2.4 on.
    """

    def __init__(self, tpu=None, zone=None, project=None, job_name="worker",  # noqa: PLR0913
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
            if tpu == "local" and api_version() >= (2, 4):
                self._master = ""
            elif not tpu:
                self._master = _EMULATED_ADDRESS
            else:
                self._master = tpu if tpu.startswith("grpc://") else _EMULATED_ADDRESS
        self._tpu = self._master if self._master else (tpu or "")
        if self._master.startswith("grpc://"):
            ANNOUNCED.add(self._master[len("grpc://"):])

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
    TPUSystemMetadata = namedtuple("TPUSystemMetadata",
                                   ["num_cores", "num_hosts", "num_of_cores_per_host", "topology", "devices"])
    topo = current_topology()
    cores = cast(int, STATE.replicas)  # set: install() configures the devices first
    names = ["/job:worker/replica:0/task:{}/device:TPU:{}".format(t, i)
             for t in range(STATE.hosts) for i in range(cores // STATE.hosts)]
    return TPUSystemMetadata(cores, STATE.hosts, cores // STATE.hosts, topo, names)


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
