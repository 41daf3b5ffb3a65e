"""The verdict on two runs' records: pure (no TensorFlow, no process), so that every rule of
the comparison is tested on records written by hand (tests/verify/test_compare.py)."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import List, Optional, Tuple

from migrate_tpu.verify.verdict import DIVERGED, ERROR, RETRACED, SAME, TIMED_OUT, BEFORE_API, RunResult, Verdict

# A number in a printed line (the lowest-priority signal).
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
# A printed line about time or speed differs from run to run: never compared.
_TIMING = re.compile(r"(?i)(\btime|\btook\b|elapsed|\bsec|\bseconds?\b|\d\s*m?s\b|/s\b|/sec\b|per second|\bETA\b)")


class _Mismatch(Exception):
    def __init__(self, replica: Optional[int], before, after, what: str = "value") -> None:
        super().__init__(what)
        self.replica, self.before, self.after, self.what = replica, before, after, what


def _numbers_close(a, b, rtol: float, atol: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if rtol == 0 and atol == 0:
        return a == b
    return abs(a - b) <= atol + rtol * abs(b)


def _flat(value):
    if isinstance(value, list):
        for item in value:
            yield from _flat(item)
    else:
        yield value


def _compare_plain(before, after, rtol: float, atol: float, replica: Optional[int] = None) -> None:
    """Raise :class:`_Mismatch` where the two recorded values differ."""
    if before is None or after is None:
        if before is not after:
            raise _Mismatch(replica, before, after, "structure")
        return
    if set(before) != set(after):
        raise _Mismatch(replica, before, after, "structure")
    if "replicas" in before:
        if len(before["replicas"]) != len(after["replicas"]):
            raise _Mismatch(replica, before, after, "replica count")
        for index, (b, a) in enumerate(zip(before["replicas"], after["replicas"])):
            _compare_plain(b, a, rtol, atol, index)
        return
    if "list" in before:
        if len(before["list"]) != len(after["list"]):
            raise _Mismatch(replica, before, after, "structure")
        for b, a in zip(before["list"], after["list"]):
            _compare_plain(b, a, rtol, atol, replica)
        return
    if "dict" in before:
        if [k for k, _ in before["dict"]] != [k for k, _ in after["dict"]]:
            raise _Mismatch(replica, before, after, "structure")
        for (_, b), (_, a) in zip(before["dict"], after["dict"]):
            _compare_plain(b, a, rtol, atol, replica)
        return
    if "value" in before:
        if before["shape"] != after["shape"]:
            raise _Mismatch(replica, before, after, "shape")
        if before["dtype"] != after["dtype"]:
            raise _Mismatch(replica, before, after, "dtype")
        for b, a in zip(_flat(before["value"]), _flat(after["value"])):
            if not _numbers_close(b, a, rtol, atol):
                raise _Mismatch(replica, before, after)
        return
    if "python" in before:
        if not _numbers_close(before["python"], after["python"], rtol, atol):
            raise _Mismatch(replica, before, after)
        return
    if before != after and "object" not in before:
        raise _Mismatch(replica, before, after)


def _short(plain, limit: int = 12):
    """A recorded value as a person reads it (arrays cut to ``limit`` numbers)."""
    if plain is None:
        return None
    if "replicas" in plain:
        return [_short(p, limit) for p in plain["replicas"]]
    if "list" in plain:
        return [_short(p, limit) for p in plain["list"]]
    if "dict" in plain:
        return {k: _short(v, limit) for k, v in plain["dict"]}
    if "value" in plain:
        flat = list(_flat(plain["value"]))
        if not plain["shape"]:
            return flat[0] if flat else plain["value"]
        return flat[:limit] + (["..."] if len(flat) > limit else [])
    if "python" in plain:
        return plain["python"]
    return plain.get("text", plain.get("object"))


def _where(location: Optional[str], run: RunResult, label_root: str) -> Optional[dict]:
    """``{"file", "line", "source"}`` for a recorded ``file:line`` of one copy, the file named
    as the user knows it."""
    if not location:
        return None
    file, _, line = location.rpartition(":")
    try:
        number = int(line)
    except ValueError:
        return {"file": location, "line": None, "source": None}
    source = None
    path = Path(file)
    cell = None
    if ":cell" in file:
        path_text, _, cell = file.rpartition(":cell")
        path = Path(path_text)
    try:
        if cell is None:
            lines = path.read_text("utf-8", "replace").splitlines()
            source = lines[number - 1].strip() if 0 < number <= len(lines) else None
        else:
            source = _cell_line(path, int(cell), number)
    except (OSError, ValueError):
        source = None
    shown = str(path)
    try:
        relative = path.resolve().relative_to(run.root.resolve())
        parts = relative.parts
        # the copy's first part is the copied file or folder, which the user calls label_root
        shown = os.path.normpath(str(Path(label_root).joinpath(*parts[1:]))) if parts else label_root
    except ValueError:
        pass
    if cell is not None:
        shown += f" cell {cell}"
    return {"file": shown, "line": number, "source": source}


def _cell_line(path: Path, cell: int, number: int) -> Optional[str]:
    notebook = json.loads(path.read_text("utf-8"))
    cells = notebook.get("cells", [])
    if not 0 < cell <= len(cells):
        return None
    source = cells[cell - 1].get("source", "")
    lines = ("".join(source) if isinstance(source, list) else source).splitlines()
    return lines[number - 1].strip() if 0 < number <= len(lines) else None


_STEP_KINDS = ("run", "function")


def _same_kind(before: str, after: str) -> bool:
    return before == after or (before in _STEP_KINDS and after in _STEP_KINDS)


def _describe_kind(kind: str) -> str:
    return {"run": "the value returned by run", "function": "the value returned by the step function",
            "keras": "a Keras execution's logs", "reduce": "the value of reduce", "gather": "the value of gather",
            "local_results": "the value of experimental_local_results", "fit": "the fit history",
            "evaluate": "the evaluate results", "predict": "the predict outputs"}.get(kind, kind)


def compare(before: RunResult, after: RunResult, rtol: float, atol: float, label: str, hosts: Optional[int] = None,
            after_label: Optional[str] = None) -> Verdict:
    """The verdict on two runs' records."""
    verdict = Verdict(SAME, tolerance={"rtol": rtol, "atol": atol}, hosts=hosts)
    verdict.before = _run_summary(before)
    verdict.after = _run_summary(after)
    b, a = before.record or {}, after.record or {}
    verdict.variables_only_in = {
        "before": sorted({v["name"] for v in b.get("variables", [])} - {v["name"] for v in a.get("variables", [])}),
        "after": sorted({v["name"] for v in a.get("variables", [])} - {v["name"] for v in b.get("variables", [])})}
    verdict.variables_compared = len({v["name"] for v in b.get("variables", [])} & {v["name"] for v in a.get("variables", [])})
    verdict.traces = {"before": {k: v["count"] for k, v in (b.get("traces") or {}).items()},
                      "after": {k: v["count"] for k, v in (a.get("traces") or {}).items()}}
    if before.status == TIMED_OUT or after.status == TIMED_OUT:
        which = "original" if before.status == TIMED_OUT else "migrated program"
        return error(verdict, f"the {which} timed out", "raise --timeout, or verify fewer steps with --steps N")
    if before.record is None:
        return error(verdict, "the original did not run: " + _last_line(before.stderr),
                      _no_record_advice(before.stderr))
    if b.get("exit_status") != 0:
        exception = b.get("exception") or {}
        message = f"{exception.get('type')}: {exception.get('message')}" if exception else f"exit status {b.get('exit_status')}"
        return error(verdict, f"the original fails under the TF {BEFORE_API} surface: {message}",
                      f"make `migrate-tpu run --tf-api {BEFORE_API} {label}` succeed first (or pick its interpreter with --before-python); "
                      "verify compares against a working original")
    if after.record is None:
        if after.status in (2, 127) and "TensorFlow" in after.stderr:
            return error(verdict, "the migrated program did not run: " + _last_line(after.stderr), _no_record_advice(after.stderr))
        verdict.verdict = DIVERGED
        verdict.first_divergence = {"step": 1, "kind": "exit", "where": None, "before": 0, "after": after.status,
                                    "message": _last_line(after.stderr)}
        return verdict
    steps = min(b.get("steps", 0), a.get("steps", 0))
    verdict.steps = steps
    after_label = after_label or label
    divergence = _first_event_divergence(b, a, before, after, label, after_label, rtol, atol, steps)
    if divergence is None and a.get("exit_status") != 0:
        exception = a.get("exception") or {}
        divergence = {"step": a.get("steps", 0) + 1, "kind": "exception", "where": None, "before": None,
                      "after": f"{exception.get('type')}: {exception.get('message')}" if exception else f"exit status {a.get('exit_status')}"}
    if divergence is None and b.get("steps") != a.get("steps"):
        divergence = {"step": steps + 1, "kind": "steps", "where": None, "before": b.get("steps"), "after": a.get("steps"),
                      "message": "the two programs ran a different number of steps"}
    if divergence is None:
        divergence = _variable_divergence(b, a, rtol, atol, steps)
    if hosts and hosts > 1:
        if divergence is not None:
            divergence["host"] = 0
        else:
            divergence = _host_divergence(before, after, label, after_label, rtol, atol, steps)
    if divergence is None:
        divergence = _printed_divergence(before.stdout, after.stdout, rtol, atol, steps)
    if divergence is not None:
        verdict.verdict = DIVERGED
        verdict.first_divergence = divergence
        return verdict
    retrace = _retrace(b, a, steps)
    if retrace is not None:
        place = _where(retrace.get("where"), after, after_label)
        if place is not None:
            retrace["where"] = f"{place['file']}:{place['line']}"
        verdict.verdict = RETRACED
        verdict.retraced = retrace
    return verdict


