"""The machine an emulated TPU is attached to (``--tpu-env``): a TPU Node, as Colab and Cloud
TPU were in 2020, or a TPU VM, as Cloud TPU VMs and Colab's TPU runtime are today; and the
folder that stands in for Cloud Storage (``--gcs``).

On a **TPU Node** the program runs on a client (the Colab runtime, a Compute Engine VM) and
the TPU host is another machine, the TPU worker, reached over gRPC: it runs TensorFlow's own
server, has no user Python and reaches no disk but Cloud Storage.  What runs where follows
from TensorFlow's sources: ``tf.config.experimental_connect_to_cluster`` enters the worker's
device scope (``make_master_device_default``, ``python/eager/remote.py`` at v2.1.0 and
v2.4.1), so from then on the ops a program runs eagerly, its ``tf.function`` s, and the input
pipeline that a TPUStrategy distributes run there; Python code (``tf.io.gfile``,
``tf.io.TFRecordWriter``, h5py behind Keras's ``.h5`` files) stays on the client.  So a file
op on a local path fails on the worker with ``UnimplementedError: File system scheme '[local]'
not implemented`` (tensorflow#32651, #36447, #49177; tensorflow/models#8265;
google-research/language#54; sayakpaul/Learnable-Image-Resizing#1), and Python in the input
pipeline (``Dataset.from_generator``, ``tf.py_function``, ``tf.numpy_function``) fails there
as below.  On a **TPU VM** the TPU host is the machine the program runs on: local files and
Python input work.

This module imports nothing outside the standard library (the launcher, the command line and
the fast tests use it); :mod:`migrate_tpu.runtime.tpu.tpu_machine_io` makes TensorFlow's file and
input entry points follow it.
"""

from __future__ import absolute_import, division, print_function

import collections
import os
import re
import tempfile
import time

from migrate_tpu.runtime.tpu.tpu_rules import holds

NODE = "node"
VM = "vm"

#: One choice of ``--tpu-env``: the machine's kind, the environment variables by which that
#: machine announces its TPU (``TPUClusterResolver()`` reads them), and a line for the banner.
Machine = collections.namedtuple("Machine", "name kind announced says")

MACHINES = collections.OrderedDict((machine.name, machine) for machine in (
    # Colab's (and Kaggle's) TPU runtime of 2020: a TPU Node whose address both variables hold.
    Machine("colab", NODE, {"COLAB_TPU_ADDR": "localhost:8470", "TPU_NAME": "grpc://localhost:8470"},
            "a TPU Node as Colab's TPU runtime was in 2020"),
    # A Compute Engine VM with a Cloud TPU Node of 2020, TPU_NAME naming the TPU (the Cloud TPU
    # tutorials of 2020 export it; a name resolves through the Cloud TPU API).
    Machine("node", NODE, {"TPU_NAME": "node-1"}, "a Cloud TPU Node of 2020 reached from a Compute Engine VM"),
    # A TPU Node that nothing announces: the program names its TPU itself.
    Machine("none", NODE, {}, "a TPU Node that no environment variable announces"),
    # A Cloud TPU VM (2021 on), as Colab's TPU runtime is today: the program runs on the TPU host,
    # TPU_NAME=local (the Cloud TPU VM tutorials export it) makes TPUClusterResolver() the local TPU.
    Machine("vm", VM, {"TPU_NAME": "local"}, "a TPU VM"),
))

#: TF 2.1 to 2.4 met TPUs as Nodes: Cloud TPU VMs came in 2021 and Colab's TPU runtime stayed a
#: Node until after TF 2.15 (tensorflow#64117, March 2024, is a Node's '[local]' error on Colab).
#: The code this tool migrates was written for Colab's runtime of that era.
DEFAULT_MACHINE = "colab"

#: ``--tpu-env`` as an environment variable (the command line wins).
MACHINE_VARIABLE = "MIGRATE_TPU_ENVIRONMENT"
#: ``--gcs DIR`` as an environment variable: ``gs://BUCKET/PATH`` is ``DIR/BUCKET/PATH``.
GCS_VARIABLE = "MIGRATE_TPU_GCS"
#: Where a TPU Node's worker log goes (default: a file per run under the temporary folder).
WORKER_LOG_VARIABLE = "MIGRATE_TPU_WORKER_LOG"

GCS_SCHEME = "gs://"
_SCHEME = re.compile(r"^[a-zA-Z][0-9a-zA-Z.]*://")


