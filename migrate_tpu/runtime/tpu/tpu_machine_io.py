"""TensorFlow's file and input entry points on the emulated machine (:mod:`tpu_machine` says
which machine; this module makes TensorFlow follow it).

Where TensorFlow reaches a file, three layers:

* **the client's Python** (``tf.io.gfile``, ``tf.io.TFRecordWriter``, ``tf.compat.v1.io.
  tf_record_iterator``, ``tf.train.load_checkpoint``, and what Checkpoint, SavedModel and Keras
  write from Python: the ``checkpoint`` state file, ``saved_model.pb``): the C++ wrappers that
  ``file_io.py``, ``tf_record.py`` and ``py_checkpoint_reader.py`` call (:data:`CLIENT_IO`).
  ``gs://`` becomes the folder of ``--gcs``, and a glob's answer is given back in ``gs://``;
* **ops that read or write files** (``SaveV2``, ``RestoreV2``, ``MergeV2Checkpoints``,
  ``ReadFile``, ``MatchingFiles``, ``TFRecordDataset``, ``CreateSummaryFileWriter``, ...;
  :data:`PATH_OPS`): their Python op functions, wherever a module holds them.  ``gs://`` is
  mapped; on a Node's TPU worker a local path gets a scheme no file system has
  (:data:`WORKER_SCHEME`), so the op fails when it runs, with TensorFlow's own error class
  and context, and the message is put back in the worker's words;
* **the input pipeline that a TPUStrategy distributes**, which a Node runs on its TPU worker:
  :mod:`migrate_tpu.runtime.tpu.tpu_worker_input`.

Which ops run on the worker: on a Node, once the program connected to the TPU
(``experimental_connect_to_cluster`` entered the worker's device scope), all of them, but for
those under ``tf.device('/job:localhost...')`` and the checkpoint IO of
``experimental_io_device='/job:localhost'`` (TF >= 2.3); the functions that
``distribute_datasets_from_function`` calls run there too (:class:`Placed`).  Errors reach Python through
``core._status_to_exception`` and ``execute.execute`` (eager ops, ``tf.function`` s,
iterators), where the messages of these schemes are rewritten.
"""

from __future__ import absolute_import, division, print_function

import functools
import inspect
import os
import re
import sys
import threading
from typing import Any, Dict

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import errors_impl, ops

from migrate_tpu.runtime import patches
from migrate_tpu.runtime.tpu import tpu_machine
from migrate_tpu.runtime.tpu.tpu_system import api_modules, implementation_module

#: Schemes that no file system has: TensorFlow refuses them with ``UnimplementedError: File system
#: scheme 'S' not implemented (file: 'S://...')``, which is rewritten (:func:`_in_the_workers_words`).
WORKER_SCHEME = "tpuworker.local"      # a local path, read or written on a Node's TPU worker
UNMAPPED_GCS_SCHEME = "gcs.unmapped"  # gs:// when no --gcs names a folder for it

