"""The run-time record of moved APIs: each call a run makes of an API that the codemod's
catalogue says moved or went away (``rules/*.toml``, read here as :mod:`~migrate_tpu.runtime.surfaces.moves`,
which ``scripts/document-rules`` writes from it), with the caller's file and line, who owns that
file (the user's tree, another folder, an installed distribution) and the rule that covers it.

The codemod reads the files it is given; a run also goes through code nobody gave it (a helper
module beside the script, a package on ``PYTHONPATH``, a distribution installed in 2020).  Under
every surface the record watches the catalogue's old names the program can reach, and notes the
failure when a name is gone:

* **a method** (``strategy.experimental_run_v2``) where a strategy class has it (TensorFlow's
  own, or a surface's restored one): a descriptor in place of the class attribute notes the line
  that looks it up, where that line calls it (no frame of the runtime's comes between the
  program and TensorFlow's method);
* **a function** reached by an old path (``tf.keras.mixed_precision.experimental.set_policy``):
  the old path's module attribute becomes a wrapper that notes its caller (the new path keeps
  the function itself, which may be the same object);
* **a class** reached by an old path (``tf.distribute.experimental.TPUStrategy``): its
  ``__new__``, where the class is the old path's own (a class also reachable by a name the
  catalogue does not call old is left unwatched);
* **a name that is gone** (``AttributeError: ... has no attribute 'experimental_run_v2'``, an
  ``ImportError`` of an old module): the uncaught exception is matched against the catalogue at
  the line where it was raised (a failure the program catches is a guard, not a finding).

Calls, not imports or ``hasattr``: a site is a file and line, noted once with a count (in a
``tf.function``, once per trace).  The caller is the first frame that is not the runtime's or
AutoGraph's (a line of AutoGraph's converted copy is mapped back to the user's); TensorFlow's own
calls (TensorFlow, Keras, tf-keras, the estimator) are not noted.  Which moves count is the
migration's target (``MIGRATE_TPU_TARGET``: ``2.4``, or ``latest`` under ``--tf-api native`` on
a TensorFlow newer than 2.4): the entries ``migrate-tpu fix --target`` acts on.

Python 3.7 syntax; TensorFlow is imported only inside :func:`install`.
"""

from __future__ import absolute_import, division, print_function

import collections
import functools
import io
import json
import os
import sys
import types
from typing import Any, Dict, List, Optional, Tuple

from migrate_tpu.runtime import TARGET_VARIABLE, patches
from migrate_tpu.runtime.program import call_sites, call_syntax
from migrate_tpu.runtime.surfaces import moves
from migrate_tpu.runtime.program.call_sites import AUTOGRAPH, GENERATED, OTHER, RUNTIME, file_kind, owner

#: Set to ``0`` (or ``off``) to run without the record (what benchmarks/moved_calls.py compares).
SWITCH_VARIABLE = "MIGRATE_TPU_MOVED_CALLS"

#: One entry of the catalogue (see :mod:`~migrate_tpu.runtime.surfaces.moves`).
Move = collections.namedtuple("Move", "rule call_rule kind old new since removed prefix targets title")
MOVES = tuple(Move(*fields) for fields in moves.MOVES)
_OLD_PATHS = frozenset(move.old for move in MOVES if move.kind != "method")

#: Methods the codemod moves on TF 2 strategies only: ``tf.compat.v1`` strategies keep them
#: (checked on TF 2.4.1 and 2.21: ``tf.compat.v1.distribute.MirroredStrategy`` has
#: ``experimental_make_numpy_dataset``, ``tf.distribute.MirroredStrategy`` not;
#: TF 2.4.0 removed it from the TF 2 strategies alone, and the codemod's TPU105 leaves those alone).
_KEPT_BY_COMPAT_V1 = frozenset(["experimental_make_numpy_dataset"])


def _release(text):
    return tuple(int(part) for part in text.split(".")) if text else ()


