"""The recorder's wrappers around TensorFlow: the strategies' ``run`` and result methods,
``tf.function``'s call, Keras's ``fit``, ``evaluate`` and ``predict``, the distributed variables'
constructor and ``print``; each tells the recorder (:mod:`migrate_tpu.runtime.record.recorder`)
what the program computed.

Apart from the recorder, which holds the record and writes it, because this is the one part
that reaches into TensorFlow's classes: every wrapper goes in through :mod:`migrate_tpu.runtime.patches`
under the recorder's part, which :func:`~migrate_tpu.runtime.record.recorder.uninstall` takes out.
Python 3.7 syntax; TensorFlow is handed to :func:`wrap_tensorflow` (imported by the recorder's
``install``), never imported when this module is.
"""

from __future__ import absolute_import, division, print_function

import sys
import threading

from migrate_tpu.runtime import patches
from migrate_tpu.runtime.program.user_code import called_from_user_code, is_library_file, traced_user_line, user_frame
from migrate_tpu.runtime.record import lines_ran

_RUN_NAMES = ("run", "experimental_run_v2", "experimental_run")
_RESULT_NAMES = ("reduce", "gather", "experimental_local_results")
_KIND = {"experimental_local_results": "local_results"}


def wrap_tensorflow(recorder, tf):
    """Wrap what ``recorder`` records of ``tf``: the strategies (2.x's and compat.v1's), the
    distributed variables, ``tf.function``, Keras's model and ``print``."""
    strategies = [tf.distribute.Strategy]
    v1 = getattr(getattr(getattr(tf, "compat", None), "v1", None), "distribute", None)
    if v1 is not None and getattr(v1, "Strategy", None) is not None:
        strategies.append(v1.Strategy)
    for klass in strategies:
        for name in _RUN_NAMES:
            owner = _defining_class(klass, name)
            if owner is not None:
                _wrap(owner, name, _run_wrapper(recorder, tf))
        for name in _RESULT_NAMES:
            owner = _defining_class(klass, name)
            if owner is not None:
                _wrap(owner, name, _result_wrapper(recorder, tf, _KIND.get(name, name)))
    _track_distributed_variables(recorder)
    function_class = type(tf.function(lambda: None))
    owner = _defining_class(function_class, "__call__")
    if owner is not None:
        _wrap(owner, "__call__", _function_wrapper(recorder, tf))
    try:
        model = tf.keras.Model
    except Exception:  # Keras that cannot be imported: nothing of it to record
        model = None
    if model is not None:
        for name in ("fit", "evaluate", "predict"):
            owner = _defining_class(model, name)
            if owner is not None:
                _wrap(owner, name, _keras_wrapper(recorder, name))
    _record_prints(recorder)


def _defining_class(klass, name):
    for owner in klass.__mro__:
        if name in owner.__dict__:
            return owner
    return None


def _wrap(owner, name, make):
    original = owner.__dict__[name]
    if _is_hidden(original):
        # a name the surface hides from user code (legacy._Hidden): TensorFlow's own calls of it
        # are recorded through the descriptor's value, and the name stays hidden
        owner, name, original = original, "value", original.value
    if getattr(original, "_migrate_tpu_recorded", False):
        return
    replacement = make(original)
    replacement._migrate_tpu_recorded = True
    replacement._migrate_tpu_wraps = original  # what it records (the emulation calls TensorFlow's own run through it)
    replacement.__name__ = getattr(original, "__name__", name)
    replacement.__doc__ = getattr(original, "__doc__", None)
    patches.patch("recorder", owner, name, replacement)


def _is_hidden(attribute):
    """Whether a class attribute is a surface's hiding descriptor (legacy._Hidden)."""
    return type(attribute).__name__ in ("_Hidden", "_HiddenData") and hasattr(attribute, "surface")


