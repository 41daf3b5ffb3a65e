"""The verdict on two runs' records: pure (no TensorFlow, no process), so that every rule of
the comparison is tested on records written by hand (tests/verify/test_compare.py)."""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple


from migrate_tpu.verify.judge.advice import failure_advice, is_tpu_compile_failure, is_tpu_node_failure, no_record_advice, node_advice
from migrate_tpu.verify.values.arrays import array_chunks, arrays_close, is_array, is_real, largest_magnitude, numbers, numbers_close
from migrate_tpu.verify.values.printed import numbered, pair_printed, printed_lines, release_numbers, version_strings
from migrate_tpu.verify.values.record_walk import Apart, Leaf, walk
from migrate_tpu.verify.values.tolerance import NOISE_MARGIN, Judge, Key, Spread, path_words
from migrate_tpu.verify.values.verdict import BEFORE_API, DIVERGED, ERROR, RETRACED, SAME, TIMED_OUT, RunResult, Verdict

class _Mismatch(Exception):
    def __init__(self, replica: Optional[int], before: Any, after: Any, what: str = "value") -> None:
        super().__init__(what)
        self.replica, self.before, self.after, self.what = replica, before, after, what
        self.keys: List[str] = []  # the dict keys (a Keras log's 'loss') from the outside in


def _compare_plain(before: Any, after: Any, judge: Judge, key: Key, replica: Optional[int] = None) -> None:
    """Raise :class:`_Mismatch` at the first place, in the record's order, where the two recorded
    values differ (``key``: where ``before`` sits in its record, for the judge's tolerance of it):
    where their structures part, or a pair of values that do not agree."""
    for step in walk(before, after, key, replica):
        if isinstance(step, Apart) or not _agrees(step, judge):
            mismatch = _Mismatch(step.replica, step.before, step.after, step.what if isinstance(step, Apart) else "value")
            mismatch.keys = list(step.names)
            raise mismatch


def _agrees(leaf: Leaf, judge: Judge) -> bool:
    """Whether two values the walk reached agree: numbers within the judge's tolerance of them (a
    value the original cannot repeat is listed, not compared), anything else exactly (an object's
    description, which names its address, not at all)."""
    before, after = leaf.before, leaf.after
    if leaf.kind == "python":
        return before["python"] == after["python"]
    if leaf.kind == "other":
        return before == after or "object" in before
    tolerance = judge.tolerance(leaf.key, path_words(leaf.key[3:]))  # type: ignore[arg-type]
    if tolerance is None:
        return True
    if leaf.kind == "number":
        return numbers_close(before["python"], after["python"], *tolerance)
    rtol, atol, share = tolerance
    if before.get("sha1") is not None and before.get("sha1") == after.get("sha1"):
        return True  # the same bytes: the same numbers, at any tolerance
    # one tolerance whether the array was stored beside the record or kept in it: integers and
    # booleans exactly, and a part of the value's own size over all of it (never one chunk's)
    if not is_real(before["dtype"]):
        rtol = atol = share = 0.0
    if share:
        atol = max(atol, share * largest_magnitude(before))
    chunks = array_chunks(before, after)
    if chunks is not None:
        return all(arrays_close(chunk_b, chunk_a, rtol, atol) for chunk_b, chunk_a in chunks)
    return all(numbers_close(b, a, rtol, atol) for b, a in itertools.zip_longest(numbers(before), numbers(after)))


def _short(plain: Any, limit: int = 12) -> Any:
    """A recorded value as a person reads it (arrays cut to ``limit`` numbers)."""
    if plain is None:
        return None
    if "replicas" in plain:
        return [_short(p, limit) for p in plain["replicas"]]
    if "list" in plain:
        return [_short(p, limit) for p in plain["list"]]
    if "dict" in plain:
        return {k: _short(v, limit) for k, v in plain["dict"]}
    if is_array(plain):
        flat = list(itertools.islice(numbers(plain), limit + 1))
        if not plain["shape"]:
            return flat[0] if flat else plain.get("value")
        return flat[:limit] + (["..."] if len(flat) > limit else [])
    if "python" in plain:
        return plain["python"]
    return plain.get("text", plain.get("object"))


