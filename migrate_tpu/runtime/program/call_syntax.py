"""What the program's code says at a place: whether a line calls a name (a lookup of a watched
old name is a call only where the line calls it), and which moved API an uncaught failure
reached where it stopped the run (a gone name in the attribute chain at the failing line, an old
module path an ``import`` there asks for).  The record of moved APIs
(:mod:`~migrate_tpu.runtime.surfaces.moved_calls`) asks both; the program's files are parsed with the
standard ``ast``, once each.

Python 3.7 syntax; no TensorFlow.
"""

from __future__ import absolute_import, division, print_function

import ast
import linecache
import re
import types
from typing import Any, Dict, List, Tuple

from migrate_tpu.runtime.program.call_sites import GENERATED, OTHER, file_kind, generated_origin

_MISSING = object()


_CALLS: Dict[Tuple[str, int, str], bool] = {}


def calls(place, name):
    """Whether the code at ``place`` calls something by the attribute ``name``
    (``x.name(...)``, ``getattr(x, 'name')(...)``), not only looks it up (``hasattr``, a
    reference kept for later)."""
    key = (place[0], place[1], name)
    known = _CALLS.get(key)
    if known is None:
        known = _CALLS[key] = any(_is_call_of(node, name, place[1]) for node in nodes_at(place[0], place[1])
                                  if isinstance(node, ast.Call))
    return known


def _is_call_of(call, name, line):
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr == name and func.lineno <= line <= (getattr(func, "end_lineno", None) or func.lineno)
    if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr" and len(func.args) >= 2:
        named = func.args[1]
        return getattr(named, "value", getattr(named, "s", None)) == name
    return False


_NO_ATTRIBUTE = re.compile(r"has no attribute '([A-Za-z_][A-Za-z0-9_]*)'")


def failed_moves(error, candidates):
    """``(place, moves, message)`` where an uncaught ``error`` stopped a run at a moved API that
    is gone: an ``AttributeError`` naming the old name of one of ``candidates`` (the moves the
    record watches for) at the failing line, or an ``ImportError`` of an old path there; else
    None."""
    chain = _chain(error)
    failure = next((e for e in chain if isinstance(e, (AttributeError, ImportError))), None)
    if failure is None:
        return None
    place, frame = _failing_place(chain, failure)
    if place is None:
        return None
    text = str(failure)
    if isinstance(failure, AttributeError):
        found = _NO_ATTRIBUTE.findall(text)
        if not found:
            return None
        matched = _attribute_moves(place, found[-1], frame, candidates)
    else:
        matched = _import_moves(place, candidates, _missing_module_name(failure))
    if not matched:
        return None
    last = text.strip().splitlines()[-1].strip()  # AutoGraph's message ends with the original error's line
    message = last if last.startswith(type(failure).__name__ + ":") else "{}: {}".format(type(failure).__name__, last)
    return place, matched, message


def _chain(error):
    found: List[BaseException] = []
    while error is not None and len(found) < 8 and all(error is not e for e in found):
        found.append(error)
        error = error.__cause__ or error.__context__
    return found


def _failing_place(chain, failure):
    """The user's ``(file, line)`` where ``failure`` was raised, and its frame when one is at
    hand: AutoGraph's translated stack (innermost first), else the traceback's innermost frame
    that is not the runtime's, TensorFlow's or Python's."""
    for error in chain:
        metadata = getattr(error, "ag_error_metadata", None)
        for entry in getattr(metadata, "translated_stack", None) or ():
            filename, line = getattr(entry, "filename", None), getattr(entry, "lineno", None)
            if filename and line and file_kind(filename) == OTHER:
                return (filename, line), None
    for error in (failure,) + tuple(e for e in chain if e is not failure):
        frames = []
        tb = error.__traceback__
        while tb is not None:
            frames.append((tb.tb_frame, tb.tb_lineno))
            tb = tb.tb_next
        for frame, line in reversed(frames):
            kind = file_kind(frame.f_code.co_filename)
            if kind == OTHER:
                return (frame.f_code.co_filename, line), frame
            if kind == GENERATED:
                origin = generated_origin(frame)
                if origin is not None and file_kind(origin[0]) == OTHER:
                    return origin, None
    return None, None


_TREES: Dict[str, Any] = {}


def nodes_at(filename, line):
    """The expressions and statements of ``filename`` that span ``line`` (the file parsed once;
    Python 3.7's nodes know only their first line)."""
    tree = _TREES.get(filename, _MISSING)
    if tree is _MISSING:
        source = "".join(linecache.getlines(filename))
        try:
            tree = ast.parse(source) if source else None
        except (SyntaxError, ValueError):
            tree = None
        _TREES[filename] = tree
    if tree is None:
        return []
    return [node for node in ast.walk(tree) if isinstance(node, (ast.expr, ast.stmt))
            and node.lineno <= line <= (getattr(node, "end_lineno", None) or node.lineno)]