def moves_for(target):
    """The catalogue's entries that ``fix --target TARGET`` acts on."""
    return [move for move in MOVES
            if target in move.targets and (target == "latest" or _release(move.since) <= _release(target))]


# --------------------------------------------------------------------------
# The record
# --------------------------------------------------------------------------


class Site(object):
    """One place that called (or failed to reach) one moved API."""

    __slots__ = ("file", "line", "move", "count", "error")

    def __init__(self, file, line, move):
        self.file, self.line, self.move, self.count, self.error = file, line, move, 0, None


class Record(object):
    """What one run called: sites by (file, line, old name, rule)."""

    def __init__(self, surface, target, tree):
        self.surface, self.target, self.tree = surface, target, tree
        self.sites: Dict[Tuple[str, int, str, str], Site] = {}
        self.places: Dict[Any, Any] = {}  # (file, line) of a caller's code -> the user's (file, line), or None: TensorFlow's

    def note(self, move, place, error=None):
        key = (place[0], place[1], move.old, move.rule)
        site = self.sites.get(key)
        if site is None:
            site = self.sites[key] = Site(place[0], place[1], move)
        site.count += 1
        if error is not None:
            site.error = error


RECORD: Optional[Record] = None
_WATCH_CODES: set = set()  # the code objects of the watches below: a watch called through another is not a new call
_UNKNOWN = object()


def _call_site(frame, through_runtime=True):
    """The user's ``(file, line)`` that made the call a watch was entered from (``frame``: the
    watch's caller), or None where TensorFlow makes it, or the runtime on behalf of a call
    another watch already noted; ``through_runtime`` False: a lookup the runtime makes is always
    on behalf of one (the emulation forwarding a method the program looked up)."""
    record = RECORD
    if record is None:
        return None
    first = True
    while frame is not None:
        code = frame.f_code
        if code in _WATCH_CODES:
            return None
        kind = file_kind(code.co_filename)
        if kind == RUNTIME and not through_runtime:
            return None
        if kind in (RUNTIME, AUTOGRAPH):
            frame, first = frame.f_back, False
            continue
        key = (code.co_filename, frame.f_lineno)  # not the code object: two files' equal functions compare equal
        place = record.places.get(key, _UNKNOWN)
        if place is _UNKNOWN:
            place = call_sites.place_of(frame, kind)
            if first or kind == GENERATED:  # a direct caller's place does not depend on the frames out of it
                record.places[key] = place
        return place
    return None


def _note(move, frame, looked_up=False):
    """Note a call of ``move`` made from ``frame`` (the watch's caller); ``looked_up``: the name
    was only looked up there, which is a call where that line calls it."""
    record, place = RECORD, _call_site(frame, through_runtime=not looked_up)
    if record is not None and place is not None and (not looked_up or call_syntax.calls(place, move.old)):
        record.note(move, place)


# --------------------------------------------------------------------------
# The watches
# --------------------------------------------------------------------------


def _set(owner, name, value):
    # a class's own __new__ taken away leaves object's, which refuses arguments: put an inherited one
    put_back = (lambda: setattr(owner, name, _inherited_new(owner))) if (
        name == "__new__" and isinstance(owner, type) and "__new__" not in owner.__dict__) else None
    patches.patch("moved_calls", owner, name, value, put_back)


class _WatchedMethod(object):
    """A strategy method under an old name, noting the place that looks it up to call it.  A
    descriptor, not a wrapper: no frame of the runtime's comes between the program and
    TensorFlow's method (whose deprecation warning names its caller's line), and AutoGraph gets
    TensorFlow's method to call.  Not for instances of ``kept_by`` (the ``tf.compat.v1``
    strategies that keep the name)."""

    def __init__(self, function, move, kept_by):
        self.function, self.move, self.kept_by = function, move, kept_by
        self.__doc__ = getattr(function, "__doc__", None)
        self._migrate_tpu_watches = move
        # the emulation calls TensorFlow's own method through what wraps it (strategies._own)
        self._migrate_tpu_wraps = getattr(function, "_migrate_tpu_wraps", function)

    def __get__(self, instance, owner=None):
        if instance is not None and RECORD is not None and not (self.kept_by and isinstance(instance, self.kept_by)):
            _note(self.move, sys._getframe(1), looked_up=True)
        return self.function.__get__(instance, owner)

    def __call__(self, *args, **kwargs):  # the class's own attribute, called (strategies._own)
        return self.function(*args, **kwargs)