def _shown_path(path: Path, run: RunResult) -> str:
    """``path`` (in a run's copy) as the user names it."""
    if run.program is not None and run.shown_program:
        try:
            if path.resolve() == run.program.resolve():
                return run.shown_program
        except OSError:
            pass
    try:
        relative = path.resolve().relative_to(run.root.resolve())
    except (ValueError, OSError):
        return str(path)
    return os.path.normpath(os.path.join(run.shown_root or ".", *relative.parts))


def _where(location: Optional[str], run: RunResult) -> Optional[dict]:
    """``{"file", "line", "source"}`` for a recorded ``file:line`` of one copy, the file named
    as the user knows it (a notebook's cell in ``cell``)."""
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
    place = {"file": _shown_path(path, run), "line": number, "source": source}
    if cell is not None:
        place["cell"] = int(cell)
    return place


def _cell_line(path: Path, cell: int, number: int) -> Optional[str]:
    notebook = json.loads(path.read_text("utf-8"))
    cells = notebook.get("cells", [])
    if not 0 < cell <= len(cells):
        return None
    source = cells[cell - 1].get("source", "")
    lines = ("".join(source) if isinstance(source, list) else source).splitlines()
    return lines[number - 1].strip() if 0 < number <= len(lines) else None


_STEP_KINDS = ("run", "function")


def same_kind(before: str, after: str) -> bool:
    return before == after or (before in _STEP_KINDS and after in _STEP_KINDS)


def describe_kind(kind: str) -> str:
    return {"run": "the value returned by run", "function": "the value returned by the step function",
            "keras": "a Keras execution's logs", "reduce": "the value of reduce", "gather": "the value of gather",
            "local_results": "the value of experimental_local_results", "fit": "the fit history",
            "evaluate": "the evaluate results", "predict": "the predict outputs"}.get(kind, kind)


_MISMATCH_WORDS = {"value": "the values differ", "shape": "the shapes differ", "dtype": "the dtypes differ",
                   "structure": "the structures differ", "replica count": "the numbers of replicas differ"}


def _exception_text(record: dict, runs: Tuple[RunResult, ...]) -> Optional[str]:
    """``Type: message`` of a record's uncaught exception, the copies' paths as the user names them."""
    exception = record.get("exception")
    if not exception:
        return None if record.get("exit_status") == 0 else f"exit status {record.get('exit_status')}"
    text = f"{exception.get('type')}: {exception.get('message')}"
    for run in runs:
        text = text.replace(str(run.root), run.shown_root or ".")
    return text


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


#: Where the TPU compile step says the op it refused was made (runtime/tpu/tpu_ops.py): raised when
#: the step is traced, its traceback's innermost line of the program is the step's call.
_CREATED_AT = re.compile(r"\(created at (.+?):(\d+)\)")


def _exception_place(record: dict, run: RunResult) -> Optional[dict]:
    """Where in the program's own files its uncaught exception was raised: the line that made
    the op a TPU compilation refused, else the innermost frame of its traceback in the run's
    copy (a bare ``except:`` that raises again included)."""
    exception = record.get("exception") or {}
    traceback = exception.get("traceback") or ""
    root = str(run.root)
    made = _CREATED_AT.search(exception.get("message") or "")
    if made and (made.group(1).startswith(root) or (run.program is not None and made.group(1) == str(run.program))):
        return _where(f"{made.group(1)}:{made.group(2)}", run)
    frames = [(path, line) for path, line in _FRAME.findall(traceback) if path.startswith(root) or
              (run.program is not None and path == str(run.program))]
    if not frames:
        return None
    path, line = frames[-1]
    return _where(f"{path}:{line}", run)