#: Ops that read or write the files their string inputs name, by Python op function: (module,
#: function, path arguments, whether it writes, whether its output is paths).  The ops are those
#: of the op registries of TF 2.1.0, 2.4.1 and 2.21 with such inputs (tests/runtime/
#: test_tpu_machine_io.py lists the registry on each interpreter against this table).
PATH_OPS = (
    ("gen_io_ops", "save_v2", ("prefix",), True, False),
    ("gen_io_ops", "restore_v2", ("prefix",), False, False),
    ("gen_io_ops", "merge_v2_checkpoints", ("checkpoint_prefixes", "destination_prefix"), True, False),
    ("gen_io_ops", "save", ("filename",), True, False),
    ("gen_io_ops", "save_slices", ("filename",), True, False),
    ("gen_io_ops", "restore", ("file_pattern",), False, False),
    ("gen_io_ops", "restore_slice", ("file_pattern",), False, False),
    ("gen_io_ops", "read_file", ("filename",), False, False),
    ("gen_io_ops", "write_file", ("filename",), True, False),
    ("gen_io_ops", "matching_files", ("pattern",), False, True),
    ("gen_dataset_ops", "tf_record_dataset", ("filenames",), False, False),
    ("gen_dataset_ops", "tf_record_dataset_v2", ("filenames",), False, False),
    ("gen_dataset_ops", "text_line_dataset", ("filenames",), False, False),
    ("gen_dataset_ops", "fixed_length_record_dataset", ("filenames",), False, False),
    ("gen_dataset_ops", "fixed_length_record_dataset_v2", ("filenames",), False, False),
    ("gen_dataset_ops", "cache_dataset", ("filename",), True, False),
    ("gen_dataset_ops", "cache_dataset_v2", ("filename",), True, False),
    ("gen_experimental_dataset_ops", "csv_dataset", ("filenames",), False, False),
    ("gen_experimental_dataset_ops", "csv_dataset_v2", ("filenames",), False, False),
    ("gen_experimental_dataset_ops", "experimental_csv_dataset", ("filenames",), False, False),
    ("gen_experimental_dataset_ops", "lmdb_dataset", ("filenames",), False, False),
    ("gen_experimental_dataset_ops", "experimental_lmdb_dataset", ("filenames",), False, False),
    ("gen_experimental_dataset_ops", "dataset_to_tf_record", ("filename",), True, False),
    ("gen_experimental_dataset_ops", "experimental_dataset_to_tf_record", ("filename",), True, False),
    ("gen_experimental_dataset_ops", "matching_files_dataset", ("patterns",), False, False),
    ("gen_experimental_dataset_ops", "experimental_matching_files_dataset", ("patterns",), False, False),
    ("gen_experimental_dataset_ops", "save_dataset", ("path",), True, False),
    ("gen_experimental_dataset_ops", "save_dataset_v2", ("path",), True, False),
    ("gen_experimental_dataset_ops", "load_dataset", ("path",), False, False),
    ("gen_experimental_dataset_ops", "snapshot_dataset", ("path",), True, False),
    ("gen_experimental_dataset_ops", "snapshot_dataset_v2", ("path",), True, False),
    ("gen_summary_ops", "create_summary_file_writer", ("logdir",), True, False),
    ("gen_lookup_ops", "initialize_table_from_text_file", ("filename",), False, False),
    ("gen_lookup_ops", "initialize_table_from_text_file_v2", ("filename",), False, False),
    ("gen_checkpoint_ops", "load_and_remap_matrix", ("ckpt_path",), False, False),
    ("gen_checkpoint_ops", "generate_vocab_remapping", ("new_vocab_file", "old_vocab_file"), False, False),
)

#: The C++ file functions the client's Python calls, by the module that calls them: (module of
#: TensorFlow, the name under which it holds its wrapper module, function, positions of paths,
#: whether it writes, whether it returns paths).  TF 2.1 calls them in ``pywrap_tensorflow``,
#: TF 2.4 and 2.21 in ``_pywrap_file_io`` and ``_pywrap_record_io``; checked on each interpreter
#: by tests/runtime/programs/gcs_entry_points.py.
CLIENT_IO = tuple(
    [("lib.io.file_io", holder, name, positions, writes, returns)
     for holder in ("_pywrap_file_io", "pywrap_tensorflow")
     for name, positions, writes, returns in (
         ("FileExists", (0,), False, False), ("DeleteFile", (0,), False, False),
         ("GetMatchingFiles", (0,), False, True), ("CreateDir", (0,), True, False),
         ("RecursivelyCreateDir", (0,), True, False), ("CopyFile", (0, 1), True, False),
         ("RenameFile", (0, 1), True, False), ("DeleteRecursively", (0,), False, False),
         ("IsDirectory", (0,), False, False), ("HasAtomicMove", (0,), False, False),
         ("GetChildren", (0,), False, False), ("Stat", (0,), False, False),
         ("BufferedInputStream", (0,), False, False), ("CreateBufferedInputStream", (0,), False, False),
         ("WritableFile", (0,), True, False), ("CreateWritableFile", (0,), True, False))] +
    [("lib.io.tf_record", holder, name, (0,), writes, False)
     for holder in ("_pywrap_record_io", "pywrap_tensorflow")
     for name, writes in (("RecordIterator", False), ("RandomRecordReader", False),
                          ("PyRecordReader_New", False), ("PyRecordWriter_New", True))] +
    # TF >= 2.9's SavedModel: its metrics and fingerprint read the exported folder from C++
    [("saved_model.save", "pywrap_saved_model", "Save", (0,), False, False)] +
    [("saved_model.fingerprinting_utils", "fingerprinting_pywrap", name, (0,), False, False)
     for name in ("CreateFingerprintDef", "SingleprintFromSM", "SingleprintFromFP")] +
    [("saved_model.fingerprinting", "fingerprinting_pywrap", "ReadSavedModelFingerprint", (0,), False, False)] +
    # event files written from Python: tf.compat.v1.summary.FileWriter, TF 2.1's profiler (Keras's TensorBoard)
    [(module, "_pywrap_events_writer", "EventsWriter", (0,), True, False)
     for module in ("summary.writer.event_file_writer", "eager.profiler")])