def error(verdict: Verdict, message: str, advice: str) -> Verdict:
    verdict.verdict = ERROR
    verdict.error = message
    verdict.advice = advice
    return verdict


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


def _no_record_advice(stderr: str) -> str:
    if "TensorFlow" in stderr:
        return ("give an interpreter that has TensorFlow with --python (the original's own with --before-python), "
                "e.g. --python tf2.21 (`migrate-tpu envs` builds it)")
    return "run it with `migrate-tpu run` to see why"


def _run_summary(run: RunResult) -> dict:
    record = run.record or {}
    return {"exit_status": run.status, "seconds": round(run.seconds, 2), "steps": record.get("steps"),
            "tensorflow": record.get("tensorflow"), "exception": record.get("exception")}


def _first_event_divergence(b: dict, a: dict, before: RunResult, after: RunResult, label: str, after_label: str, rtol, atol,
                            steps: int) -> Optional[dict]:
    b_events = [e for e in b.get("events", []) if e["step"] <= steps]
    a_events = [e for e in a.get("events", []) if e["step"] <= steps]
    for index in range(max(len(b_events), len(a_events))):
        eb = b_events[index] if index < len(b_events) else None
        ea = a_events[index] if index < len(a_events) else None
        if eb is None or ea is None or not _same_kind(eb["kind"], ea["kind"]):
            present = eb if eb is not None else ea
            assert present is not None  # the loop runs while one side has an event
            return {"step": present["step"], "kind": present["kind"], "what": "a recorded value is missing in the "
                    + ("original" if eb is None else "migrated program") if (eb is None or ea is None) else "different calls",
                    "where": {"before": _where(eb and eb["where"], before, label), "after": _where(ea and ea["where"], after, after_label)},
                    "before": eb and eb["kind"], "after": ea and ea["kind"], "replica": None}
        try:
            _compare_plain(eb["value"], ea["value"], rtol, atol)
        except _Mismatch as mismatch:
            return {"step": ea["step"], "kind": ea["kind"], "what": f"{_describe_kind(ea['kind'])} ({mismatch.what})",
                    "where": {"before": _where(eb["where"], before, label), "after": _where(ea["where"], after, after_label)},
                    "replica": mismatch.replica, "before": _short(mismatch.before), "after": _short(mismatch.after)}
    return None


