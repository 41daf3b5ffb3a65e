"""Recorded values as numbers: arrays kept in the record's JSON or stored as bytes beside it
(``RECORD.bin``), read a chunk at a time, and when two numbers, or two arrays, agree.
Pure: no TensorFlow; numpy for the arrays stored as bytes."""

from __future__ import annotations

import itertools
import math
import struct
from typing import Iterator, List, Optional, Tuple

import numpy


def numbers_close(a: object, b: object, rtol: float, atol: float, share: float = 0.0) -> bool:
    """Whether ``b`` is within ``atol + rtol * |b|`` of ``a``, or within ``share`` of ``a``'s size."""
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if share and math.isfinite(a):
        atol = max(atol, share * abs(a))
    if rtol == 0 and atol == 0:
        return a == b
    return abs(a - b) <= atol + rtol * abs(b)


def flat(value: object) -> Iterator[object]:
    if isinstance(value, list):
        for item in value:
            yield from flat(item)
    else:
        yield value


# --------------------------------------------------------------------------
# Arrays recorded as bytes beside the record (the recorder's "blob"s)
# --------------------------------------------------------------------------

_STRUCT_FORMAT = {"float16": "e", "float32": "f", "float64": "d", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H",
                  "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q", "bool": "?"}
_CHUNK = 1 << 20  # bytes read at a time: a multiple of every item size


def attach_blobs(record: Optional[dict]) -> None:
    """Name the record's binary file in each array stored there (read lazily when compared)."""
    if not record or not record.get("blob_file"):
        return
    path = record["blob_file"]
    stack: List[object] = [record.get("events"), record.get("variables")]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "blob" in item:
                item["file"] = path
            else:
                stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _blob_chunks(plain: dict) -> Iterator[bytes]:
    """The bytes of an array stored in the record's binary file, a chunk at a time."""
    offset, size = plain["blob"]
    with open(plain["file"], "rb") as handle:
        handle.seek(offset)
        remaining = size
        while remaining > 0:
            chunk = handle.read(min(remaining, _CHUNK))
            if not chunk:
                raise ValueError(f"{plain['file']}: the record's array is cut short")
            remaining -= len(chunk)
            yield chunk


def _blob_numbers(plain: dict) -> Iterator[object]:
    """The numbers of an array stored as bytes, read a chunk at a time."""
    layout = "<" + _STRUCT_FORMAT[plain["dtype"]]
    for chunk in _blob_chunks(plain):
        for (number,) in struct.iter_unpack(layout, chunk):
            yield number


def array_chunks(before: dict, after: dict) -> Optional[Iterator[Tuple["numpy.ndarray", "numpy.ndarray"]]]:
    """Two stored arrays of one shape and dtype as numpy arrays, chunk by chunk, leaving out
    the chunks whose bytes agree; None where they are not both stored as bytes.  A 1.5M- or
    40M-parameter model's variables are compared in seconds, not number by number."""
    if "blob" not in before or "blob" not in after or before["dtype"] not in _STRUCT_FORMAT:
        return None
    dtype = numpy.dtype(before["dtype"]).newbyteorder("<")

    def differing() -> Iterator[Tuple["numpy.ndarray", "numpy.ndarray"]]:
        for chunk_b, chunk_a in itertools.zip_longest(_blob_chunks(before), _blob_chunks(after), fillvalue=b""):
            if chunk_b != chunk_a:
                if len(chunk_b) != len(chunk_a):
                    raise ValueError(f"{before['file']}: the two records' arrays differ in size")
                yield numpy.frombuffer(chunk_b, dtype=dtype), numpy.frombuffer(chunk_a, dtype=dtype)
    return differing()


def arrays_close(before: "numpy.ndarray", after: "numpy.ndarray", rtol: float, atol: float) -> bool:
    """:func:`numbers_close` for every pair of two arrays' numbers."""
    if before.dtype.kind not in "fc":
        return bool(numpy.array_equal(before, after))
    x, y = before.astype(numpy.float64), after.astype(numpy.float64)
    nan_x, nan_y = numpy.isnan(x), numpy.isnan(y)
    if not numpy.array_equal(nan_x, nan_y):
        return False
    x, y = x[~nan_x], y[~nan_y]
    if rtol == 0 and atol == 0:
        return bool(numpy.array_equal(x, y))
    with numpy.errstate(invalid="ignore"):
        return bool(numpy.all(numpy.abs(x - y) <= atol + rtol * numpy.abs(y)))


def is_real(dtype: str) -> bool:
    """Whether an array of ``dtype`` holds real (or complex) numbers, which a tolerance applies to;
    integers and booleans are compared exactly, however the array was stored."""
    return any(kind in str(dtype) for kind in ("float", "complex", "half"))


def largest_magnitude(plain: dict) -> float:
    """The largest finite magnitude among an array's numbers, over all of it (stored as bytes or
    kept in the record alike): the size a part of which a value's own spread tolerates."""
    largest = 0.0
    if "blob" in plain and plain["dtype"] in _STRUCT_FORMAT:
        dtype = numpy.dtype(plain["dtype"]).newbyteorder("<")
        for chunk in _blob_chunks(plain):
            values = numpy.abs(numpy.frombuffer(chunk, dtype=dtype).astype(numpy.float64))
            largest = max(largest, float(numpy.max(values[numpy.isfinite(values)], initial=0.0)))
        return largest
    for number in numbers(plain):
        if isinstance(number, (int, float)) and not isinstance(number, bool) and math.isfinite(number):
            largest = max(largest, abs(number))
    return largest


def numbers(plain: dict) -> Iterator[object]:
    """An array's numbers in C order, from the record or from its binary file."""
    if "blob" in plain:
        return _blob_numbers(plain)
    return flat(plain["value"])


def is_array(plain: dict) -> bool:
    return "dtype" in plain and "shape" in plain and ("value" in plain or "blob" in plain)