def _dotted(node):
    """``['tf', 'keras', 'mixed_precision']`` for ``tf.keras.mixed_precision``, or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _root_is_tensorflow(name, frame):
    """Whether the chain's first name is TensorFlow's top module (``tf``): the frame's binding
    where the frame is at hand, else the name itself."""
    value = None
    if frame is not None:
        value = frame.f_locals.get(name, frame.f_globals.get(name))
    if isinstance(value, types.ModuleType):
        module = getattr(value, "__name__", "")
        return module == "tensorflow" or (module.startswith("tensorflow") and module.endswith("compat.v2"))
    return name in ("tf", "tensorflow")


def _attribute_moves(place, missing, frame, candidates):
    """The moves whose old name a failed ``.missing`` at ``place`` is: the method of that name,
    else the symbols whose paths best agree with an attribute chain there around ``missing``."""
    methods = [m for m in candidates if m.kind == "method" and m.old == missing]
    if methods:
        return methods
    best, found = 0, []
    for node in nodes_at(place[0], place[1]):
        parts = _dotted(node) if isinstance(node, ast.Attribute) else None
        if not parts or missing not in parts[1:]:
            continue
        root_is_tf = _root_is_tensorflow(parts[0], frame)
        for move in candidates:
            if move.kind == "method" or move.old.startswith("tensorflow.python."):
                continue
            score = _agreement(parts, missing, move.old.split("."), root_is_tf)
            if score > best:
                best, found = score, [move]
            elif score and score == best and move not in found:
                found.append(move)
    olds = {move.old for move in found}
    rules: List[Any] = []  # the moves (moved_calls.Move)
    for move in sorted(found, key=lambda m: len(m.old)):  # one move a rule: a namespace reaches several
        if move.old.replace(".compat.v1.", ".", 1) != move.old and move.old.replace(".compat.v1.", ".", 1) in olds:
            continue  # an alias may be either module: the TF 2 API's is the likelier
        if all(move.call_rule != other.call_rule for other in rules):
            rules.append(move)
    return rules


def _agreement(parts, missing, old, root_is_tf):
    """How many names of the program's chain ``parts`` agree with the old path ``old`` around
    the ``missing`` one, or 0 where they disagree or only ``missing`` itself agrees (the first
    name of ``parts`` is the program's: ``tf``, or an alias of a module)."""
    if missing not in old:
        return 0
    i, j = parts.index(missing, 1), old.index(missing)
    after, old_after = parts[i + 1:], old[j + 1:]
    if after[:len(old_after)] != old_after[:len(after)]:
        return 0
    agreed = 1 + min(len(after), len(old_after))
    if root_is_tf:
        return agreed + len(old[:j]) if parts[1:i] == old[1:j] else 0
    middle = parts[1:i]
    if len(middle) > j or (middle and old[j - len(middle):j] != middle):
        return 0
    agreed += len(middle)
    if j - len(middle) >= 1 and old[j - len(middle) - 1] == parts[0]:
        agreed += 1  # a module imported under its own name (``from tensorflow.keras import mixed_precision``)
    return agreed if agreed >= 2 else 0


_NOT_IMPORTED = re.compile(r"(?:cannot import name|No module named) '([A-Za-z_][A-Za-z0-9_.]*)'")


def _missing_module_name(error):
    """The last name of what an ImportError says is missing (``experimental``), or None."""
    found = _NOT_IMPORTED.search(str(error))
    return found.group(1).split(".")[-1] if found else None


def _import_moves(place, candidates, missing=None):
    """The moves an ``import`` of an old path at ``place`` reaches (a module whose names moved),
    where the name the error says is missing is one of the old path's own (not ``tensorflow``)."""
    paths: List[str] = []
    for node in nodes_at(place[0], place[1]):
        if isinstance(node, ast.Import):
            paths.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            paths.extend(node.module + "." + alias.name for alias in node.names)
    matched: List[Any] = []
    for path in paths:
        for move in candidates:
            if move.kind == "method":
                continue
            if missing is None or missing not in move.old.split(".")[1:]:
                continue
            if move.old == path or move.old.startswith(path + ".") or (move.prefix and path.startswith(move.old + ".")):
                if all(move.call_rule != other.call_rule for other in matched):
                    matched.append(move)
    return matched