#: Python functions of TensorFlow that hand a path to C++ the client runs: (module, function, path
#: arguments, whether it writes).  ``NewCheckpointReader`` reads a checkpoint's object graph for
#: ``Checkpoint.restore``, ``tf.train.load_checkpoint`` and Keras's ``load_weights``; the
#: profiler (TF >= 2.2) writes Keras TensorBoard's traces.
CLIENT_FUNCTIONS = (
    ("training.py_checkpoint_reader", "NewCheckpointReader", ("filepattern",), False),
    ("profiler.profiler_v2", "start", ("logdir",), True),
)

CLIENT, WORKER = "client", "worker"

_LOCAL = threading.local()


class _Connection(object):
    worker = False  # the program connected to a Node's TPU worker, whose device scope it entered


_CONNECTION = _Connection()


# --------------------------------------------------------------------------
# Where an op runs
# --------------------------------------------------------------------------


def _scopes():
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    return stack


class Placed(object):
    """A context in which ops run on the client or the worker, around ``inner`` (if any)."""

    def __init__(self, where, inner=None):
        self.where, self.inner = where, inner

    def __enter__(self):
        _scopes().append(self.where)
        return self.inner.__enter__() if self.inner is not None else self

    def __exit__(self, *exc_info):
        try:
            return self.inner.__exit__(*exc_info) if self.inner is not None else False
        finally:
            _scopes().pop()


def on_worker():
    """Whether a file op built now runs on a TPU Node's worker."""
    if not tpu_machine.is_node():
        return False
    stack = _scopes()
    if stack:
        return stack[-1] == WORKER
    return _CONNECTION.worker


def _names_job(device, job):
    """Whether a device (a string or a DeviceSpec) names ``job``."""
    if isinstance(device, str):
        return "/job:{}".format(job) in device or device.startswith("job:{}".format(job))
    return getattr(device, "job", None) == job


def _placement_of(device):
    if _names_job(device, "localhost"):
        return CLIENT
    if _names_job(device, "worker"):
        return WORKER
    return None


# --------------------------------------------------------------------------
# Paths
# --------------------------------------------------------------------------


def _make_parent(path):
    folder = os.path.dirname(path)
    if folder and not os.path.isdir(folder):
        try:
            os.makedirs(folder)
        except OSError:
            pass  # a race, or what TensorFlow reports itself


def op_path(path, worker, writes=False):
    """The path an op is given for the program's ``path`` (a str); ``worker``: the op runs on a
    TPU Node's worker."""
    if tpu_machine.is_gcs(path):
        if tpu_machine.SELECTED.gcs_root is None:
            return UNMAPPED_GCS_SCHEME + "://" + path[len(tpu_machine.GCS_SCHEME):]
        local = tpu_machine.gcs_to_local(path)
        if writes:
            _make_parent(local)
        return local
    if worker and path and not tpu_machine.has_scheme(path):
        return WORKER_SCHEME + "://" + path
    return path


def client_path(path, writes=False):
    """The path the client's C++ file functions are given for ``path`` (str or bytes)."""
    text = path.decode("utf-8", "surrogateescape") if isinstance(path, bytes) else path
    if not isinstance(text, str) or not tpu_machine.is_gcs(text):
        return path
    if tpu_machine.SELECTED.gcs_root is None:
        raise errors_impl.UnimplementedError(None, None, tpu_machine.missing_gcs_message(text))
    local = tpu_machine.gcs_to_local(text)
    if writes:
        _make_parent(local)
    return local.encode("utf-8", "surrogateescape") if isinstance(path, bytes) else local