def choose(name=None, environ=None):
    """The :class:`Machine` of ``--tpu-env NAME``, else of ``$MIGRATE_TPU_ENVIRONMENT``, else the
    default; ``ValueError`` naming the choices for an unknown name."""
    env = os.environ if environ is None else environ
    name = name or env.get(MACHINE_VARIABLE) or DEFAULT_MACHINE
    if name not in MACHINES:
        raise ValueError("unknown TPU environment {!r} (choose from {})".format(name, ", ".join(sorted(MACHINES))))
    return MACHINES[name]


class _Selected(object):
    """What this run emulates: the machine and the folder that stands in for Cloud Storage."""

    def __init__(self):
        self.machine = MACHINES[DEFAULT_MACHINE]
        self.gcs_root = None  # absolute, no trailing separator; None: gs:// paths are refused
        self.worker_log = None


SELECTED = _Selected()


def select(name=None, gcs=None, environ=None):
    """Make ``name`` (or the environment's choice) the emulated machine and ``gcs`` (or
    ``$MIGRATE_TPU_GCS``) the folder for ``gs://``; returns the :class:`Machine`."""
    env = os.environ if environ is None else environ
    SELECTED.machine = choose(name, env)
    root = gcs or env.get(GCS_VARIABLE)
    SELECTED.gcs_root = os.path.normpath(os.path.abspath(os.path.expanduser(root))) if root else None
    SELECTED.worker_log = None
    return SELECTED.machine


def is_node():
    return SELECTED.machine.kind == NODE


# --------------------------------------------------------------------------
# gs:// paths and the local folder that stands in for Cloud Storage
# --------------------------------------------------------------------------


def has_scheme(path):
    """Whether ``path`` (str) names a file system by scheme (``gs://``, ``file://``, ...)."""
    return bool(_SCHEME.match(path))


def is_gcs(path):
    return path.startswith(GCS_SCHEME)


def gcs_to_local(path, root=None):
    """``gs://BUCKET/PATH`` as ``ROOT/BUCKET/PATH`` (``root``: the selected one, which must be set)."""
    root = root or SELECTED.gcs_root
    rest = path[len(GCS_SCHEME):]
    return os.path.join(root, rest) if rest else root


def local_to_gcs(path, root=None):
    """The ``gs://`` path of a file under ``root`` (the selected one); other paths unchanged."""
    root = root or SELECTED.gcs_root
    if not root:
        return path
    prefix = root if root.endswith("/") else root + "/"
    return GCS_SCHEME + path[len(prefix):] if path.startswith(prefix) else path


def missing_gcs_message(path):
    """What a run without ``--gcs`` says when the program reaches ``path`` on Cloud Storage."""
    return ("{}: Cloud Storage is not reachable under `migrate-tpu run`; run again with --gcs DIR "
            "(or {}=DIR) and gs://BUCKET/PATH is read and written as DIR/BUCKET/PATH".format(path, GCS_VARIABLE))


# --------------------------------------------------------------------------
# What the TPU worker of a Node said
# --------------------------------------------------------------------------

#: The message of an op run on a Node's TPU worker with a local path: the worker's file
#: systems are Cloud Storage's alone (its file system registry knows no scheme '' ).  TF 2
#: eager reports it as the worker's status (tensorflow#39030 and #43186 show TF 2.2 and 2.3
#: errors from the worker without a prefix); TF 1's sessions, whose master ran on the worker,
#: prefixed "From /job:worker/replica:0/task:0:" (tensorflow#32651, #37815: TF 1.14, 1.15).
#: Rule ``local-file-on-node``.
LOCAL_PATH_ON_WORKER = "File system scheme '[local]' not implemented (file: '{path}')"

#: Python in a Node's input pipeline, by the release of the emulated API: (error class, message)
#: (rule ``python-input-on-node``).  TF 2.1 and 2.2 placed the pipeline's ``PyFunc``/
#: ``EagerPyFunc`` on the worker, whose server has no kernel for them (tensorflow#39030 on
#: 2.2.0-rc3, #30818, #24099).  TF 2.2's ``script_ops.py`` already pins them to the client's address
#: space (``ops.device(context.context().host_address_space())``, at v2.2.3 and v2.4.1), but the
#: pipeline's functions did not reach that placement in 2.2 (tensorflow#34346, 2020-02-18: "the
#: issue still exists"; #39030 is 2.2's NotFoundError); from TF 2.3 on the worker, which cannot
#: call back into the client, fails to connect (tensorflow#43186, #43790, #43037: Colab, TF 2.3).
PYTHON_ON_WORKER = {
    "python-input-on-node": ("NotFoundError",
            "No registered '{op}' OpKernel for 'CPU' devices compatible with node {{{{node {op}}}}}\n"
            "\t.  Registered:  <no registered kernels>\n"),
    "python-input-calls-back": ("UnavailableError",
            "failed to connect to all addresses\nAdditional GRPC error information from remote target "
            "/job:localhost/replica:0/task:0/device:CPU:0:\n"
            ':{{"created":"@{now:.9f}","description":"Failed to pick subchannel","file":'
            '"third_party/grpc/src/core/ext/filters/client_channel/client_channel.cc","file_line":3948,'
            '"referenced_errors":[{{"created":"@{now:.9f}","description":"failed to connect to all addresses",'
            '"file":"third_party/grpc/src/core/ext/filters/client_channel/lb_policy/pick_first/pick_first.cc",'
            '"file_line":394,"grpc_status":14}}]}}'),
}