def _steps_done(record: dict) -> int:
    return int(record.get("steps") or 0)


#: Exit statuses of a run killed by SIGKILL (a shell's 128 + 9; Python's -9).
KILLED = (137, -9)


class CompareContext(NamedTuple):
    """How the two runs compared were made: the hosts of a pod (``--hosts``), the surface the
    original ran under, and where the original differs from itself (each value's own A/A
    difference, from which its tolerance follows; None: it repeats its bits)."""
    hosts: Optional[int] = None
    before_api: str = BEFORE_API
    spread: Optional[Spread] = None


#: Two runs of one interpreter, one host, the TF 2.1 surface, an original that repeats its bits.
PLAIN = CompareContext()


def compare(before: RunResult, after: RunResult, rtol: float, atol: float, label: str,
            context: CompareContext = PLAIN) -> Verdict:
    """The verdict on two runs' records (``label``: the original as the user named it)."""
    hosts, before_api, spread = context
    verdict = Verdict(SAME, tolerance={"rtol": rtol, "atol": atol}, hosts=hosts, before_api=before_api)
    judge = Judge(rtol, atol, spread)
    verdict = _judged(verdict, judge, (before, after), label, context)
    verdict = verdict.but(values_compared=judge.compared, values_not_compared=tuple(judge.skipped))
    if spread is not None:
        verdict = verdict.but(tolerance={"rtol": rtol, "atol": atol, "per_value": True, "margin": NOISE_MARGIN, "loose": judge.loose})
    return verdict


def _original_failure(failure: str, before_api: str) -> str:
    """Why verify cannot judge an original that fails before its first step, in the TPU's terms
    where a TPU of the release refused it too (its compile step, a TPU Node's worker)."""
    if is_tpu_compile_failure(failure):
        return f"the original does not compile for the TPU of the TF {before_api} surface: {failure}"
    if is_tpu_node_failure(failure):
        return (f"the original would not run on a TPU Node of the TF {before_api} surface either (the machine emulated: "
                f"Colab's and Cloud TPU's of 2020 unless --tpu-env vm): {failure}; {node_advice(failure)}")
    return f"the original fails under the TF {before_api} surface: {failure}"


def _both_stopped_note(failure: str, steps: int) -> str:
    node = (" (a TPU Node of that release stopped the original there too, the machine emulated unless --tpu-env vm: "
            f"its TPU worker reaches no local disk and runs no Python; {node_advice(failure)})") if is_tpu_node_failure(failure) else ""
    return f"both runs stopped with the same exception after step {steps}: {failure}{node}; the {steps} steps before it are compared"


def _judged(verdict: Verdict, judge: Judge, runs: Tuple[RunResult, RunResult], label: str, context: CompareContext) -> Verdict:
    """The verdict on two runs: an error where they cannot be compared, else where they first part,
    else ``same`` (or ``retraced``) with what the reader should know."""
    before, after = runs
    b, a = before.record or {}, after.record or {}
    matched, unmatched = match_variables(b.get("variables", []), a.get("variables", []))
    verdict = verdict.but(
        before=run_summary(before), after=run_summary(after), variables_compared=len(matched),
        variables_not_compared=tuple(entry for entry in unmatched if entry["why"] == BOOKKEEPING_REASON),
        variables_only_in={side: sorted(e["name"] for e in unmatched if e["side"] == side) for side in ("before", "after")},
        traces={"before": {k: v["count"] for k, v in (b.get("traces") or {}).items()},
                "after": {k: v["count"] for k, v in (a.get("traces") or {}).items()}},
        replicas={"before": b.get("replicas"), "after": a.get("replicas")})
    stopped = _not_comparable(verdict, runs, label, context.before_api)
    if stopped is not None:
        return stopped
    steps = min(_steps_done(b), _steps_done(a))
    verdict = verdict.but(steps=steps)
    divergence = _first_divergence(runs, judge, steps, (matched, unmatched), context.hosts)
    if divergence is not None:
        return verdict.but(verdict=DIVERGED, first_divergence=divergence)
    return _agreed(verdict, runs, steps)