def _map_strings(value, change):
    """``value`` (str, bytes, a nested list or a NumPy array of them) with ``change`` applied
    to each string, or ``value`` itself where nothing changed."""
    if isinstance(value, bytes):
        text = value.decode("utf-8", "surrogateescape")
        new = change(text)
        return value if new == text else new.encode("utf-8", "surrogateescape")
    if isinstance(value, str):
        return change(value)
    if isinstance(value, (list, tuple)):
        items = [_map_strings(item, change) for item in value]
        return value if all(a is b for a, b in zip(items, value)) else type(value)(items)
    if isinstance(value, np.ndarray) and value.dtype.kind in "SUO":
        flat = [_map_strings(item, change) for item in value.ravel().tolist()]
        if all(a is b or a == b for a, b in zip(flat, value.ravel().tolist())):
            return value
        return np.array(flat, dtype=object).reshape(value.shape)
    return value


def _graph_path(tensor, worker):
    """Ops that map a symbolic path tensor as :func:`op_path` maps a str."""
    root = tpu_machine.SELECTED.gcs_root
    target = root.replace("\\", "\\\\") + "/" if root else UNMAPPED_GCS_SCHEME + "://"
    gcs = tf.strings.regex_full_match(tensor, "gs://.*")
    mapped = tf.where(gcs, tf.strings.regex_replace(tensor, "^gs://", target), tensor)
    if worker:
        local = tf.logical_not(tf.strings.regex_full_match(tensor, "[a-zA-Z][0-9a-zA-Z.]*://.*|"))
        mapped = tf.where(local, tf.strings.join([WORKER_SCHEME + "://", tensor]), mapped)
    return mapped


def _is_symbolic(value):
    return isinstance(value, tf.Tensor) and not isinstance(value, ops.EagerTensor)


def map_op_input(value, worker, writes=False):
    """An op's path input as the emulated machine gives it to the op (a str, bytes, a tensor, or
    a list of them: ``MergeV2Checkpoints`` is given its shards' prefixes as a list of tensors)."""
    if isinstance(value, (list, tuple)) and any(isinstance(item, tf.Tensor) for item in value):
        items = [map_op_input(item, worker, writes) for item in value]
        return value if all(a is b for a, b in zip(items, value)) else type(value)(items)
    if _is_symbolic(value):
        return _graph_path(value, worker) if value.dtype == tf.string else value
    if isinstance(value, tf.Tensor):
        if value.dtype != tf.string:
            return value
        array = np.asarray(value.numpy(), dtype=object)
        mapped = _map_strings(array, lambda path: op_path(path, worker, writes))
        return value if mapped is array else tf.constant(mapped, dtype=tf.string)
    return _map_strings(value, lambda path: op_path(path, worker, writes))


def _to_gcs(value):
    """Paths under the folder of ``--gcs`` in an op's output, in gs:// again."""
    root = tpu_machine.SELECTED.gcs_root
    if root is None or not isinstance(value, tf.Tensor):
        return value
    if _is_symbolic(value):
        return tf.strings.regex_replace(value, "^" + re.escape(root) + "/", tpu_machine.GCS_SCHEME)
    array = np.asarray(value.numpy(), dtype=object)
    mapped = _map_strings(array, tpu_machine.local_to_gcs)
    return value if mapped is array else tf.constant(mapped, dtype=tf.string)


# --------------------------------------------------------------------------
# The wrappers
# --------------------------------------------------------------------------


def _path_op(original, names, writes, returns_paths):
    signature = inspect.signature(original)

    @functools.wraps(original)
    def path_op(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs)
        worker = on_worker()
        for name in names:
            if name in bound.arguments:
                bound.arguments[name] = map_op_input(bound.arguments[name], worker, writes)
        result = original(*bound.args, **bound.kwargs)
        return _to_gcs(result) if returns_paths else result
    return path_op


def _client_io(original, positions, writes, returns_paths):
    @functools.wraps(original, updated=())  # a C++ class's dict stays its own
    def client_io(*args, **kwargs):
        given = list(args)
        for position in positions:
            if position < len(given):
                given[position] = client_path(given[position], writes and position == positions[-1])
        result = original(*given, **kwargs)
        if returns_paths and tpu_machine.SELECTED.gcs_root and isinstance(result, (list, tuple)):
            found = [_map_strings(item, tpu_machine.local_to_gcs) for item in result]
            if args and _in_a_bucket(args[0]):
                # Cloud Storage lists a bucket's names in lexicographic order (the local folder
                # that stands in for it, in directory order): a program that splits its files
                # by position gets the split it had on GCS
                found.sort()
            return type(result)(found)
        return result
    return client_io