def python_on_worker(op, api_version):
    """``(error class name, message)`` of the Node's worker meeting Python op ``op`` (``PyFunc``,
    ``EagerPyFunc``) under API ``api_version`` ((major, minor))."""
    rule = "python-input-on-node" if holds("python-input-on-node", "{}.{}".format(*api_version)) else "python-input-calls-back"
    error, template = PYTHON_ON_WORKER[rule]
    return error, template.format(op=op, now=time.time())


# --------------------------------------------------------------------------
# The TPU worker's log
# --------------------------------------------------------------------------


def worker_log():
    """The file that plays a TPU Node's worker log for this run (what ran on the TPU host and
    printed, e.g. ``tf.print`` moved there by automatic outside compilation), or None on a TPU
    VM, whose TPU host is the program's own machine.  Not created until written."""
    if not is_node():
        return None
    if SELECTED.worker_log is None:
        SELECTED.worker_log = os.environ.get(WORKER_LOG_VARIABLE) or os.path.join(
            tempfile.gettempdir(), "migrate-tpu-{}".format(_user()), "tpu-worker-{}.log".format(os.getpid()))
    return SELECTED.worker_log


def _user():
    try:
        return str(os.getuid())
    except AttributeError:  # pragma: no cover - Windows
        return "user"


# --------------------------------------------------------------------------
# What the run says
# --------------------------------------------------------------------------


def describe():
    """The banner's line about the machine."""
    machine = SELECTED.machine
    text = "{} (--tpu-env {})".format(machine.says, machine.name)
    if machine.kind == NODE:
        text += ": files on gs:// only and no Python on the TPU worker"
    else:
        text += ": local files and Python input work"
    if SELECTED.gcs_root:
        text += "; gs:// is {}".format(SELECTED.gcs_root)
    return text


def end_lines():
    """What the run says when it ends: where the TPU worker's log went, if anything went there."""
    path = SELECTED.worker_log
    if not path or not os.path.isfile(path) or not os.path.getsize(path):
        return []
    with open(path) as handle:
        count = sum(1 for _ in handle)
    return ["the TPU worker's log (what ran on the TPU Node's host and printed): {} ({} line{})".format(
        path, count, "" if count == 1 else "s")]


#: Notes after a traceback, by the words of the error's text (all of them): what the run cannot
#: say in TensorFlow's words.
_NOTES = (
    (("File system scheme '[local]' not implemented",),
     "on a TPU Node ({}) the TPU worker runs the file ops of checkpoints, SavedModels, summaries and "
     "the input pipeline, and it reaches Cloud Storage only: put the path on gs:// (--gcs DIR of `migrate-tpu run` "
     "and `migrate-tpu verify`, or MIGRATE_TPU_GCS=DIR, stands a local folder in for the buckets), pass "
     "experimental_io_device='/job:localhost' where TF >= 2.3 offers it, or run as on a TPU VM with --tpu-env vm"),
    (("OpKernel for 'CPU' devices compatible with node", "PyFunc"),
     "on a TPU Node ({}) the input pipeline runs on the TPU worker, which has no Python: "
     "Dataset.from_generator, tf.py_function and tf.numpy_function fail there; build the input from "
     "tf.data ops (files on gs://), or run as on a TPU VM with --tpu-env vm"),
    (("failed to connect to all addresses",),
     "on a TPU Node ({}) the input pipeline runs on the TPU worker, which cannot call back into the "
     "client's Python: Dataset.from_generator, tf.py_function and tf.numpy_function fail there; build "
     "the input from tf.data ops (files on gs://), or run as on a TPU VM with --tpu-env vm"),
)


def node_refusal(text, machine_name=None):
    """What to do about an error of a TPU Node's worker (``text``: the error's), or None for any
    other error; ``machine_name`` is the ``--tpu-env`` that was emulated (default: the default)."""
    for words, note in _NOTES:
        if all(word in text for word in words):
            return note.format("--tpu-env " + (machine_name or DEFAULT_MACHINE))
    return None


def note_for(text):
    """A note to print after an error whose text is ``text`` in a run on a Node, or None."""
    return node_refusal(text, SELECTED.machine.name) if is_node() else None