def _as_watch(watch, inner, move):
    """``watch`` dressed as ``inner`` (its name, documentation and signature), called by
    AutoGraph as it is (an AutoGraph artifact: AutoGraph would otherwise convert the runtime's
    code)."""
    if inner is not None:
        try:
            functools.update_wrapper(watch, inner)
        except (AttributeError, TypeError):
            pass
    watch.autograph_info__ = frozenset()
    watch._migrate_tpu_watches = move
    _WATCH_CODES.add(watch.__code__)
    return watch


def _function_watch(move, inner):
    def watched_function(*args, **kwargs):
        _note(move, sys._getframe(1))
        return inner(*args, **kwargs)
    return _as_watch(watched_function, inner, move)


def _is_tensorflows(klass):
    top = (getattr(klass, "__module__", "") or "").split(".")[0]
    return top in call_sites.TENSORFLOW_PACKAGES or klass.__module__.startswith("migrate_tpu.runtime")


def _constructor_watch(move, klass):
    """``klass.__new__`` noting who builds the class (or a subclass of the program's):
    ``__new__``, which ``type.__call__`` calls from C, so the frame out of it is the caller's,
    and ``__init__`` (TensorFlow's deprecation warnings name its caller) is left as it is."""
    own = klass.__dict__.get("__new__")
    if getattr(getattr(own, "__func__", None), "_migrate_tpu_inherited", False):
        own = None  # what an earlier uninstall left: the inherited __new__
    init = next((k.__dict__["__init__"] for k in klass.__mro__ if "__init__" in k.__dict__), None)

    def __new__(cls, *args, **kwargs):
        if cls is klass or not _is_tensorflows(cls):
            _note(move, sys._getframe(1))
        if own is not None:
            return own.__get__(None, cls)(cls, *args, **kwargs)
        parent = super(klass, cls).__new__
        return parent(cls) if parent is object.__new__ else parent(cls, *args, **kwargs)
    _as_watch(__new__, None, move)
    if isinstance(init, types.FunctionType):
        vars(__new__)["__wrapped__"] = init  # inspect.signature(klass) reads the constructor's arguments there
    return staticmethod(__new__)


def _strategy_roots(tf):
    """``tf.distribute.Strategy`` and, where the release has it, ``tf.compat.v1.distribute.Strategy``."""
    roots = [tf.distribute.Strategy]
    v1: Any = getattr(getattr(getattr(tf, "compat", None), "v1", None), "distribute", None)
    if getattr(v1, "Strategy", None) is not None:
        roots.append(v1.Strategy)
    return roots


def _strategy_classes(tf):
    """``tf.distribute.Strategy``, ``tf.compat.v1.distribute.Strategy``, every subclass of them as
    now defined (the emulated TPU strategies among them) and their bases (the emulation's mixins)."""
    found: List[type] = []
    todo = _strategy_roots(tf)
    while todo:
        klass = todo.pop()
        if klass in found or klass is object:
            continue
        found.append(klass)
        todo.extend(type.__subclasses__(klass))
        todo.extend(klass.__mro__[1:])
    return found


def _watch_method(tf, move):
    v1 = getattr(getattr(getattr(tf, "compat", None), "v1", None), "distribute", None)
    kept_by = getattr(v1, "Strategy", None) if move.old in _KEPT_BY_COMPAT_V1 else None
    for klass in _strategy_classes(tf):
        value = klass.__dict__.get(move.old)
        if not isinstance(value, types.FunctionType):
            continue  # absent, a surface's hiding descriptor (the name is gone there), or watched
        if kept_by is not None and issubclass(klass, kept_by) and not issubclass(klass, tf.distribute.Strategy):
            continue  # a compat.v1 strategy's own: no moved API there
        _set(klass, move.old, _WatchedMethod(value, move, kept_by))


