"""Record what a program computed, step by step, for ``migrate-tpu verify``.

Switched on by the runner when ``MIGRATE_TPU_RECORD`` names a file (``verify``
sets it, with ``MIGRATE_TPU_RECORD_STEPS`` and ``MIGRATE_TPU_SEED``).  Nothing is
scraped from stdout: the ``tf.distribute`` strategy classes and ``tf.function``
are wrapped where TensorFlow defines them (their base classes, so the emulated
strategies and real ones alike record; :mod:`migrate_tpu.runtime.record.wrappers`), and
what they hand back to Python is written down.

A *step* is one outermost call, made eagerly, of ``run`` /
``experimental_run_v2`` / compat.v1 ``experimental_run``, or of a
``tf.function`` whose trace called one of those (a Keras training execution is
such a function).  Steps are numbered from 1.  Recorded:

* each step's returned values (per replica), and the values returned by
  ``reduce`` / ``gather`` / ``experimental_local_results`` called from the
  user's code, each with the user's source ``file:line``;
* Keras ``fit`` history, ``evaluate`` results and ``predict`` outputs;
* at the end, or at step N (``MIGRATE_TPU_RECORD_STEPS``, after which the
  program is stopped by :class:`StopAfterSteps`), every variable created under
  a strategy's scope while recording, held from its creation on (whether or not
  the program still holds it then): name, shape, dtype and each replica's value;
* how many times each of the user's ``tf.function`` s was traced, in total and
  per step;
* the exit status and the uncaught exception.

The record is JSON: a small array as ``{"dtype", "shape", "value"}`` with the value a
nested list; a larger one (more than :data:`INLINE_NUMBERS` numbers) as ``{"dtype",
"shape", "blob": [offset, bytes], "sha1"}``, its bytes (little-endian, C order) in a
binary file beside the record (``RECORD.bin``, named in the record's ``blob_file``), each
distinct content stored once (the replicas of a mirrored variable hold one value).  Both
are written once, atomically, when the program ends.

Python 3.7 syntax; TensorFlow is imported only inside :func:`install` and later.
"""

from __future__ import absolute_import, division, print_function

import gc
import hashlib
import json
import os
import random
import sys
import threading
import time
import traceback
from typing import Any, Dict, List, Set

from migrate_tpu.runtime import patches
from migrate_tpu.runtime.record import lines_ran, wrappers

RECORD_VARIABLE = "MIGRATE_TPU_RECORD"
STEPS_VARIABLE = "MIGRATE_TPU_RECORD_STEPS"
SEED_VARIABLE = "MIGRATE_TPU_SEED"
#: A JSON file ``{file name as code objects carry it: [lines]}``: the recorder notes which of
#: those lines ran (verify's coverage of the migrated lines).
WATCH_VARIABLE = "MIGRATE_TPU_WATCH_LINES"
# verify's runs that remove nondeterminism and measure a comparison's power (power.py): names verify reads here
from migrate_tpu.runtime.record.power import ONE_THREAD_VARIABLE, PERTURB_VARIABLE  # noqa: E402,F401
DEFAULT_SEED = 0