def _host_divergence(before: RunResult, after: RunResult, label: str, after_label: str, rtol, atol, steps: int) -> Optional[dict]:
    """The first divergence on hosts 1.. of a pod (host 0's record is the main one)."""
    for host, (hb, ha) in enumerate(zip(before.host_records, after.host_records), 1):
        if hb is None or ha is None:
            continue
        divergence = (_first_event_divergence(hb, ha, before, after, label, after_label, rtol, atol, steps)
                      or _variable_divergence(hb, ha, rtol, atol, steps))
        if divergence is not None:
            divergence["host"] = host
            return divergence
    return None


def _variable_divergence(b: dict, a: dict, rtol, atol, steps: int) -> Optional[dict]:
    b_vars = {v["name"]: v for v in b.get("variables", [])}
    a_vars = {v["name"]: v for v in a.get("variables", [])}
    # A variable of one side only is not a divergence: the optimizers of the two API surfaces
    # keep different bookkeeping variables (TF 2.1's `decay`, Keras 2.11's `iteration`).
    for name in sorted(set(b_vars) & set(a_vars)):
        vb, va = b_vars[name], a_vars[name]
        if vb["shape"] != va["shape"] or vb["dtype"] != va["dtype"]:
            return {"step": steps, "kind": "variable", "what": f"variable {name}: shape or dtype",
                    "where": {"variable": name}, "replica": None, "before": [vb["shape"], vb["dtype"]], "after": [va["shape"], va["dtype"]]}
        try:
            _compare_plain({"replicas": vb["replicas"]}, {"replicas": va["replicas"]}, rtol, atol)
        except _Mismatch as mismatch:
            return {"step": steps, "kind": "variable", "what": f"variable {name}", "where": {"variable": name},
                    "replica": mismatch.replica, "before": _short(mismatch.before), "after": _short(mismatch.after)}
    return None