def _track_distributed_variables(recorder):
    """Hold every distributed variable made from now on in ``recorder.created`` (TensorFlow's
    ``values.DistributedVariable``, whose subclasses are every strategy's: 2.1 to 2.21)."""
    try:
        from tensorflow.python.distribute import values
    except ImportError:  # pragma: no cover - every release here has it
        return
    klass = getattr(values, "DistributedVariable", None)
    if not isinstance(klass, type) or "__init__" not in klass.__dict__:
        return

    def make(original):
        def __init__(self, *args, **kwargs):
            original(self, *args, **kwargs)
            recorder.created.append(self)
        return __init__
    _wrap(klass, "__init__", make)


def _on_main_thread(recorder):
    return threading.current_thread() is recorder.main_thread


def _nested(recorder, original, self, args, kwargs):
    """Call ``original`` one level deeper: what it calls in turn is not an outermost call."""
    recorder.depth += 1
    try:
        return original(self, *args, **kwargs)
    finally:
        recorder.depth -= 1


def _run_wrapper(recorder, tf):
    def make(original):
        def run(self, *args, **kwargs):
            try:
                recorder.replicas.add(int(self.num_replicas_in_sync))
            except Exception:  # a strategy that cannot say: nothing to note
                pass
            if not tf.executing_eagerly():  # traced into a tf.function: that function is a step
                recorder.saw_run_in_trace = True
                return original(self, *args, **kwargs)
            if recorder.depth or not _on_main_thread(recorder):
                return original(self, *args, **kwargs)
            where = user_frame()
            result = _nested(recorder, original, self, args, kwargs)
            recorder.end_step("run", where, result)
            return result
        return run
    return make


def _record_when_run(recorder, tf, kind, where, result):
    """Record ``result``, a value of the graph being traced, each time the graph runs: a
    py_function beside it (stateful, so a tf.function runs it in program order)."""
    tensors = [x for x in tf.nest.flatten(result) if isinstance(x, tf.Tensor)]
    if not tensors:
        return

    def note(*values):
        value = values[0] if len(values) == 1 else list(values)
        recorder.events.append({"step": recorder.step + 1, "kind": kind, "where": where, "in_graph": True,
                                "value": recorder.plain(value)})
        return []

    tf.py_function(note, tensors, Tout=[])


def _result_wrapper(recorder, tf, kind):
    def make(original):
        def method(self, *args, **kwargs):
            if not tf.executing_eagerly():
                # traced into a step: recorded when the step runs, at the line that asked for it
                if recorder.depth and not recorder.compiled and _on_main_thread(recorder):
                    where = traced_user_line()
                    result = original(self, *args, **kwargs)
                    if where is not None:
                        _record_when_run(recorder, tf, kind, where, result)
                    return result
                return original(self, *args, **kwargs)
            if recorder.depth or not _on_main_thread(recorder) or not called_from_user_code():
                return original(self, *args, **kwargs)
            where = user_frame()
            result = _nested(recorder, original, self, args, kwargs)
            recorder.add(kind, where, result)
            return result
        return method
    return make


def _unwrapped(python_function):
    """The user's own function under TensorFlow's wrappers (a tf.function method's
    ``python_function`` is TensorFlow's bound-method wrapper: ``__wrapped__`` leads on)."""
    for _ in range(10):
        code = getattr(python_function, "__code__", None)
        if code is not None and not is_library_file(code.co_filename):
            return python_function
        inner = getattr(python_function, "__wrapped__", None) or getattr(python_function, "__func__", None)
        if inner is None:
            return python_function
        python_function = inner
    return python_function