def _in_a_bucket(path):
    text = path.decode("utf-8", "replace") if isinstance(path, bytes) else path
    return isinstance(text, str) and text.startswith(tpu_machine.GCS_SCHEME)


def _client_function(original, names, writes):
    signature = inspect.signature(original)

    @functools.wraps(original)
    def client_function(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs)
        for name in names:
            if name in bound.arguments:
                bound.arguments[name] = client_path(bound.arguments[name], writes)
        return original(*bound.args, **bound.kwargs)
    return client_function


def _set(owner, name, value):
    patches.patch("tpu_machine_io", owner, name, value)


def rebind_everywhere(replacements):
    """:func:`_rebind_everywhere` for another part of the emulation (undone by :func:`uninstall`)."""
    _rebind_everywhere(replacements)


def _rebind_everywhere(replacements):
    """Put each wrapper where a module of TensorFlow or Keras holds its original (``gen_io_ops``
    itself, ``io_ops`` that star-imports it, ``tf.io``, ...)."""
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith(("tensorflow", "tf_keras", "keras")):
            continue
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for attribute, value in list(namespace.items()):
            hit = replacements.get(id(value))
            if hit is not None and hit[0] is value:
                patches.patch("tpu_machine_io", module, attribute, hit[1])


# --------------------------------------------------------------------------
# Errors in the worker's words
# --------------------------------------------------------------------------

_REFUSED = re.compile(r"File system scheme '(" + re.escape(WORKER_SCHEME) + "|" + re.escape(UNMAPPED_GCS_SCHEME)
                      + r")' not implemented \(file: '\1://([^']*)'\)")
_CLIENT_DEVICE_IN_NAMES = "device_/job:localhost/replica:0/task:0/device:CPU:0"


def _in_the_workers_words(text):
    """A TensorFlow error text in which a scheme of this module was refused, as the TPU worker
    (or, for gs:// without --gcs, the run) says it."""
    def reword(match):
        scheme, rest = match.groups()
        if scheme == WORKER_SCHEME:
            return tpu_machine.LOCAL_PATH_ON_WORKER.format(path=rest)
        return tpu_machine.missing_gcs_message(tpu_machine.GCS_SCHEME + rest)
    on_the_worker = WORKER_SCHEME in text
    text = _REFUSED.sub(reword, text)
    if on_the_worker:  # "Failed to get matching files on tpuworker.local://...", TF 2.21's function names
        text = text.replace(WORKER_SCHEME + "://", "").replace(
            _CLIENT_DEVICE_IN_NAMES, _CLIENT_DEVICE_IN_NAMES.replace("localhost", "worker"))
    return text


def reworded(exception):
    """``exception`` (an ``OpError``) in the worker's words, or None when it needs none."""
    text = getattr(exception, "message", "")
    if not isinstance(text, str) or (WORKER_SCHEME not in text and UNMAPPED_GCS_SCHEME not in text):
        return None
    return type(exception)(getattr(exception, "node_def", None), getattr(exception, "op", None),
                           _in_the_workers_words(text))


def _status_to_exception(original):
    """``core._status_to_exception``, which makes the errors of ops' fast path and of iterators,
    rewording them."""
    @functools.wraps(original)
    def status_to_exception(*args, **kwargs):
        exception = original(*args, **kwargs)
        return reworded(exception) or exception
    return status_to_exception


