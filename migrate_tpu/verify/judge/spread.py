"""How far two runs of one program lie apart: the original on two releases (the release
drift a report states), and the original against itself on one (the A/A spread from which
each value's tolerance follows, :mod:`~migrate_tpu.verify.values.tolerance`).  Pure: no TensorFlow."""

from __future__ import annotations

import itertools
import math
from typing import Any, Dict, Iterable, Iterator, List, Tuple

import numpy

from migrate_tpu.verify.values.arrays import array_chunks, numbers
from migrate_tpu.verify.values.record_walk import numeric_leaves
from migrate_tpu.verify.judge.compare import describe_kind, match_variables, same_kind
from migrate_tpu.verify.values.printed import numbered, pair_printed, printed_lines, version_strings
from migrate_tpu.verify.values.tolerance import Spread
from migrate_tpu.verify.values.verdict import RunResult



def _number_pairs(before: Any, after: Any) -> Iterator[Tuple[object, object]]:
    """The numbers of two recorded values of one structure, pair by pair (none where the
    structures differ: that is no rounding), leaf by leaf as the record's one walk reaches them
    (:func:`~migrate_tpu.verify.values.record_walk.numeric_leaves`)."""
    for leaf in numeric_leaves(before, after):
        leaf_before, leaf_after = leaf.before, leaf.after
        if "python" in leaf_before:
            yield leaf_before["python"], leaf_after["python"]
            continue
        chunks = array_chunks(leaf_before, leaf_after)
        if chunks is not None:
            yield from chunks  # numpy arrays: release_drift takes them whole
        else:
            yield from zip(numbers(leaf_before), numbers(leaf_after))


def release_drift(before: RunResult, control: RunResult, steps: int) -> dict:
    """How far the original's values moved from one release to the other: the largest absolute
    and relative difference over every recorded value and variable of the first ``steps``
    steps, and where the largest relative one is."""
    b, c = before.record or {}, control.record or {}
    largest: Dict[str, float] = {"absolute": 0.0, "relative": 0.0}
    where_largest: List[str] = []

    def visit_arrays(x: "numpy.ndarray", y: "numpy.ndarray", where: str) -> None:
        if x.dtype.kind not in "fiu":
            return
        x, y = x.astype(numpy.float64), y.astype(numpy.float64)
        finite = numpy.isfinite(x) & numpy.isfinite(y)
        x, y = x[finite], y[finite]
        if not x.size:
            return
        difference = numpy.abs(x - y)
        scale = numpy.maximum(numpy.abs(x), numpy.abs(y))
        with numpy.errstate(invalid="ignore", divide="ignore"):
            relative = numpy.where(difference > 0, difference / scale, 0.0)
        largest["absolute"] = max(largest["absolute"], float(difference.max()))
        if float(relative.max()) > largest["relative"]:
            largest["relative"] = float(relative.max())
            where_largest[:] = [where]

    def visit(pairs: Iterable[Tuple[object, object]], where: str) -> None:
        for x, y in pairs:
            if isinstance(x, numpy.ndarray) and isinstance(y, numpy.ndarray):
                visit_arrays(x, y, where)
                continue
            if isinstance(x, bool) or isinstance(y, bool) or not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
                continue
            if math.isnan(x) or math.isnan(y) or math.isinf(x) or math.isinf(y):
                continue
            difference = abs(x - y)
            relative = difference / max(abs(x), abs(y)) if difference else 0.0
            largest["absolute"] = max(largest["absolute"], difference)
            if relative > largest["relative"]:
                largest["relative"] = relative
                where_largest[:] = [where]

    events_b = [e for e in b.get("events", []) if e["step"] <= steps]
    events_c = [e for e in c.get("events", []) if e["step"] <= steps]
    for eb, ec in zip(events_b, events_c):
        if same_kind(eb["kind"], ec["kind"]):
            visit(_number_pairs(eb["value"], ec["value"]), f"step {eb['step']}: {describe_kind(eb['kind'])}")
    matched, _ = match_variables(b.get("variables", []), c.get("variables", []))
    for label, vb, vc in matched:
        visit(_number_pairs({"replicas": vb["replicas"]}, {"replicas": vc["replicas"]}), f"variable {label}")
    return {"tensorflow": {"before": b.get("tensorflow"), "control": c.get("tensorflow")}, **largest,
            "where": where_largest[0] if where_largest else None}