def _users_function(python_function, function, depth=0):
    """The user's Python function behind ``python_function``, or ``None``.

    TensorFlow traces its own copy of a user's tf.function in places: an eager
    MirroredStrategy.run of a tf.function calls a clone whose Python function closes
    over the user's (TF >= 2.5) or is a ``functools.partial`` of it (TF 2.4).  Those
    traces are the user's function's."""
    python_function = _unwrapped(python_function)
    code = getattr(python_function, "__code__", None)
    if code is not None and not is_library_file(code.co_filename):
        return python_function
    if depth >= 3:
        return None
    candidates = []
    if hasattr(python_function, "func") and hasattr(python_function, "args"):  # functools.partial
        candidates += [python_function.func] + list(python_function.args) + list((python_function.keywords or {}).values())
    for cell in getattr(python_function, "__closure__", None) or ():
        try:
            candidates.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    for candidate in candidates:
        if candidate is function or not callable(candidate):
            continue
        candidate = getattr(candidate, "python_function", candidate)
        found = _users_function(candidate, function, depth + 1)
        if found is not None:
            return found
    return None


def _function_key(function):
    python_function = getattr(function, "python_function", None)
    python_function = _users_function(python_function, function) or _unwrapped(python_function)
    code = getattr(python_function, "__code__", None)
    if code is None:
        return None, None, None
    name = getattr(python_function, "__qualname__", None) or code.co_name
    where = "{}:{}".format(code.co_filename, code.co_firstlineno)
    return code, name, where


def _function_wrapper(recorder, tf):
    def make(original):
        def __call__(self, *args, **kwargs):
            known = recorder.keys.get(id(self))
            if known is None or known[0] is not self:
                known = recorder.keys[id(self)] = (self, _function_key(self))
            code, name, where = known[1]
            if code is not None and not is_library_file(code.co_filename):
                recorder.functions.setdefault(id(self), (self, name, where))
                if recorder.watching:
                    lines_ran.note_function_lines(recorder, code)
            if recorder.depth or not tf.executing_eagerly() or not _on_main_thread(recorder):
                return original(self, *args, **kwargs)
            caller = user_frame()
            saw = recorder.saw_run_in_trace
            recorder.saw_run_in_trace = False
            recorder.depth += 1
            # XLA compiles the whole function (jit_compile): no py_function can record in it
            compiled, recorder.compiled = recorder.compiled, bool(getattr(self, "_jit_compile", None)
                                                                   or getattr(self, "_experimental_compile", None))
            try:
                result = original(self, *args, **kwargs)
            finally:
                recorder.depth -= 1
                recorder.compiled = compiled
                contains_run = recorder.saw_run_in_trace
                recorder.saw_run_in_trace = saw
            if contains_run and code is not None:
                recorder.step_codes.add(code)
            if code is not None and code in recorder.step_codes:
                users = not is_library_file(code.co_filename)
                recorder.end_step("function" if users else "keras", caller, result)
            return result
        return __call__
    return make


def _keras_wrapper(recorder, kind):
    def make(original):
        def method(self, *args, **kwargs):
            outermost = recorder.keras_depth == 0 and _on_main_thread(recorder)
            recorder.keras_depth += 1
            try:
                result = original(self, *args, **kwargs)
            finally:
                recorder.keras_depth -= 1
            if outermost:
                value = getattr(result, "history", result) if kind == "fit" else result
                recorder.add(kind, user_frame(), value)
            return result
        return method
    return make


def _record_prints(recorder):
    """Note what the user's ``print`` calls write to stdout, with their line and the steps done
    by then: verify compares printed numbers last, and names where a printed line came from."""
    try:
        import builtins
    except ImportError:  # pragma: no cover - Python 2 has no builtins module
        return
    real_print = builtins.print
    if getattr(real_print, "_migrate_tpu_recorded", False):
        return

    def print_(*args, **kwargs):
        real_print(*args, **kwargs)
        target = kwargs.get("file")
        if (target is not None and target is not sys.stdout) or not _on_main_thread(recorder):
            return
        where = user_frame()
        if where is None:
            return
        try:
            text = str(kwargs.get("sep") if kwargs.get("sep") is not None else " ").join(str(arg) for arg in args)
        except Exception:  # an argument whose str fails the second time: nothing to note
            return
        recorder.printed.append({"step": recorder.step, "where": where, "text": text})

    print_.__dict__["_migrate_tpu_recorded"] = True
    patches.patch("recorder", builtins, "print", print_)