#: Arrays of up to this many numbers are written into the JSON record; larger ones as bytes.
INLINE_NUMBERS = 64
# numpy dtype name -> what the blob holds; verify reads it back with the struct module
_BLOB_DTYPES = frozenset({"float16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                          "int64", "uint64", "bool"})


class StopAfterSteps(BaseException):
    """Raised after the last step asked for; the runner ends the program cleanly.

    A BaseException so that a script's ``except Exception`` does not swallow it."""


class _Blobs(object):
    """The binary file beside a record: each distinct array content once."""

    def __init__(self, path):
        self.path = path
        self.handle = None
        self.size = 0
        self.offsets = {}  # sha1 -> offset

    def put(self, data):
        digest = hashlib.sha1(data).hexdigest()
        offset = self.offsets.get(digest)
        if offset is None:
            if self.handle is None:
                self.handle = open(self.path + ".partial", "wb")
            offset = self.offsets[digest] = self.size
            self.handle.write(data)
            self.size += len(data)
        return offset, digest

    def close(self):
        """Put the file in place; ``None`` when nothing was stored."""
        if self.handle is None:
            return None
        self.handle.close()
        self.handle = None
        os.replace(self.path + ".partial", self.path)
        return self.path


def _host_path(path):
    """The record of this host: host K > 0 of a pod writes ``RECORD.hostK``."""
    task = _pod_task()
    return "{}.host{}".format(path, task) if task else path


class Recorder(object):
    """One program's record, filled while it runs and written by :meth:`finish`."""

    def __init__(self, path, steps=None, seed=DEFAULT_SEED):
        self.path = path
        self.steps_limit = steps
        self.seed = seed
        self.step = 0
        self.events = []
        self.variables = None
        self.traces_per_step = []
        self.exception = None
        self.stopped = False
        self.started = time.time()
        self.depth = 0  # > 0 inside a recorded call: what it calls itself is not a new step
        self.main_thread = threading.current_thread()
        self.keras_depth = 0  # fit's own evaluate (validation) is part of fit's record
        self.saw_run_in_trace = False
        self.step_codes = set()
        self.functions = {}  # id -> (tf.function, key, where): the user's functions called
        self.keys = {}  # id -> (tf.function, its _function_key): every tf.function called
        self.replicas = set()  # num_replicas_in_sync of every strategy whose run was called
        self.blobs = _Blobs(_host_path(path) + ".bin")
        self.lines_ran = {}  # watched file -> set of its watched lines that ran
        self.watching = {}  # watched file -> its watched lines not seen yet
        self.codes_seen = set()  # code objects of tf.functions whose lines were noted
        self.compiled = False  # inside a call of an XLA-compiled tf.function
        self.printed = []  # the user's print calls to stdout: step (steps done by then), where, text
        self.tf = None
        self.one_thread_kernels = False  # kernels asked to run on one thread each (power.py)
        self.perturbed = [0]  # learning-rate reads scaled on purpose (power.py), when asked
        # every distributed variable made while recording, in creation order, held until the end:
        # the record is what the program created, not what happens to be left in memory when
        # it ends (_track_distributed_variables)
        self.created: List[Any] = []

    # ---- values ---------------------------------------------------------------------

    def plain(self, value, _depth=0):
        """``value`` as JSON: tensors and arrays as dtype/shape/nested list, per-replica
        values as ``{"replicas": [...]}``."""
        if _depth > 20:
            return {"object": type(value).__name__}
        np = sys.modules.get("numpy")
        names = [k.__name__ for k in type(value).__mro__]
        if "DistributedValues" in names:
            parts: Any = getattr(value, "_values", None)  # TensorFlow's: a list or tuple
            if parts is None:
                parts = getattr(value, "values", ())
            return {"replicas": [self.plain(part, _depth + 1) for part in parts]}
        if isinstance(value, dict):
            return {"dict": [[str(k), self.plain(value[k], _depth + 1)] for k in sorted(value, key=str)]}
        if isinstance(value, (list, tuple)):
            return {"list": [self.plain(v, _depth + 1) for v in value]}
        if value is None or isinstance(value, (bool, int, float)):
            return {"python": value}
        if isinstance(value, str):
            return {"text": value}
        if hasattr(value, "numpy") and callable(value.numpy):
            try:
                value = value.numpy()
            except Exception:  # a symbolic tensor: nothing to compare
                return {"object": type(value).__name__}
        if np is not None and isinstance(value, (np.ndarray, np.generic)):
            array = np.asarray(value)
            if array.dtype.name == "bfloat16":  # no struct format: as float32, which holds it exactly
                array = array.astype(np.float32)
            if array.dtype.kind in "SUO":
                content = [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x)
                           for x in array.reshape(-1).tolist()]
            elif array.size > INLINE_NUMBERS and array.dtype.name in _BLOB_DTYPES:
                data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
                offset, digest = self.blobs.put(data)
                return {"dtype": array.dtype.name, "shape": list(array.shape), "blob": [offset, len(data)],
                        "sha1": digest}
            else:
                content = array.tolist()
            return {"dtype": str(array.dtype), "shape": list(array.shape), "value": content}
        if isinstance(value, bytes):
            return {"text": value.decode("utf-8", "replace")}
        return {"object": type(value).__name__}

    def add(self, kind, where, value, step=None):
        self.events.append({"step": self.step if step is None else step, "kind": kind,
                            "where": where, "value": self.plain(value)})

    # ---- steps ----------------------------------------------------------------------

    def end_step(self, kind, where, value, keep_value=True):
        self.step += 1
        if keep_value:
            self.add(kind, where, value)
        else:
            self.events.append({"step": self.step, "kind": kind, "where": where, "value": None})
        self.traces_per_step.append(self.trace_total())
        if self.steps_limit and self.step >= self.steps_limit:
            self.stopped = True
            self.collect_variables()
            raise StopAfterSteps()

    def trace_total(self):
        return sum(self._tracing_count(fn) for fn, _, _ in self.functions.values())

    @staticmethod
    def _tracing_count(function):
        for name in ("experimental_get_tracing_count", "_get_tracing_count"):
            method = getattr(function, name, None)
            if method is not None:
                try:
                    return int(method())
                except Exception:
                    return 0
        return 0

    def traces(self):
        counts: Dict[Any, Dict[str, Any]] = {}  # function key -> {"count": traces, "where": file:line}
        for function, key, where in self.functions.values():
            entry = counts.setdefault(key, {"count": 0, "where": where})
            entry["count"] += self._tracing_count(function)
        return counts

    # ---- the end --------------------------------------------------------------------

    def collect_variables(self):
        if self.variables is not None or self.tf is None:
            return
        found = []
        seen: Set[int] = set()
        # The variables made while recording (held since), then any other still in memory. The
        # scan alone saw what happened to be left: a variable of an object the program had
        # dropped (a trainer local to a function) was there only while a reference cycle held it
        # and the cyclic collector had not yet run, which differs from run to run.
        for obj in list(self.created) + gc.get_objects():
            if id(obj) in seen:
                continue
            try:
                names = [k.__name__ for k in type(obj).__mro__]
            except Exception:
                continue
            if "DistributedVariable" not in names:
                continue
            seen.add(id(obj))
            try:
                parts: Any = getattr(obj, "_values", None) or getattr(obj, "values", ())  # TensorFlow's
                replicas = [self.plain(part.read_value() if hasattr(part, "read_value") else part)
                            for part in parts]
                found.append({"name": obj.name, "shape": [d for d in obj.shape.as_list()]
                              if obj.shape.rank is not None else None,
                              "dtype": obj.dtype.name, "replicas": replicas,
                              "order": _creation_order(obj)})
            except Exception:
                continue
        found.sort(key=lambda v: (v["name"], v["order"]))
        for entry in found:
            del entry["order"]
        self.variables = found

    def note_exception(self, error):
        if isinstance(error, StopAfterSteps):
            return
        self.exception = {"type": type(error).__name__, "message": str(error),
                          "traceback": "".join(traceback.format_exception(
                              type(error), error, error.__traceback__))[-4000:]}

    def finish(self, status):
        try:
            self.collect_variables()
        except Exception:
            self.variables = self.variables or []
        blob_file = self.blobs.close()
        record = {
            "format": 2,
            "blob_file": blob_file,
            "tensorflow": getattr(self.tf, "__version__", None),
            "python": sys.version.split()[0],
            "seed": self.seed,
            "steps_limit": self.steps_limit,
            "steps": self.step,
            "stopped_after_steps": self.stopped,
            "events": self.events,
            "variables": self.variables or [],
            "traces": self.traces(),
            "traces_per_step": self.traces_per_step,
            "replicas": sorted(self.replicas),
            "lines_ran": {name: sorted(lines) for name, lines in self.lines_ran.items()},
            "printed": self.printed,
            "exit_status": status,
            "exception": self.exception,
            "seconds": round(time.time() - self.started, 3),
            "one_thread_kernels": self.one_thread_kernels,
            "perturbed": self.perturbed[0],
            "moved_apis": getattr(self, "moved_apis", None),  # the runner's record of moved APIs called
        }
        path = _host_path(self.path)
        temporary = path + ".partial"
        with open(temporary, "w") as handle:
            json.dump(record, handle)
        os.replace(temporary, path)


def _creation_order(variable):
    unique = getattr(getattr(variable, "_primary", variable), "_unique_id", "")
    digits = "".join(ch for ch in str(unique).rsplit("_", 1)[-1] if ch.isdigit())
    return int(digits) if digits else 0


def _pod_task():
    try:
        config = json.loads(os.environ.get("TF_CONFIG") or "{}")
        return int(config.get("task", {}).get("index", 0))
    except (ValueError, TypeError, AttributeError):
        return 0


# --------------------------------------------------------------------------
# Installing: the seeds, the wrappers around TensorFlow (wrappers.py), the runner's hooks
# --------------------------------------------------------------------------

RECORDER = None


def _seed(tf, seed):
    """Seed every randomness source of the program the same way in every run: Python's,
    NumPy's, and TensorFlow's (:mod:`migrate_tpu.runtime.record.seeding`: the global seed and
    generator, deterministic kernels, TF 2.1's distributed shuffles).  What is replaced
    is put back by :func:`uninstall`."""
    from migrate_tpu.runtime.record import seeding
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)
    seeding.seed_tensorflow(tf, seed)