def _printed_numbers(text: str) -> List[Tuple[int, str, List[float]]]:
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        found = _NUMBER.findall(line)
        if found and not _TIMING.search(line):
            lines.append((number, _NUMBER.sub("#", line), [float(x) for x in found]))
    return lines


def _printed_divergence(before: str, after: str, rtol, atol, steps: int) -> Optional[dict]:
    """Lines whose words agree but whose numbers do not (a printed line of a different
    wording is not compared: the migration may change a message)."""
    b_lines, a_lines = _printed_numbers(before), _printed_numbers(after)
    if len(b_lines) != len(a_lines):
        return None
    for (line_b, shape_b, nb), (line_a, shape_a, na) in zip(b_lines, a_lines):
        if shape_b != shape_a or len(nb) != len(na):
            continue
        for x, y in zip(nb, na):
            if not _numbers_close(x, y, rtol, atol):
                return {"step": steps, "kind": "printed", "what": f"printed line {line_a}", "where": {"stdout_line": line_a},
                        "replica": None, "before": before.splitlines()[line_b - 1], "after": after.splitlines()[line_a - 1]}
    return None


def _retrace(b: dict, a: dict, steps: int) -> Optional[dict]:
    """A function the migrated program traces more often than the original, or that keeps
    being traced once the program is warm (after its first step)."""
    b_traces = {k: v["count"] for k, v in (b.get("traces") or {}).items()}
    a_traces = {k: v for k, v in (a.get("traces") or {}).items()}

    def warm(record):
        per_step = (record.get("traces_per_step") or [])[:steps]
        return per_step[-1] - per_step[0] if len(per_step) > 1 else 0

    warm_before, warm_after = warm(b), warm(a)
    for name, entry in sorted(a_traces.items(), key=lambda item: -item[1]["count"]):
        count = entry["count"]
        before_count = b_traces.get(name)
        grew = before_count is not None and count > before_count
        keeps = before_count is None and warm_after > warm_before and count > 1
        if grew or keeps:
            return {"function": name, "where": entry.get("where"), "before": before_count or 0, "after": count,
                    "traces_after_first_step": {"before": warm_before, "after": warm_after}}
    if warm_after > warm_before:
        name, entry = max(a_traces.items(), key=lambda item: item[1]["count"]) if a_traces else ("?", {"count": 0})
        return {"function": name, "where": entry.get("where"), "before": b_traces.get(name, 0), "after": entry["count"],
                "traces_after_first_step": {"before": warm_before, "after": warm_after}}
    return None