def _resolve(tf, parts):
    obj = tf
    for part in parts:
        try:
            obj = getattr(obj, part)
        except Exception:  # absent, or a lazy loader that fails to import
            return None
    return obj


def _holders(tf, path):
    """The module objects a program reaches as ``path`` (``tensorflow.a.b``): through ``tf``, the
    same names under ``tf.compat.v2``, and ``import tensorflow.a.b`` where it was imported."""
    parts = path.split(".")[1:]
    found: List[Any] = []
    candidates = [_resolve(tf, parts)]
    if parts[:1] != ["compat"]:
        candidates.append(_resolve(tf, ["compat", "v2"] + parts))
    candidates.append(sys.modules.get(path))
    for candidate in candidates:
        if candidate is not None and all(candidate is not f for f in found):
            found.append(candidate)
    return found


def _reachable_by_another_name(tf, klass, move):
    """Whether ``klass``, the old path's class, is also what a name the catalogue does not call
    old gives (its new path; ``tf.compat.v1`` with the same tail): its constructor cannot tell
    which name the program used."""
    if move.new.startswith("tensorflow.") and _resolve(tf, move.new.split(".")[1:]) is klass:
        return True
    tail = move.old.split(".")[1:]
    if tail[:1] == ["compat"]:
        return False
    other = "tensorflow.compat.v1." + ".".join(tail)
    return other not in _OLD_PATHS and _resolve(tf, ["compat", "v1"] + tail) is klass


_WATCHED_CLASSES: Dict[type, Any] = {}


def _watch_value(tf, holder, name, move):
    try:
        value = getattr(holder, name)
    except Exception:  # absent here
        return
    if isinstance(value, type):
        if value in _WATCHED_CLASSES or _reachable_by_another_name(tf, value, move):
            return
        _WATCHED_CLASSES[value] = move
        _set(value, "__new__", _constructor_watch(move, value))
    elif callable(value) and not isinstance(value, types.ModuleType):
        if getattr(value, "_migrate_tpu_watches", None) is None:
            _set(holder, name, _function_watch(move, value))


def _watch_symbol(tf, move):
    if move.old.startswith("tensorflow.python."):
        return  # TensorFlow's internal modules: their failed imports are named, their calls not watched
    parent, _, name = move.old.rpartition(".")
    for holder in _holders(tf, parent):
        if not move.prefix:
            _watch_value(tf, holder, name, move)
            continue
        namespace = getattr(holder, name, None)
        if isinstance(namespace, types.ModuleType):  # a public namespace: each of its names
            for member in [n for n in dir(namespace) if not n.startswith("_")]:
                _watch_value(tf, namespace, member, move)


def install(surface, target=None, tree=None):
    """Start the record of the catalogue's moves for ``target`` (default: ``MIGRATE_TPU_TARGET``,
    else ``2.4``) under ``surface`` (what the banner names); ``tree``: the folder of the
    program (its files are the user's tree).  Returns the record."""
    global RECORD
    import tensorflow as tf
    target = target or os.environ.get(TARGET_VARIABLE) or "2.4"
    RECORD = Record(surface, target, os.path.abspath(tree) + os.sep if tree else None)
    for move in moves_for(target):
        if move.kind == "method":
            _watch_method(tf, move)
        else:
            _watch_symbol(tf, move)
    _watch_gone_methods(tf, [move for move in moves_for(target) if move.kind == "method"])
    return RECORD


def wanted(environ=None):
    """Whether the record is on (``MIGRATE_TPU_MOVED_CALLS=0`` switches it off)."""
    value = (os.environ if environ is None else environ).get(SWITCH_VARIABLE, "").strip().lower()
    return value not in ("0", "off", "false", "no")