def _rewording_errors(original):
    """``execute.execute`` (ops off the fast path, ``tf.function`` calls), whose C++ raises the
    error itself, rewording it."""
    @functools.wraps(original)
    def execute(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except errors_impl.OpError as error:
            new = reworded(error)
            if new is None:
                raise
            raise new.with_traceback(error.__traceback__) from None
    return execute


# --------------------------------------------------------------------------
# Where the program puts its ops: tf.device, experimental_io_device, the connection
# --------------------------------------------------------------------------


def _device(original):
    @functools.wraps(original)
    def device(device_name):
        inner = original(device_name)
        where = _placement_of(device_name)
        return inner if where is None else Placed(where, inner)
    return device


def _saves_on_io_device(original):
    """``MultiDeviceSaver.save``/``restore``, whose ``options.experimental_io_device`` (TF >= 2.3)
    names the device that reads and writes the files."""
    def save_or_restore(self, file_prefix, *args, **kwargs):
        options = kwargs.get("options", args[0] if args else None)
        where = _placement_of(getattr(options, "experimental_io_device", None) or "")
        if where is None:
            return original(self, file_prefix, *args, **kwargs)
        with Placed(where):
            return original(self, file_prefix, *args, **kwargs)
    save_or_restore.__doc__ = original.__doc__
    return save_or_restore


def _connects(original):
    """``experimental_connect_to_cluster`` that notes whether the program now runs its ops on the
    TPU worker: connected to a cluster resolver with ``make_master_device_default`` (the default),
    ``connect_to_cluster`` enters the master's device scope (``python/eager/remote.py``, v2.1.0
    to 2.21).  On a Node the master is the TPU worker, whatever the resolver was given: the
    emulated resolver also resolves ``tpu=''`` (TF 2.1: a TPU on this host, ``master() == ''``),
    which on a Node finds no TPU at all."""
    def experimental_connect_to_cluster(cluster_spec_or_resolver, *args, **kwargs):
        result = original(cluster_spec_or_resolver, *args, **kwargs)
        names = ("job_name", "task_index", "protocol", "make_master_device_default")
        default = dict(zip(names, args)).get("make_master_device_default", kwargs.get("make_master_device_default", True))
        resolver = callable(getattr(cluster_spec_or_resolver, "master", None))
        _CONNECTION.worker = _CONNECTION.worker or bool(resolver and default)
        return result
    experimental_connect_to_cluster.__doc__ = original.__doc__
    return experimental_connect_to_cluster


# --------------------------------------------------------------------------
# Installing
# --------------------------------------------------------------------------


def _install_file_functions():
    replacements = {}
    for module_name, function_name, names, writes, returns_paths in PATH_OPS:
        module = implementation_module("ops." + module_name)
        original = getattr(module, function_name, None) if module is not None else None
        if original is not None:
            replacements[id(original)] = (original, _path_op(original, names, writes, returns_paths))
    for module_name, function_name, names, writes in CLIENT_FUNCTIONS:
        module = implementation_module(module_name)
        original = getattr(module, function_name, None) if module is not None else None
        if original is not None:
            replacements[id(original)] = (original, _client_function(original, names, writes))
    _rebind_everywhere(replacements)
    for module_name, holder_name, name, positions, writes, returns_paths in CLIENT_IO:
        holder = getattr(implementation_module(module_name), holder_name, None)
        original = getattr(holder, name, None) if holder is not None else None
        if original is not None and not hasattr(original, "__wrapped__"):  # one holder, two callers
            _set(holder, name, _client_io(original, positions, writes, returns_paths))
    tf_record = implementation_module("lib.io.tf_record")
    writer = getattr(tf_record, "TFRecordWriter", None)
    if writer is not None and "__init__" in writer.__dict__:  # TF >= 2.2 subclasses the C++ writer
        init = writer.__dict__["__init__"]
        _set(writer, "__init__", lambda self, path, *args, **kwargs: init(self, client_path(path, True), *args, **kwargs))


def install():
    """Make TensorFlow's file entry points follow :mod:`tpu_machine`.  Idempotent."""
    if patches.patched_by("tpu_machine_io"):
        return
    _install_file_functions()
    core = implementation_module("eager.core")
    _set(core, "_status_to_exception", _status_to_exception(core._status_to_exception))
    execute = implementation_module("eager.execute")
    wrapped: Dict[int, Any] = {}
    for name in ("quick_execute", "execute"):
        original = execute.__dict__[name]
        wrapped.setdefault(id(original), _rewording_errors(original))
        _set(execute, name, wrapped[id(original)])
    for module in api_modules(""):
        if getattr(module, "device", None) is not None:
            _set(module, "device", _device(module.device))
    for module in api_modules("config"):
        if getattr(module, "experimental_connect_to_cluster", None) is not None:
            _set(module, "experimental_connect_to_cluster", _connects(module.experimental_connect_to_cluster))
    for name in ("training.saving.functional_saver", "checkpoint.functional_saver"):
        saver = getattr(implementation_module(name), "MultiDeviceSaver", None) if implementation_module(name) is not None else None
        for method in ("save", "restore"):
            if saver is not None and method in saver.__dict__:
                _set(saver, method, _saves_on_io_device(saver.__dict__[method]))


def uninstall():
    """Put back what :func:`install` replaced."""
    patches.undo("tpu_machine_io")
    _CONNECTION.worker = False
