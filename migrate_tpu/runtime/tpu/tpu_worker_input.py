"""The input pipeline that an emulated TPUStrategy distributes, on the emulated machine: a TPU
Node runs it on its TPU worker, which has no Python of the program and no disk but Cloud
Storage (:mod:`migrate_tpu.runtime.tpu.tpu_machine`); a TPU VM on the program's own machine.

``experimental_distribute_dataset``, ``experimental_distribute_datasets_from_function`` and
``distribute_datasets_from_function`` of the emulated strategies (Keras ``fit`` calls the first)
look at the dataset they are given (:func:`what_fails_on_the_worker`): on a Node, Python ops in
it and local files it reads fail with the worker's error where the program starts to iterate
the distributed dataset.  The functions ``distribute_datasets_from_function`` calls make their
datasets on the worker (their file ops then fail by themselves, :mod:`tpu_machine_io`).
"""

from __future__ import absolute_import, division, print_function

import os
from typing import Dict, Set

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import errors_impl, ops

from migrate_tpu.runtime import patches
from migrate_tpu.runtime.tpu import tpu_machine
from migrate_tpu.runtime.tpu.tpu_machine_io import CLIENT, WORKER, Placed, on_worker
from migrate_tpu.runtime.tpu.tpu_system import api_version

#: Ops of Python (``py_func``, ``py_function``, ``numpy_function``, ``Dataset.from_generator``).
PYTHON_OPS = ("PyFunc", "EagerPyFunc", "PyFuncStateless")
#: Dataset ops that read the files their first input names (a reader inside a dataset function).
READER_OPS = ("TFRecordDataset", "TFRecordDatasetV2", "TextLineDataset", "FixedLengthRecordDataset",
              "FixedLengthRecordDatasetV2", "CSVDataset", "CSVDatasetV2", "ExperimentalCSVDataset")
#: The strategy methods that distribute a dataset, and how each is wrapped (below).
DISTRIBUTING = ("experimental_distribute_dataset", "experimental_distribute_datasets_from_function",
                "distribute_datasets_from_function")



def _upstream(dataset):
    """``dataset`` and every dataset it reads from (``_inputs()``), each once."""
    seen, todo = set(), [dataset]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        try:
            todo.extend(current._inputs())
        except Exception:  # a dataset class of its own that says nothing of its inputs
            pass


def _function_ops(dataset):
    """The op types of ``dataset``'s own functions (map, flat_map, a generator's), nested
    functions included."""
    found: Set[str] = set()
    for wrapper in getattr(dataset, "_functions", lambda: [])():
        graph = getattr(getattr(wrapper, "function", None), "graph", None)
        if graph is None:
            continue
        definition = graph.as_graph_def()
        found.update(node.op for node in definition.node)
        found.update(node.op for function in definition.library.function for node in function.node_def)
    return found


def _strings_of(value):
    """The strings a tensor, a dataset of tensors (``_tensors``) or a list holds."""
    if hasattr(value, "_tensors"):
        value = list(value._tensors)
    values = value if isinstance(value, (list, tuple)) else [value]
    for item in values:
        if isinstance(item, ops.EagerTensor) and item.dtype == tf.string:
            for text in np.array(item.numpy(), dtype=object).ravel().tolist():
                yield text.decode("utf-8", "surrogateescape") if isinstance(text, bytes) else text


def _local_file(path, must_exist=False):
    """Whether ``path`` names a file of the client's disk (not a bucket, not under --gcs)."""
    if not path or tpu_machine.has_scheme(path) or tpu_machine.local_to_gcs(path) != path:
        return False
    return os.path.exists(path) or not must_exist


def what_fails_on_the_worker(dataset):
    """``(error class name, message)`` of the first thing in ``dataset`` that a Node's TPU worker
    could not run (Python, a local file), or None."""
    datasets = list(_upstream(dataset))
    python = python_in(dataset)
    if python is not None:
        return python
    readers_in_functions = any(op in _function_ops(current) for current in datasets for op in READER_OPS)
    for current in datasets:
        for path in _strings_of(current._filenames) if hasattr(current, "_filenames") else ():  # a reader
            if _local_file(path):
                return "UnimplementedError", tpu_machine.LOCAL_PATH_ON_WORKER.format(path=path)
    if readers_in_functions:  # list_files(...).interleave(TFRecordDataset): the names are data
        for current in datasets:
            for path in _strings_of(current) if hasattr(current, "_tensors") else ():
                if _local_file(path, must_exist=True):
                    return "UnimplementedError", tpu_machine.LOCAL_PATH_ON_WORKER.format(path=path)
    return None


_FAILING_CLASSES: Dict[type, type] = {}  # a distributed dataset's class -> its subclass that fails when iterated