def _inherited_new(klass):
    """The ``__new__`` a class without one of its own has: what an uninstall puts there, since
    deleting a ``__new__`` that was set leaves CPython calling ``object.__new__`` with the
    constructor's arguments (``TypeError: object.__new__() takes exactly one argument``, Python
    3.7 to 3.11)."""
    def __new__(cls, *args, **kwargs):
        parent = super(klass, cls).__new__
        return parent(cls) if parent is object.__new__ else parent(cls, *args, **kwargs)
    vars(__new__)["_migrate_tpu_inherited"] = True
    return staticmethod(__new__)


def uninstall():
    global RECORD
    patches.undo("moved_calls")
    _WATCHED_CLASSES.clear()
    RECORD = None


# --------------------------------------------------------------------------
# A method that is gone: its lookup, caught or not
# --------------------------------------------------------------------------


def _watch_gone_methods(tf, method_moves):
    """Note every lookup of a moved method that a strategy no longer has, where it fails, even
    when the program catches the ``AttributeError`` (2020 compatibility code: ``try:
    strategy.experimental_run_v2 ... except AttributeError:``).  Python asks a class's
    ``__getattr__`` once its attribute lookup has failed: the strategies' own (the emulated
    TPU's) are wrapped, and the roots get one that raises Python's own error."""
    gone = {move.old: move for move in method_moves}
    if not gone:
        return
    roots = _strategy_roots(tf)
    for klass in _strategy_classes(tf):
        own = klass.__dict__.get("__getattr__")
        if isinstance(own, types.FunctionType) or klass in roots:
            _set(klass, "__getattr__", _noting_gone(own, gone))


def _noting_gone(own, gone):
    def __getattr__(self, name):
        move = gone.get(name)
        caller = sys._getframe(1)
        if move is not None and file_kind(caller.f_code.co_filename) in (OTHER, GENERATED):
            # looked up by the program's own code (AutoGraph's copy of it included); a lookup
            # TensorFlow makes for it is named where the error stops the run (note_failure)
            record, place = RECORD, _call_site(caller)
            # a use of the name at that line, not a guard asking for it (hasattr(s, "name"))
            if record is not None and place is not None and call_syntax.calls(place, move.old):
                message = "AttributeError: '{}' object has no attribute '{}'".format(
                    getattr(type(self), "_tf_class_name", type(self).__name__), name)
                record.note(move, place, error=message)
        if own is not None:
            return own(self, name)
        raise AttributeError("'{}' object has no attribute '{}'".format(type(self).__name__, name))
    _WATCH_CODES.add(__getattr__.__code__)
    return __getattr__


# --------------------------------------------------------------------------
# A name that is gone: the uncaught exception
# --------------------------------------------------------------------------


def note_failure(error):
    """Note where an uncaught ``error`` stopped the run at a moved API that is gone (an
    ``AttributeError`` naming the catalogue's old name at the failing line, an ``ImportError`` of
    an old path; :mod:`~migrate_tpu.runtime.program.call_syntax`); anything else is left alone."""
    record = RECORD
    if record is None:
        return None
    try:
        found = call_syntax.failed_moves(error, moves_for(record.target))
    except Exception:  # the record must never be what breaks the run's report
        return None
    if found is None:
        return None
    place, matched, message = found
    for move in matched:
        site = record.sites.get((place[0], place[1], move.old, move.rule))
        if site is not None and site.error is not None:
            continue  # the failed lookup was noted as it failed
        record.note(move, place, error=message)
    return matched


# --------------------------------------------------------------------------
# What the run prints and writes
# --------------------------------------------------------------------------


