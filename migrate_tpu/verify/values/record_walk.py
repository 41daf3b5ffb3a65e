"""The one walk of two recorded values side by side: every comparison of verify reads a record's
values through it (the verdict's, ``judge/compare``; the A/A spread and the release drift,
``judge/spread``), so that what one calls a value and its key is what the others call it.

A recorded value is a tagged dict (the runtime's recorder writes them): an array
(``arrays.is_array``), ``{"replicas": [...]}`` (one value per replica), ``{"list": [...]}``,
``{"dict": [[name, value], ...]}``, ``{"python": x}``, or another plain description (an
``{"object": ...}`` whose repr differs from run to run, never compared).  The walk yields, in
the record's order:

* a :class:`Leaf` for each pair of values it reached: an array, a Python value, another plain
  description, with its key (the path the tolerance of it is looked up by) and its replica;
* a :class:`Apart` where the two structures part (a side missing, another shape, dtype, set of
  keys or length), without going below it.

Pure: no TensorFlow, no files.
"""

from __future__ import annotations

from typing import Any, Iterator, NamedTuple, Optional, Tuple, Union

from migrate_tpu.verify.values.arrays import is_array
from migrate_tpu.verify.values.tolerance import Key


class Leaf(NamedTuple):
    """Two values the walk reached at ``key`` (replica ``replica`` of a per-replica value; the
    dict keys on the way as ``names``): ``kind`` is ``array``, ``number`` (a Python int or
    float, not a bool), ``python`` (another Python value) or ``other``."""
    kind: str
    key: Key
    replica: Optional[int]
    names: Tuple[str, ...]
    before: Any
    after: Any


class Apart(NamedTuple):
    """Where the two structures part: ``what`` (``structure``, ``shape``, ``dtype`` or ``replica
    count``), the two values there, their replica and the dict keys on the way."""
    what: str
    replica: Optional[int]
    names: Tuple[str, ...]
    before: Any
    after: Any


Step = Union[Leaf, Apart]


def is_number(value: Any) -> bool:
    """Whether a recorded Python value is a number (a bool is not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def walk(before: Any, after: Any, key: Key = (), replica: Optional[int] = None,
         names: Tuple[str, ...] = ()) -> Iterator[Step]:
    """The :class:`Leaf` and :class:`Apart` steps of two recorded values, in the record's order."""
    if before is None or after is None or not isinstance(before, dict) or not isinstance(after, dict):
        if before is not after and before != after:
            yield Apart("structure", replica, names, before, after)
        return
    if is_array(before) and is_array(after):
        for what in ("shape", "dtype"):
            if before[what] != after[what]:
                yield Apart(what, replica, names, before, after)
                return
        yield Leaf("array", key, replica, names, before, after)
        return
    if set(before) != set(after):
        yield Apart("structure", replica, names, before, after)
        return
    if "replicas" in before:
        if len(before["replicas"]) != len(after["replicas"]):
            yield Apart("replica count", replica, names, before, after)
            return
        for index, (b, a) in enumerate(zip(before["replicas"], after["replicas"])):
            # one value across its replicas, under one key: a sync-on-read metric's replicas hold
            # parts of one count, and its tolerance is the value's, not a replica's
            yield from walk(b, a, key, index, names)
        return
    if "list" in before:
        if len(before["list"]) != len(after["list"]):
            yield Apart("structure", replica, names, before, after)
            return
        for index, (b, a) in enumerate(zip(before["list"], after["list"])):
            yield from walk(b, a, key + (("l", index),), replica, names)
        return
    if "dict" in before:
        if [k for k, _ in before["dict"]] != [k for k, _ in after["dict"]]:
            yield Apart("structure", replica, names, before, after)
            return
        for (name, b), (_, a) in zip(before["dict"], after["dict"]):
            yield from walk(b, a, key + (("k", name),), replica, names + (name,))
        return
    if "python" in before:
        yield Leaf("number" if is_number(before["python"]) else "python", key, replica, names, before, after)
        return
    yield Leaf("other", key, replica, names, before, after)


def numeric_leaves(before: Any, after: Any, key: Key = ()) -> Iterator[Leaf]:
    """The arrays and Python numbers of two recorded values, where their structures agree (a
    part where they differ is left out: that is no rounding to measure)."""
    for step in walk(before, after, key):
        if isinstance(step, Leaf) and step.kind in ("array", "number"):
            yield step