def install(path, steps=None, seed=DEFAULT_SEED):
    """Start recording into ``path``; TensorFlow must be importable.  Returns the recorder."""
    global RECORDER
    import numpy  # noqa: F401 - seeded below
    import tensorflow as tf
    recorder = Recorder(path, steps, seed)
    recorder.tf = tf
    _seed(tf, seed)
    wrappers.wrap_tensorflow(recorder, tf)
    from migrate_tpu.runtime.record import power
    power.as_asked(recorder, tf)  # kernels on one thread, learning rates scaled, where verify asks
    RECORDER = recorder
    return recorder


def from_environment(environ=None):
    """A recorder installed as the environment asks (``None`` when it does not)."""
    env = os.environ if environ is None else environ
    path = env.get(RECORD_VARIABLE)
    if not path:
        if env.get(SEED_VARIABLE):  # seeds and deterministic ops alone, nothing recorded
            import tensorflow as tf
            _seed(tf, int(env[SEED_VARIABLE]))
        return None
    steps = env.get(STEPS_VARIABLE)
    seed = env.get(SEED_VARIABLE)
    recorder = install(path, int(steps) if steps else None, int(seed) if seed else DEFAULT_SEED)
    if env.get(WATCH_VARIABLE):
        with open(env[WATCH_VARIABLE]) as handle:
            lines_ran.watch_lines(recorder, json.load(handle))
    return recorder


def note_exception(error):
    """The runner's hook for an uncaught exception."""
    if RECORDER is not None:
        RECORDER.note_exception(error)


def uninstall():
    global RECORDER
    for part in ("power", "recorder", "seeding"):
        patches.undo(part)
    RECORDER = None