def _not_comparable(verdict: Verdict, runs: Tuple[RunResult, RunResult], label: str, before_api: str) -> Optional[Verdict]:
    """The verdict where the two runs cannot be compared step by step (a run timed out or was
    killed, the original did not run or failed before its first step, the migration did not
    start), else None."""
    before, after = runs
    if before.status == TIMED_OUT or after.status == TIMED_OUT:
        which = "original" if before.status == TIMED_OUT else "migrated program"
        return error(verdict, f"the {which} timed out", "raise --timeout, or verify fewer steps with --steps N")
    killed = [(which, run) for which, run in (("original", before), ("migrated program", after)) if run.status in KILLED]
    if killed:
        which, run = killed[0]
        return error(verdict, f"the {which} was killed (SIGKILL, exit status {run.status}), as the system's out-of-memory killer does",
                     "give it more memory (stop what else runs), or verify it on fewer devices (--replicas, --hosts)")
    if before.record is None:
        return error(verdict, "the original did not run: " + _last_line(before.stderr),
                     no_record_advice(before.stderr))
    b = before.record
    before_failure = _exception_text(b, runs)
    if before_failure is not None and not _steps_done(b):
        return error(verdict, _original_failure(before_failure, before_api), failure_advice(b, label, before_api, before.program))
    if after.record is None:
        if after.status in (2, 127) and "TensorFlow" in after.stderr:
            return error(verdict, "the migrated program did not run: " + _last_line(after.stderr), no_record_advice(after.stderr))
        return verdict.but(verdict=DIVERGED, first_divergence={"step": 1, "kind": "exit", "where": None, "before": 0,
                                                               "after": after.status, "message": _last_line(after.stderr)})
    return None


def _first_divergence(runs: Tuple[RunResult, RunResult], judge: Judge, steps: int,
                      variables: Tuple[List[Tuple[str, dict, dict]], List[dict]], hosts: Optional[int]) -> Optional[dict]:
    """Where two runs that both recorded first part, in order of what says most: the recorded
    values of the steps, the uncaught exception, the number of steps, the variables, the other
    hosts of a pod, the printed numbers; None where they agree."""
    before, after = runs
    b, a = before.record or {}, after.record or {}
    divergence = _first_event_divergence((b, a), runs, judge, steps)
    before_failure, after_failure = _exception_text(b, runs), _exception_text(a, runs)
    if divergence is None and (before_failure or after_failure) and before_failure != after_failure:
        places = {"before": _exception_place(b, before), "after": _exception_place(a, after)}
        divergence = {"step": min(_steps_done(b), _steps_done(a)) + 1, "kind": "exception",
                      "where": places if any(places.values()) else None,
                      "what": "the uncaught exception", "before": before_failure, "after": after_failure}
    if divergence is None and _steps_done(b) != _steps_done(a):
        divergence = {"step": steps + 1, "kind": "steps", "where": None, "before": _steps_done(b), "after": _steps_done(a),
                      "what": "the number of steps", "message": "the two programs ran a different number of steps"}
    if divergence is None:
        divergence = _variable_divergence(*variables, judge, steps)
    if hosts and hosts > 1:
        if divergence is not None:
            divergence["host"] = 0
        else:
            divergence = _host_divergence(before, after, judge, steps)
    if divergence is None:
        divergence = _printed_divergence(before, after, judge, steps, version_strings(b, a))
    return divergence