# --------------------------------------------------------------------------
# One release, the original twice: each value's own spread
# --------------------------------------------------------------------------


def _difference(before: dict, after: dict) -> Tuple[float, float]:
    """The largest absolute difference of two leaves, and the largest magnitude where they differ
    (a NaN on one side only counts as infinitely far)."""
    if "python" in before:
        x, y = before["python"], after["python"]
        if not isinstance(y, (int, float)) or isinstance(y, bool):
            return math.inf, 0.0
        if math.isnan(x) or math.isnan(y):
            return (0.0, 0.0) if math.isnan(x) and math.isnan(y) else (math.inf, 0.0)
        return abs(x - y), max(abs(x), abs(y))
    if before.get("sha1") is not None and before.get("sha1") == after.get("sha1"):
        return 0.0, 0.0
    chunks = array_chunks(before, after)
    if chunks is None:
        pairs = list(itertools.zip_longest(numbers(before), numbers(after)))
        chunks = iter([(numpy.array([p[0] for p in pairs]), numpy.array([p[1] for p in pairs]))]) if pairs else iter([])
    largest, magnitude = 0.0, 0.0
    for x, y in chunks:
        if x.dtype.kind not in "fiub":
            if not numpy.array_equal(x, y):
                return math.inf, 0.0
            continue
        x, y = x.astype(numpy.float64), y.astype(numpy.float64)
        if not numpy.array_equal(numpy.isnan(x), numpy.isnan(y)):
            return math.inf, 0.0
        keep = ~numpy.isnan(x)
        x, y = x[keep], y[keep]
        if not x.size:
            continue
        with numpy.errstate(invalid="ignore"):
            difference = numpy.abs(x - y)
        different = difference > 0
        if different.any():
            largest = max(largest, float(numpy.nanmax(difference)))
            magnitude = max(magnitude, float(numpy.nanmax(numpy.maximum(numpy.abs(x[different]), numpy.abs(y[different])))))
    return largest, magnitude


def measure_spread(first: RunResult, again: RunResult, steps: int) -> Spread:
    """Each recorded value's difference between two runs of the original (its events of the
    first ``steps`` steps, its variables, every host's, its printed numbers), keyed as the
    comparison keys them."""
    spread = Spread()
    records = [(0, first.record or {}, again.record or {})]
    records += [(host, hb or {}, ha or {}) for host, (hb, ha) in enumerate(zip(first.host_records, again.host_records), 1)]
    for host, b, a in records:
        events_b = [e for e in b.get("events", []) if e["step"] <= steps]
        events_a = [e for e in a.get("events", []) if e["step"] <= steps]
        for index, (eb, ea) in enumerate(zip(events_b, events_a)):
            if not same_kind(eb["kind"], ea["kind"]):
                break  # the runs part ways: what follows is not one value twice
            for leaf in numeric_leaves(eb["value"], ea["value"], ("event", host, index)):
                spread.note(leaf.key, *_difference(leaf.before, leaf.after))
        matched, _ = match_variables(b.get("variables", []), a.get("variables", []))
        for label, vb, va in matched:
            for leaf in numeric_leaves({"replicas": vb["replicas"]}, {"replicas": va["replicas"]}, ("variable", host, label)):
                spread.note(leaf.key, *_difference(leaf.before, leaf.after))
    versions = version_strings(first.record or {}, again.record or {})
    lines_b = numbered(printed_lines(first.record or {}, first.stdout), versions)
    lines_a = numbered(printed_lines(again.record or {}, again.stdout), versions)
    for (index_b, _, nb), (_, _, na) in pair_printed(lines_b, lines_a):
        for number, (x, y) in enumerate(zip(nb, na)):
            if x != y:
                spread.note(("printed", 0, index_b, number), abs(x - y) if not (math.isnan(x) or math.isnan(y)) else math.inf,
                            max(abs(x), abs(y)))
    return spread
