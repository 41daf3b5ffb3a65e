"""Arrays compared past their first numbers and just past the tolerance (no TensorFlow):
a difference a little over rtol or atol diverges, whether the array is stored as bytes
beside the record (compared chunk by chunk with numpy) or kept in the record's JSON (compared
number by number, every number). The records are shaped as runtime/record/recorder.py writes them."""

import hashlib
import struct
from pathlib import Path

from migrate_tpu.verify import RunResult, compare
from migrate_tpu.verify.values.arrays import attach_blobs, arrays_close, numbers_close

NUMBERS = [0.5 * k for k in range(100)]


def _record(variable: dict) -> dict:
    return {"steps": 1, "exit_status": 0, "exception": None,
            "events": [{"step": 1, "kind": "function", "where": "/nowhere/t.py:9", "value": {"dtype": "float32", "shape": [], "value": 1.0}}],
            "variables": [{"name": "kernel:0", "shape": variable["shape"], "dtype": "float32", "replicas": [variable, variable]}],
            "traces": {}, "traces_per_step": [1]}


def _result(record: dict) -> RunResult:
    return RunResult(0, 1.0, record, "", "", Path("/nowhere"))


def stored(folder: Path, name: str, numbers) -> RunResult:
    """A run whose variable is stored as bytes beside its record."""
    data = struct.pack("<%df" % len(numbers), *numbers)
    path = folder / name
    path.write_bytes(data)
    record = _record({"dtype": "float32", "shape": [len(numbers)], "blob": [0, len(data)], "sha1": hashlib.sha1(data).hexdigest()})
    record["blob_file"] = str(path)
    attach_blobs(record)
    return _result(record)


def kept(numbers) -> RunResult:
    """A run whose variable is kept in the record's JSON."""
    return _result(_record({"dtype": "float32", "shape": [len(numbers)], "value": list(numbers)}))


def _changed(index: int, value: float):
    numbers = list(NUMBERS)
    numbers[index] = value
    return numbers


def test_stored_arrays_diverge_just_past_the_relative_tolerance(tmp_path):
    # 35.25 against 35.0: 0.25 apart; rtol 0.005 allows 0.17625, rtol 0.01 allows 0.3525
    changed = _changed(70, 35.25)
    assert compare(stored(tmp_path, "a.bin", NUMBERS), stored(tmp_path, "b.bin", changed), 0.01, 0.0, "t.py").verdict == "same"
    assert compare(stored(tmp_path, "a.bin", NUMBERS), stored(tmp_path, "b.bin", changed), 0.005, 0.0, "t.py").verdict == "diverged"


def test_stored_arrays_diverge_just_past_the_absolute_tolerance(tmp_path):
    changed = _changed(70, 35.25)
    assert compare(stored(tmp_path, "a.bin", NUMBERS), stored(tmp_path, "b.bin", changed), 0.0, 0.3, "t.py").verdict == "same"
    assert compare(stored(tmp_path, "a.bin", NUMBERS), stored(tmp_path, "b.bin", changed), 0.0, 0.2, "t.py").verdict == "diverged"


def test_arrays_close_is_numbers_close_for_each_pair():
    import numpy

    before = numpy.array(NUMBERS, dtype=numpy.float32)
    for rtol, atol in ((0.0, 0.0), (0.005, 0.0), (0.01, 0.0), (0.0, 0.2), (0.0, 0.3), (1e-5, 1e-6)):
        for value in (35.0, 35.25, 35.0001):
            after = numpy.array(_changed(70, value), dtype=numpy.float32)
            expected = all(numbers_close(float(a), float(b), rtol, atol) for a, b in zip(after.tolist(), before.tolist()))
            assert arrays_close(after, before, rtol, atol) == expected, (rtol, atol, value)


def test_arrays_kept_in_the_record_are_compared_to_their_last_number():
    assert compare(kept(NUMBERS), kept(NUMBERS), 0.0, 0.0, "t.py").verdict == "same"
    for index in (0, 63, 64, 80, 99):
        verdict = compare(kept(NUMBERS), kept(_changed(index, -1.0)), 0.0, 0.0, "t.py")
        assert (verdict.verdict, verdict.first_divergence["what"]) == ("diverged", "variable kernel:0"), index


# ---------------------------------------------------------------- one tolerance, however stored


def _int_record(numbers, folder=None, name=""):
    if folder is None:
        return _result(_record({"dtype": "int64", "shape": [len(numbers)], "value": list(numbers)}))
    data = struct.pack("<%dq" % len(numbers), *numbers)
    (folder / name).write_bytes(data)
    record = _record({"dtype": "int64", "shape": [len(numbers)], "blob": [0, len(data)], "sha1": hashlib.sha1(data).hexdigest()})
    record["blob_file"] = str(folder / name)
    attach_blobs(record)
    return _result(record)


def test_integers_are_compared_exactly_whether_stored_or_kept(tmp_path):
    """A count off by one is no rounding: an int64 array kept in the record once passed within
    rtol where the same array stored beside it diverged (a value's tolerance hung on its storage)."""
    counts, off_by_one = list(range(1000, 1100)), list(range(1000, 1099)) + [1100]
    kept_verdict = compare(_int_record(counts), _int_record(off_by_one), 0.01, 0.0, "t.py").verdict
    stored_verdict = compare(_int_record(counts, tmp_path, "a.bin"), _int_record(off_by_one, tmp_path, "b.bin"), 0.01, 0.0, "t.py").verdict
    assert (kept_verdict, stored_verdict) == ("diverged", "diverged")


def test_a_values_size_is_its_largest_magnitude_over_all_of_it_however_stored(tmp_path):
    """The part of a value's own size its spread tolerates is taken over the whole array: for an
    array stored beside the record it once came from the one chunk (1 MiB) that differed."""
    from migrate_tpu.verify.values.arrays import largest_magnitude
    numbers = [0.001] * 300_000 + [1000.0]  # past the first MiB of float32: the large number in the second chunk
    run = stored(tmp_path, "a.bin", numbers)
    variable = run.record["variables"][0]["replicas"][0]
    assert largest_magnitude(variable) == 1000.0
    assert largest_magnitude(kept(numbers).record["variables"][0]["replicas"][0]) == 1000.0