def _agreed(verdict: Verdict, runs: Tuple[RunResult, RunResult], steps: int) -> Verdict:
    """``same`` with its notes (both runs stopped alike, what was not compared, one replica), or
    ``retraced`` where the migration traces its step functions more often."""
    before, after = runs
    b, a = before.record or {}, after.record or {}
    before_failure = _exception_text(b, runs)
    if before_failure is not None:
        verdict = verdict.noted(_both_stopped_note(before_failure, steps))
    if verdict.variables_not_compared:
        names = ", ".join(sorted({e["name"] for e in verdict.variables_not_compared}))
        verdict = verdict.noted(f"not compared: {names} (optimizer bookkeeping that the two API surfaces name differently)")
    one_replica = _one_replica_note(b, a)
    if one_replica:
        verdict = verdict.noted(one_replica)
    retrace = _retrace(b, a, steps)
    if retrace is not None:
        place = _where(retrace.get("where"), after)
        if place is not None:
            retrace["where"] = f"{place['file']}:{place['line']}"
        verdict = verdict.but(verdict=RETRACED, retraced=retrace)
    return verdict


def _one_replica_note(b: dict, a: dict) -> Optional[str]:
    """A warning where every strategy stepped ran one replica: a reduction's SUM and MEAN agree there."""
    seen = [r for record in (b, a) for r in (record.get("replicas") or [])]
    if seen and max(seen) < 2:
        return ("every step ran on one replica, where a reduction's SUM and MEAN agree: give the strategy two devices or "
                "more (--replicas, --hosts) to compare reductions")
    return None


def error(verdict: Verdict, message: str, advice: str) -> Verdict:
    """``verdict`` as an error: a new verdict."""
    return verdict.but(verdict=ERROR, error=message, advice=advice)


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


def run_summary(run: RunResult) -> dict:
    record = run.record or {}
    return {"exit_status": run.status, "seconds": round(run.seconds, 2), "steps": record.get("steps"),
            "tensorflow": record.get("tensorflow"), "exception": record.get("exception"),
            "replicas": record.get("replicas"), "hosts": 1 + len(run.host_records)}


def _first_event_divergence(records: Tuple[dict, dict], runs: Tuple[RunResult, RunResult], judge: Judge,
                            steps: int, host: int = 0) -> Optional[dict]:
    """The first recorded event of the first ``steps`` steps where host ``host``'s two
    ``records`` differ (``runs``: the two runs, whose copies the places are shown in)."""
    (b, a), (before, after) = records, runs
    b_events = [e for e in b.get("events", []) if e["step"] <= steps]
    a_events = [e for e in a.get("events", []) if e["step"] <= steps]
    for index in range(max(len(b_events), len(a_events))):
        eb = b_events[index] if index < len(b_events) else None
        ea = a_events[index] if index < len(a_events) else None
        if eb is None or ea is None or not same_kind(eb["kind"], ea["kind"]):
            present = eb if eb is not None else ea
            assert present is not None  # the loop runs while one side has an event
            return {"step": present["step"], "kind": present["kind"], "what": "a recorded value is missing in the "
                    + ("original" if eb is None else "migrated program") if (eb is None or ea is None) else "different calls",
                    "where": {"before": _where(eb and eb["where"], before), "after": _where(ea and ea["where"], after)},
                    "before": eb and eb["kind"], "after": ea and ea["kind"], "replica": None}
        try:
            judge.context, judge.step = f"step {eb['step']}: {describe_kind(eb['kind'])}", eb["step"]
            _compare_plain(eb["value"], ea["value"], judge, ("event", host, index))
        except _Mismatch as mismatch:
            keys = "".join(f"[{key!r}]" for key in mismatch.keys)
            key = f" {keys}" if keys else ""
            return {"step": ea["step"], "kind": ea["kind"],
                    "what": f"{describe_kind(ea['kind'])}{key}: {_MISMATCH_WORDS.get(mismatch.what, mismatch.what)}",
                    "key": mismatch.keys[-1] if mismatch.keys else None,
                    "where": {"before": _where(eb["where"], before), "after": _where(ea["where"], after)},
                    "replica": mismatch.replica, "before": _shown(mismatch, "before"), "after": _shown(mismatch, "after")}
    return None