def _iterate_on_the_worker(self):
    error, message = self._migrate_tpu_failure
    raise getattr(errors_impl, error)(None, None, message)


def _failing_when_iterated(distributed, failure):
    """``distributed`` (what ``experimental_distribute_dataset`` made) raising ``failure`` (error
    class name, message) where the program starts to iterate it, as the worker's error came with
    the pipeline's first element.  Not from inside the pipeline: TensorFlow's MultiDeviceIterator
    gives replicas ``End of sequence`` instead of an error its host iterator met when its repeat
    or its buffers end first (seen on TF 2.1.0 and 2.21: a nondeterministic OutOfRangeError)."""
    klass = type(distributed)
    failing = _FAILING_CLASSES.get(klass)
    if failing is None:
        failing = _FAILING_CLASSES[klass] = type(klass.__name__, (klass,), {
            "__iter__": _iterate_on_the_worker, "__module__": klass.__module__, "__doc__": klass.__doc__})
    distributed._migrate_tpu_failure = failure
    distributed.__class__ = failing
    return distributed


def _distributes_dataset(original):
    def distribute_dataset(self, dataset, *args, **kwargs):
        distributed = original(self, dataset, *args, **kwargs)
        failure = what_fails_on_the_worker(dataset) if tpu_machine.is_node() else None
        return distributed if failure is None else _failing_when_iterated(distributed, failure)
    distribute_dataset.__doc__ = original.__doc__
    return distribute_dataset


def _distributes_datasets_from_function(original):
    def distribute_datasets_from_function(self, dataset_fn, *args, **kwargs):
        failures = []

        def on_the_worker(*fn_args, **fn_kwargs):
            with Placed(WORKER if tpu_machine.is_node() else CLIENT):
                dataset = dataset_fn(*fn_args, **fn_kwargs)
            failure = what_fails_on_the_worker(dataset) if tpu_machine.is_node() else None
            if failure is not None:
                failures.append(failure)
            return dataset
        distributed = original(self, on_the_worker, *args, **kwargs)
        return _failing_when_iterated(distributed, failures[0]) if failures else distributed
    distribute_datasets_from_function.__doc__ = original.__doc__
    return distribute_datasets_from_function


def python_in(dataset):
    """``(error class name, message)`` of a Node's worker meeting the first Python op of
    ``dataset`` (a generator's, a ``py_function`` in a map), or None."""
    for current in _upstream(dataset):
        found = _function_ops(current)
        for op in PYTHON_OPS:
            if op in found:
                return tpu_machine.python_on_worker(op, api_version())
    return None


_ITER_NAME = "__iter__"  # set on the class by name: the type checkers know no __iter__ on a type


def _iterated_where_it_runs(original):
    """``Dataset.__iter__``: a dataset iterated eagerly once the program connected to a Node's TPU
    worker is iterated there (``connect_to_cluster`` made the worker the default device:
    ``eager/remote.py``, v2.1.0 to 2.21), where its Python (``Dataset.from_generator``) cannot
    run: TF 2.1's worker has no kernel for it, later ones cannot call back into the client."""
    def __iter__(self):
        if tf.executing_eagerly() and on_worker():
            failure = python_in(self)
            if failure is not None:
                error, message = failure
                raise getattr(errors_impl, error)(None, None, message)
        return original(self)
    __iter__.__doc__ = getattr(original, "__doc__", None)
    return __iter__


def install(emulated_strategy_class):
    """The emulated TPUStrategies (subclasses of ``emulated_strategy_class``) distribute their
    input on the machine; only the methods the running TensorFlow has.  Idempotent."""
    if patches.patched_by("tpu_worker_input"):
        return
    from tensorflow.python.data.ops import dataset_ops
    dataset_class = dataset_ops.DatasetV2
    patches.patch("tpu_worker_input", dataset_class, _ITER_NAME, _iterated_where_it_runs(dataset_class.__dict__[_ITER_NAME]))
    base = tf.distribute.MirroredStrategy
    for name in DISTRIBUTING:
        if hasattr(base, name) and name not in emulated_strategy_class.__dict__:
            wrap = _distributes_dataset if name == "experimental_distribute_dataset" else _distributes_datasets_from_function
            patches.patch("tpu_worker_input", emulated_strategy_class, name, wrap(_next_after(emulated_strategy_class, name)))


def _next_after(klass, name):
    """``name`` as ``super(klass, self)`` finds it, for instances of ``klass``'s subclasses."""
    def call_next(self, *args, **kwargs):
        return getattr(super(klass, self), name)(*args, **kwargs)
    return call_next


def uninstall():
    """Take back what :func:`install` added."""
    patches.undo("tpu_worker_input")