def as_json(record=None, python=None):
    """The record as JSON-ready data (``--api-record FILE`` writes it, verify's record holds it);
    ``python`` is how ``--python`` names the interpreter that ran it, for the advice."""
    record = record or RECORD
    if record is None:
        return None
    calls = []
    for site in sorted(record.sites.values(), key=lambda s: (s.error is None, s.file, s.line)):
        move = site.move
        calls.append({"file": site.file, "line": site.line, "count": site.count, "failed": site.error is not None,
                      "error": site.error, "rule": move.call_rule, "catalogue_rule": move.rule, "kind": move.kind,
                      "old": move.old, "new": move.new, "since": move.since, "removed": move.removed,
                      "title": moves.TITLES.get(move.call_rule, move.title), "owner": owner(site.file, record.tree)})
        calls[-1]["to_do"] = what_to_do(calls[-1], python)
    return {"format": 1, "surface": record.surface, "target": record.target,
            "tensorflow": getattr(sys.modules.get("tensorflow"), "__version__", None), "calls": calls}


def write(path, data):
    temporary = path + ".partial"
    with io.open(temporary, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(data, indent=1, sort_keys=True))
    os.replace(temporary, path)


def _short(name):
    return "tf" + name[len("tensorflow"):] if name.startswith("tensorflow.") else name


def shown_path(path, folder=None):
    """``path`` relative to the current folder when it lies inside it."""
    folder = folder or os.getcwd()
    relative = os.path.relpath(path, folder) if os.path.isabs(path) else path
    return path if relative.startswith(os.pardir) else relative


def what_to_do(call, python=None):
    """The command that covers one call: migrate the file (or see its finding, where the rule
    leaves the change to a person), or, for an installed distribution, upgrade it."""
    who = call["owner"]
    if who["kind"] == "distribution":
        look = ("migrate-tpu check --installed{} {}".format(" --python " + python if python else "", who["name"])
                if who.get("site_packages") else "migrate-tpu check {}".format(shown_path(call["file"])))
        return "upgrade it to a release written for TF 2.4 or later; what in it needs migrating: {}".format(look)
    shown = shown_path(call["file"].split(".ipynb:cell")[0] + ".ipynb" if ".ipynb:cell" in call["file"] else call["file"])
    if call["kind"] == "flag":
        return "migrate-tpu check {} (a change for a person)".format(shown)
    return "migrate-tpu fix {}".format(shown)


def call_text(call):
    """One site as a line: where, the rule and the move, how often (or how it failed), who owns
    the file, what to do."""
    notebook, _, cell = call["file"].partition(".ipynb:cell")
    where = ("{}.ipynb cell {}:{}".format(shown_path(notebook), cell, call["line"]) if cell else
             "{}:{}".format(shown_path(call["file"]), call["line"]))
    how = "failed: {}".format(call["error"]) if call["failed"] else "{} {}".format(
        call["count"], "call" if call["count"] == 1 else "calls")
    who = call["owner"]
    owned = {"tree": "your tree", "folder": "folder {}".format(shown_path(who.get("folder", ""))),
             "distribution": "installed {} {}".format(who.get("name"), who.get("version"))}[who["kind"]]
    return "{}: {} `{}` -> `{}`, {} ({}): {}".format(where, call["rule"], _short(call["old"]), _short(call["new"]), how, owned,
                                                   call["to_do"])


#: Sites a run's summary shows; ``--verbose`` (or ``--api-record FILE``) gives them all.
SHOWN = 5


def summary(data, verbose=False):
    """The lines ``migrate-tpu run`` ends with (none when the run called no moved API)."""
    calls = (data or {}).get("calls") or []
    if not calls:
        return []
    places = len(calls)
    target = "2.4" if data["target"] == "2.4" else "latest"
    lines = ["migrate-tpu run: {} {} called an API that moved (the moves `migrate-tpu fix --target {}` acts on):".format(
        places, "place" if places == 1 else "places", target)]
    shown = calls if verbose else calls[:SHOWN]
    lines += ["  " + call_text(call) for call in shown]
    if len(shown) < places:
        lines.append("  ... and {} more (`migrate-tpu run --verbose` or `--api-record FILE` lists them)".format(places - len(shown)))
    return lines