def _shown(mismatch: _Mismatch, side: str) -> Any:
    """One side of a mismatch as a person reads it: where shapes or dtypes differ, those first."""
    value = getattr(mismatch, side)
    if mismatch.what in ("shape", "dtype") and isinstance(value, dict):
        return {mismatch.what: value.get(mismatch.what), "values": _short(value)}
    return _short(value)


def _host_divergence(before: RunResult, after: RunResult, judge: Judge, steps: int) -> Optional[dict]:
    """The first divergence on hosts 1.. of a pod (host 0's record is the main one)."""
    for host, (hb, ha) in enumerate(zip(before.host_records, after.host_records), 1):
        if hb is None or ha is None:
            continue
        matched, unmatched = match_variables(hb.get("variables", []), ha.get("variables", []))
        divergence = (_first_event_divergence((hb, ha), (before, after), judge, steps, host)
                      or _variable_divergence(matched, unmatched, judge, steps, host))
        if divergence is not None:
            divergence["host"] = host
            return divergence
    return None


# --------------------------------------------------------------------------
# Variables: matched by name and, among those of one name, by creation order
# --------------------------------------------------------------------------

#: The last part of an optimizer's bookkeeping variables, which the API surfaces keep and
#: name differently (TF 2.1's optimizers and Keras' legacy ones: ``iter`` and their
#: hyperparameters as variables; Keras >= 2.11: ``iteration``; mixed precision's loss
#: scale).  Such a variable is set aside only where one side alone has it; matched, it is
#: compared as any other.
BOOKKEEPING = frozenset({"iter", "iteration", "iterations", "decay", "learning_rate", "lr", "beta_1", "beta_2", "momentum", "rho",
                         "epsilon", "current_loss_scale", "loss_scale", "good_steps", "dynamic_scale"})
BOOKKEEPING_REASON = "optimizer bookkeeping"


def _leaf(name: str) -> str:
    return name.rsplit("/", 1)[-1].split(":", 1)[0]


def _ordinal(index: int) -> str:
    suffix = "th" if 10 <= index % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(index % 10, "th")
    return f"{index}{suffix}"


def match_variables(before: List[dict], after: List[dict]) -> Tuple[List[Tuple[str, dict, dict]], List[dict]]:
    """``(matched, unmatched)``: variables of one name are paired in the order they were
    created (the recorder lists them so), so that two of one name (two optimizers'
    ``iter``, two metrics' ``total``) are each compared with their counterpart.
    ``matched``: ``(label, before, after)``; ``unmatched``: ``{"name", "side", "why"}``."""
    groups: Dict[str, Dict[str, List[dict]]] = {}
    for side, variables in (("before", before), ("after", after)):
        for variable in variables:
            groups.setdefault(variable["name"], {"before": [], "after": []})[side].append(variable)
    matched: List[Tuple[str, dict, dict]] = []
    unmatched: List[dict] = []
    for name, sides in groups.items():
        count = max(len(sides["before"]), len(sides["after"]))
        for index in range(count):
            label = name if count == 1 else f"{name} (the {_ordinal(index + 1)} of {count} of that name)"
            b = sides["before"][index] if index < len(sides["before"]) else None
            a = sides["after"][index] if index < len(sides["after"]) else None
            if b is not None and a is not None:
                matched.append((label, b, a))
            else:
                why = BOOKKEEPING_REASON if _leaf(name) in BOOKKEEPING else "created by one version only"
                unmatched.append({"name": label, "side": "before" if a is None else "after", "why": why})
    return matched, unmatched


