"""The control of benchmarks/tpu_corpus/run.py: a program's TPU set-up on plain TensorFlow.

run.py puts this folder first on PYTHONPATH and sets TPU_CORPUS_CONTROL=1 to run a corpus
program on an interpreter of `migrate-tpu envs` WITHOUT the emulation: the interpreter's own
TensorFlow, its CPU split into 8 logical devices, and a program's TPU boilerplate given a
plain `tf.distribute.MirroredStrategy` over those 8 devices:

    TPUClusterResolver(...), TPUClusterResolver.connect()  a resolver of a local "TPU"
    tf.config.experimental_connect_to_cluster/_to_host     nothing
    tf.tpu.experimental.initialize_tpu_system               nothing
    TPUStrategy(...), experimental.TPUStrategy(...)          MirroredStrategy on CPU:0..7

On TF >= 2.16 with tf-keras installed, tf.keras is Keras 2 (TF_USE_LEGACY_KERAS=1), as under
`migrate-tpu run`. Only names the interpreter has are replaced (TF 2.1 has no TPUClusterResolver.connect nor
tf.distribute.TPUStrategy), so a program that the interpreter cannot run fails here as it
would there. What fails under both this control and the emulation is the interpreter's (or
the program's) doing, not a false refusal of the emulation. Written for TF 2.1 to 2.21.
"""

import os


def _no_tpu_system(tf):
    """experimental_connect_to_cluster/_to_host and initialize/shutdown_tpu_system: nothing."""
    def connect_to_cluster(*args, **kwargs):
        return None

    for name in ("experimental_connect_to_cluster", "experimental_connect_to_host"):
        if hasattr(tf.config, name):
            setattr(tf.config, name, connect_to_cluster)

    def initialize_tpu_system(cluster_resolver=None):
        return None

    def shutdown_tpu_system(cluster_resolver=None):
        return None

    tpu_experimental = getattr(getattr(tf, "tpu", None), "experimental", None)
    if tpu_experimental is not None:
        if hasattr(tpu_experimental, "initialize_tpu_system"):
            tpu_experimental.initialize_tpu_system = initialize_tpu_system
        if hasattr(tpu_experimental, "shutdown_tpu_system"):
            tpu_experimental.shutdown_tpu_system = shutdown_tpu_system


def _install():
    import tensorflow as tf

    replicas = int(os.environ.get("TPU_CORPUS_CONTROL_REPLICAS", "8"))
    cpus = tf.config.list_physical_devices("CPU") if hasattr(tf.config, "list_physical_devices") \
        else tf.config.experimental.list_physical_devices("CPU")
    if hasattr(tf.config, "set_logical_device_configuration"):
        tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * replicas)
    else:
        tf.config.experimental.set_virtual_device_configuration(
            cpus[0], [tf.config.experimental.VirtualDeviceConfiguration()] * replicas)
    devices = ["/job:localhost/replica:0/task:0/device:CPU:%d" % i for i in range(replicas)]

    resolvers = tf.distribute.cluster_resolver
    real_resolver = resolvers.TPUClusterResolver

    class TPUClusterResolver(resolvers.ClusterResolver):
        """A resolver of the 'TPU' that is this machine's 8 logical CPUs."""

        def __init__(self, tpu=None, zone=None, project=None, job_name="worker", coordinator_name=None,
                     coordinator_address=None, credentials="default", service=None, discovery_url=None):
            self._tpu = tpu
            self.task_type = job_name
            self.task_id = 0

        def master(self, task_type=None, task_id=None, rpc_layer=None):
            return ""

        get_master = master

        def cluster_spec(self):
            return tf.train.ClusterSpec({"worker": ["localhost:8470"]})

        def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
            return {"TPU": replicas}

        def get_job_name(self):
            return self.task_type

        def get_tpu_system_metadata(self):
            return None

        @property
        def environment(self):
            return ""

    if hasattr(real_resolver, "connect"):
        def connect(tpu=None, zone=None, project=None):
            return TPUClusterResolver(tpu, zone, project)
        TPUClusterResolver.connect = staticmethod(connect)
    TPUClusterResolver.__name__ = TPUClusterResolver.__qualname__ = "TPUClusterResolver"
    resolvers.TPUClusterResolver = TPUClusterResolver

    _no_tpu_system(tf)

    # Not named TPUStrategy*: Keras takes a strategy whose class name starts so for a TPU one
    # (backend.is_tpu_strategy) and would ask it for TPU-only attributes.
    class MirroredStrategyInPlaceOfTPU(tf.distribute.MirroredStrategy):
        """MirroredStrategy over the 8 logical CPUs, for a program's TPUStrategy."""

        def __init__(self, tpu_cluster_resolver=None, device_assignment=None, *args, **kwargs):
            super(MirroredStrategyInPlaceOfTPU, self).__init__(devices=devices)

    if hasattr(tf.distribute, "TPUStrategy"):
        tf.distribute.TPUStrategy = MirroredStrategyInPlaceOfTPU
    if hasattr(tf.distribute.experimental, "TPUStrategy"):
        tf.distribute.experimental.TPUStrategy = MirroredStrategyInPlaceOfTPU
    # what Colab's TPU runtime announces (a program may test it to pick the TPU branch)
    os.environ.setdefault("COLAB_TPU_ADDR", "localhost:8470")
    os.environ.setdefault("TPU_NAME", "grpc://localhost:8470")


def _legacy_keras():
    """TF >= 2.16 makes tf.keras Keras 3; where tf-keras is installed, 2.x-era code gets Keras 2,
    as `migrate-tpu run` gives it (it sets TF_USE_LEGACY_KERAS=1 so too)."""
    if "TF_USE_LEGACY_KERAS" in os.environ:
        return
    try:
        import importlib.util
        if importlib.util.find_spec("tf_keras") is not None:
            os.environ["TF_USE_LEGACY_KERAS"] = "1"
    except (ImportError, ValueError):
        pass


def _bucket_writes_make_folders():
    """A file written under the folder that stands in for gs:// (TPU_CORPUS_CONTROL_BUCKET) gets
    its folders made first: a bucket has no folders to make, and a program writes
    gs://bucket/a/b/file at once, which a local file system refuses."""
    bucket = os.environ.get("TPU_CORPUS_CONTROL_BUCKET")
    if not bucket:
        return
    from tensorflow.python.lib.io import file_io

    original = file_io.FileIO.__init__

    def __init__(self, name, mode, *args, **kwargs):
        path = name.decode() if isinstance(name, bytes) else str(name)
        if any(flag in mode for flag in "wa") and path.startswith(bucket):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        original(self, name, mode, *args, **kwargs)
    file_io.FileIO.__init__ = __init__

    wrapper = getattr(file_io, "_pywrap_file_io", None)
    copy = getattr(wrapper, "CopyFile", None)
    if copy is not None:  # tf.io.gfile.copy into the bucket
        def copy_file(source, target, *args, **kwargs):
            path = target.decode() if isinstance(target, bytes) else str(target)
            if path.startswith(bucket):
                os.makedirs(os.path.dirname(path), exist_ok=True)
            return copy(source, target, *args, **kwargs)
        wrapper.CopyFile = copy_file


if os.environ.get("TPU_CORPUS_CONTROL") == "1":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    _legacy_keras()
    _install()
    _bucket_writes_make_folders()