def _variable_divergence(matched: List[Tuple[str, dict, dict]], unmatched: List[dict], judge: Judge,
                         steps: int, host: int = 0) -> Optional[dict]:
    for label, vb, va in matched:
        if vb["shape"] != va["shape"] or vb["dtype"] != va["dtype"]:
            return {"step": steps, "kind": "variable", "what": f"variable {label}: the shapes or dtypes differ",
                    "where": {"variable": label}, "replica": None, "before": [vb["shape"], vb["dtype"]], "after": [va["shape"], va["dtype"]]}
        try:
            judge.context, judge.step = f"variable {label}", None
            _compare_plain({"replicas": vb["replicas"]}, {"replicas": va["replicas"]}, judge, ("variable", host, label))
        except _Mismatch as mismatch:
            return {"step": steps, "kind": "variable", "what": f"variable {label}", "where": {"variable": label},
                    "replica": mismatch.replica, "before": _shown(mismatch, "before"), "after": _shown(mismatch, "after")}
    for entry in unmatched:
        if entry["why"] != BOOKKEEPING_REASON:
            side = "original" if entry["side"] == "before" else "migrated program"
            return {"step": steps, "kind": "variable", "what": f"variable {entry['name']} exists in the {side} only",
                    "where": {"variable": entry["name"]}, "replica": None,
                    "before": entry["name"] if entry["side"] == "before" else None,
                    "after": entry["name"] if entry["side"] == "after" else None}
    return None


# --------------------------------------------------------------------------
# Printed lines: the last and least signal
# --------------------------------------------------------------------------

def _printed_divergence(before: RunResult, after: RunResult, judge: Judge, steps: int,
                        versions: Sequence[str] = ()) -> Optional[dict]:
    """Lines whose words agree but whose numbers do not (a printed line of a different
    wording is not compared: the migration may change a message; a TensorFlow version
    string is no number of the computation).  Where the records hold the print calls, the
    divergence names the line that printed it and the steps done by then."""
    b_lines = printed_lines(before.record or {}, before.stdout)
    a_lines = printed_lines(after.record or {}, after.stdout)
    b_numbered, a_numbered = numbered(b_lines, versions), numbered(a_lines, versions)
    # lines paired in order by their words: a migration that prints a line more or less (a
    # hand migration of a guide) still has the others compared
    pairs = pair_printed(b_numbered, a_numbered)
    releases = release_numbers(versions)
    for (index_b, _, nb), (index_a, _, na) in pairs:
        if len(nb) != len(na):
            continue
        for number, (x, y) in enumerate(zip(nb, na)):
            if x != y and x in releases and y in releases:
                continue  # `float(tf.__version__[:3])`: the release as the program reads it, 2.1 against 2.4
            event_b = b_lines[index_b][1]
            judge.context, judge.step = "", int(event_b.get("step") or 0) if event_b is not None else None
            tolerance = judge.tolerance(("printed", 0, index_b, number), f"printed line {index_b + 1}")
            if tolerance is not None and not numbers_close(x, y, *tolerance):
                event_b, event_a = b_lines[index_b][1], a_lines[index_a][1]
                if event_a is None or event_b is None:
                    return {"step": steps, "kind": "printed", "what": f"printed line {index_a + 1}", "where": {"stdout_line": index_a + 1},
                            "replica": None, "before": b_lines[index_b][0], "after": a_lines[index_a][0]}
                done = int(event_a.get("step") or 0)
                return {"step": max(done, 1), "kind": "printed",
                        "what": "a printed line, " + (f"after step {done}" if done else "before step 1"),
                        "where": {"before": _where(event_b.get("where"), before), "after": _where(event_a.get("where"), after)},
                        "replica": None, "before": b_lines[index_b][0], "after": a_lines[index_a][0]}
    return None


def _retrace(b: dict, a: dict, steps: int) -> Optional[dict]:
    """A function the migrated program traces more often than the original, or that keeps
    being traced once the program is warm (after its first step)."""
    b_traces = {k: v["count"] for k, v in (b.get("traces") or {}).items()}
    a_traces = {k: v for k, v in (a.get("traces") or {}).items()}

    def warm(record: dict) -> int:
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
