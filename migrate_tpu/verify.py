"""``migrate-tpu verify``: run a program before and after its migration and compare, step by step.

The original runs under the TF 2.1 surface, the migrated copy under the 2.4 one, both
under the runtime's emulated TPU with the same replicas, hosts, seeds and argv; each
run's :mod:`migrate_tpu.runtime.recorder` writes what it computed, and
:func:`compare` reads the two records.  The migrated copy is what ``fix`` makes with
this run's settings (through :mod:`migrate_tpu.compose`), written in a temporary
folder: the user's files are never written.  The runtime is reached only through its
launcher (no TensorFlow in this process).

Verdicts: ``same`` (exit 0), ``diverged`` and ``retraced`` (1), ``error`` (2).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from migrate_tpu.runtime import recorder as recording  # the record's variable names only (no TensorFlow)
from migrate_tpu.runtime.launch import launch

SAME, DIVERGED, RETRACED, ERROR = "same", "diverged", "retraced", "error"
EXIT_STATUS = {SAME: 0, DIVERGED: 1, RETRACED: 1, ERROR: 2}
FORMATS = ("text", "json", "markdown", "github")

#: Tolerances when the two runs use different interpreters (the releases' numerics differ);
#: one interpreter for both runs compares exactly.
DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-6

BEFORE_API, AFTER_API = "2.1", "2.4"
TIMED_OUT = 124
# A number in a printed line (the lowest-priority signal).
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
# A printed line about time or speed differs from run to run: never compared.
_TIMING = re.compile(r"(?i)(\btime|\btook\b|elapsed|\bsec|\bseconds?\b|\d\s*m?s\b|/s\b|/sec\b|per second|\bETA\b)")


class VerifyError(Exception):
    """Verification could not be set up (one line for the user)."""


@dataclass
class RunResult:
    status: int
    seconds: float
    record: Optional[dict]
    stdout: str
    stderr: str
    root: Path  # the copy the program ran from
    host_records: List[Optional[dict]] = field(default_factory=list)  # hosts 1.. of a pod (--hosts)


@dataclass
class Verdict:
    verdict: str
    steps: int = 0
    first_divergence: Optional[dict] = None
    traces: Dict[str, Dict[str, int]] = field(default_factory=lambda: {"before": {}, "after": {}})
    retraced: Optional[dict] = None
    error: Optional[str] = None
    advice: Optional[str] = None
    before: Optional[dict] = None
    after: Optional[dict] = None
    tolerance: Dict[str, float] = field(default_factory=dict)
    hosts: Optional[int] = None
    variables_compared: int = 0
    variables_only_in: Dict[str, List[str]] = field(default_factory=lambda: {"before": [], "after": []})

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.verdict]

    def as_json(self) -> dict:
        return {
            "verdict": self.verdict,
            "steps": self.steps,
            "first_divergence": self.first_divergence,
            "retraced": self.retraced,
            "traces": self.traces,
            "before": self.before,
            "after": self.after,
            "tolerance": self.tolerance,
            "variables_compared": self.variables_compared,
            "variables_only_in": self.variables_only_in,
            "error": self.error,
            "advice": self.advice,
        }


# --------------------------------------------------------------------------
# Preparing the two copies
# --------------------------------------------------------------------------


def _copy(source: Path, target: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".git", "*.pyc", ".migrate-tpu-cache"))
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def migrate_copy(original: Path, copy: Path, fix_options: dict) -> List[str]:
    """Migrate ``copy`` (a file or tree copied from ``original``) as ``fix`` would, with the
    settings ``original`` gets; returns the errors (``path: message`` lines)."""
    from migrate_tpu.compose import Run, settings_for
    from migrate_tpu.engine.report import error_line
    from migrate_tpu.settings import CommandLine, SettingsError

    options = dict(fix_options)
    typed = CommandLine(select=tuple(options.pop("select", ()) or ()), ignore=tuple(options.pop("ignore", ()) or ()),
                        target=options.pop("target", None), unsafe_fixes=options.pop("unsafe_fixes", None), jobs=options.pop("jobs", None))
    try:
        settings, _ = settings_for([str(original)], typed, config_file=options.pop("config_file", None), isolated=options.pop("isolated", False))
    except SettingsError as error:
        raise VerifyError(str(error))
    from dataclasses import replace

    # The copy lives outside the project: its paths are matched against nothing of the user's.
    settings = replace(settings, exclude=(), respect_gitignore=False, force_exclude=False)
    run = Run([str(copy)], settings, quiet=True, no_progress=True, no_cache=True)
    errors = []
    for result in run.results("fix"):
        if result.failed:
            errors.append(error_line(result))
    return errors


@dataclass
class Plan:
    """What runs: the two copies and, in each, the program to start."""

    workdir: Path
    before_root: Path
    after_root: Path
    before_program: Path
    after_program: Path
    original_label: str
    extra_path: Optional[str]
    after_label: str = ""


def plan(target: str, entry: Optional[str], after: Optional[str], fix_options: dict) -> Plan:
    """Copy the program (and migrate the after copy) into a new temporary folder."""
    source = Path(target)
    if not source.exists():
        raise VerifyError(f"{target}: no such file or folder")
    if source.is_dir() and not entry:
        raise VerifyError(f"{target} is a folder: name its entry point with --entry (e.g. --entry train.py {target})")
    if entry and not source.is_dir():
        raise VerifyError(f"--entry {entry}: {target} is not a folder")
    if entry and not (source / entry).is_file():
        raise VerifyError(f"--entry {entry}: no such file in {target}")
    workdir = Path(tempfile.mkdtemp(prefix="migrate-tpu-verify-"))
    try:
        name = source.resolve().name
        before_root, after_root = workdir / "before", workdir / "after"
        _copy(source, before_root / name)
        if after:
            if not Path(after).exists():
                raise VerifyError(f"--after {after}: no such file or folder")
            if Path(after).is_dir() != source.is_dir():
                raise VerifyError(f"--after {after}: give a {'folder' if source.is_dir() else 'file'}, as {target} is")
            _copy(Path(after), after_root / name)
        else:
            _copy(source, after_root / name)
            errors = migrate_copy(source, after_root / name, fix_options)
            if errors:
                raise VerifyError("the migration failed: " + "; ".join(e.replace(str(after_root / name), target) for e in errors))
        relative = Path(name) / entry if entry else Path(name)
        label = str(source / entry) if entry else str(source)
        after_label = str(after) if after else str(source)
        return Plan(workdir, before_root, after_root, before_root / relative, after_root / relative,
                    label, None if source.is_dir() else str(source.resolve().parent), after_label)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


@contextmanager
def _captured(stdout_path: Path, stderr_path: Path):
    """The process' stdout and stderr (and so its children's) into files, for the duration."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            yield
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


@contextmanager
def _environment(values: Dict[str, Optional[str]]):
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_one(program: Path, root: Path, args: Sequence[str], tf_api: str, python: Optional[str], steps: Optional[int],
            seed: int, replicas, hosts, tpu_env, timeout, extra_path: Optional[str], record_path: Path) -> RunResult:
    out_path, err_path = record_path.with_suffix(".stdout"), record_path.with_suffix(".stderr")
    python_path = os.pathsep.join(p for p in (extra_path, os.environ.get("PYTHONPATH")) if p) or None
    env = {recording.RECORD_VARIABLE: str(record_path), recording.STEPS_VARIABLE: str(steps) if steps else None,
           recording.SEED_VARIABLE: str(seed), "PYTHONPATH": python_path, "PYTHONHASHSEED": str(seed)}
    started = time.monotonic()
    with _environment(env), _captured(out_path, err_path):
        status = launch(str(program), list(args), replicas=replicas, tf_api=tf_api, python=python,
                        hosts=hosts, timeout=timeout, tpu_env=tpu_env)
    seconds = time.monotonic() - started
    if status == 130:  # the run was interrupted (Ctrl-C): so is verification
        raise KeyboardInterrupt
    record = None
    if record_path.exists():
        record = json.loads(record_path.read_text("utf-8"))
    host_records = []
    for host in range(1, int(hosts or 1)):  # the recorder of host K writes RECORD.hostK
        path = Path(f"{record_path}.host{host}")
        host_records.append(json.loads(path.read_text("utf-8")) if path.exists() else None)
    return RunResult(status, seconds, record, out_path.read_text("utf-8", "replace"), err_path.read_text("utf-8", "replace"), root,
                     host_records)


# --------------------------------------------------------------------------
# Comparing
# --------------------------------------------------------------------------


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
        return _error(verdict, f"the {which} timed out", "raise --timeout, or verify fewer steps with --steps N")
    if before.record is None:
        return _error(verdict, "the original did not run: " + _last_line(before.stderr),
                      _no_record_advice(before.stderr))
    if b.get("exit_status") != 0:
        exception = b.get("exception") or {}
        message = f"{exception.get('type')}: {exception.get('message')}" if exception else f"exit status {b.get('exit_status')}"
        return _error(verdict, f"the original fails under the TF {BEFORE_API} surface: {message}",
                      f"make `migrate-tpu run --tf-api {BEFORE_API} {label}` succeed first (or pick its interpreter with --before-python); "
                      "verify compares against a working original")
    if after.record is None:
        if after.status in (2, 127) and "TensorFlow" in after.stderr:
            return _error(verdict, "the migrated program did not run: " + _last_line(after.stderr), _no_record_advice(after.stderr))
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


def _error(verdict: Verdict, message: str, advice: str) -> Verdict:
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


# --------------------------------------------------------------------------
# The whole command
# --------------------------------------------------------------------------


def verify(target: str, args: Sequence[str] = (), *, entry: Optional[str] = None, after: Optional[str] = None, steps: Optional[int] = None,
           python: Optional[str] = None, before_python: Optional[str] = None, rtol: Optional[float] = None, atol: Optional[float] = None,
           replicas=None, hosts=None, tpu_env=None, timeout=None, seed: int = recording.DEFAULT_SEED, fix_options: Optional[dict] = None) -> Verdict:
    """Migrate, run both, compare; the temporary copies are removed whatever happens."""
    the_plan = plan(target, entry, after, fix_options or {})
    try:
        before_python = before_python or python
        same_interpreter = (before_python or None) == (python or None)
        if rtol is None:
            rtol = 0.0 if same_interpreter else DEFAULT_RTOL
        if atol is None:
            atol = 0.0 if same_interpreter else DEFAULT_ATOL
        common = dict(steps=steps, seed=seed, replicas=replicas, hosts=hosts, tpu_env=tpu_env, timeout=timeout, extra_path=the_plan.extra_path)
        before = run_one(the_plan.before_program, the_plan.before_root, args, BEFORE_API, before_python,
                         record_path=the_plan.workdir / "before.json", **common)
        if before.record is None or before.record.get("exit_status") != 0 or before.status == TIMED_OUT:
            # no point running the migrated program against an original that does not run
            after_run = RunResult(-1, 0.0, None, "", "", the_plan.after_root)
            verdict = compare(before, after_run, rtol, atol, the_plan.original_label, hosts)
            verdict.after = None
            if verdict.verdict != ERROR:
                verdict = _error(verdict, "the original did not run", "run it with `migrate-tpu run --tf-api 2.1`")
            verdict.error = _with_stderr_tail(verdict.error, before.stderr)
            return verdict
        after_run = run_one(the_plan.after_program, the_plan.after_root, args, AFTER_API, python,
                            record_path=the_plan.workdir / "after.json", **common)
        verdict = compare(before, after_run, rtol, atol, target, hosts, the_plan.after_label)
        if verdict.verdict == ERROR:
            verdict.error = _with_stderr_tail(verdict.error, after_run.stderr)
        return verdict
    finally:
        shutil.rmtree(the_plan.workdir, ignore_errors=True)


def _with_stderr_tail(error: Optional[str], stderr: str, lines: int = 12) -> str:
    """``error`` and the last lines the run wrote to stderr, less a last line the error
    already quotes (its headline is often the run's own last line)."""
    error = error or ""
    kept = [line for line in stderr.splitlines() if line.strip() and not line.startswith("migrate-tpu run: TPU emulation")]
    kept = kept[-lines:]
    if kept and error and kept[-1].strip() in error.splitlines()[0]:
        kept.pop()
    return error + ("\n" + "\n".join(kept) if kept else "")


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------


def _where_text(where: Optional[dict]) -> str:
    if not where:
        return "?"
    if "variable" in where:
        return f"variable {where['variable']}"
    if "stdout_line" in where:
        return f"stdout line {where['stdout_line']}"
    parts = []
    for side in ("before", "after"):
        place = where.get(side)
        if place:
            source = f": {place['source']}" if place.get("source") else ""
            parts.append(f"  {side:6} {place['file']}:{place['line']}{source}")
    return "\n" + "\n".join(parts) if parts else "?"


def _divergence_lines(divergence: dict) -> List[str]:
    replica = f", replica {divergence['replica']}" if divergence.get("replica") is not None else ""
    if divergence.get("host") is not None:
        replica = f", host {divergence['host']}" + replica
    lines = [f"first divergence at step {divergence['step']}: {divergence.get('what', divergence['kind'])}{replica}"]
    where = _where_text(divergence.get("where"))
    if where.startswith("\n"):
        lines += where[1:].splitlines()
    elif where != "?":
        lines.append(f"  at {where}")
    lines.append(f"  before: {json.dumps(divergence.get('before'))}")
    lines.append(f"  after:  {json.dumps(divergence.get('after'))}")
    if divergence.get("message"):
        lines.append(f"  {divergence['message']}")
    return lines


def _headline(verdict: Verdict, label: str) -> str:
    if verdict.verdict == SAME:
        return f"{label}: same ({verdict.steps} steps, {verdict.variables_compared} variables compared)"
    if verdict.verdict == DIVERGED and verdict.first_divergence is not None:
        return f"{label}: diverged at step {verdict.first_divergence['step']}"
    if verdict.verdict == RETRACED and verdict.retraced is not None:
        r = verdict.retraced
        return f"{label}: retraced: {r['function']} traced {r['after']} times after migration, {r['before']} before"
    return f"{label}: error: {verdict.error.splitlines()[0] if verdict.error else ''}"


def report(verdict: Verdict, output_format: str, label: str) -> str:
    if output_format == "json":
        return json.dumps(verdict.as_json(), indent=2) + "\n"
    lines = [_headline(verdict, label)]
    if verdict.verdict == DIVERGED and verdict.first_divergence is not None:
        lines += _divergence_lines(verdict.first_divergence)
    elif verdict.verdict == RETRACED and verdict.retraced is not None:
        r = verdict.retraced
        warm = r["traces_after_first_step"]
        lines.append(f"  {r['function']} ({r.get('where')}): traces before {r['before']}, after {r['after']}; "
                     f"traces after the first step: before {warm['before']}, after {warm['after']}")
        lines.append("  on a TPU each trace is an XLA compilation: define the tf.function once, outside the loop or method")
    elif verdict.verdict == ERROR:
        lines += [f"  {line}" for line in (verdict.error or "").splitlines()[1:]]
        if verdict.advice:
            lines.append(f"  what to do: {verdict.advice}")
    timing = []
    for side in ("before", "after"):
        run = getattr(verdict, side)
        if run:
            timing.append(f"{side}: exit {run['exit_status']}, {run['seconds']:.1f}s")
    if timing:
        lines.append("  " + "; ".join(timing))
    if output_format == "markdown":
        icon = {SAME: "✅", DIVERGED: "❌", RETRACED: "⚠️", ERROR: "❗"}[verdict.verdict]
        body = "\n".join(lines[1:])
        return f"### {icon} migrate-tpu verify: {verdict.verdict}\n\n{lines[0]}\n\n" + (f"```\n{body}\n```\n" if body else "")
    if output_format == "github":
        text = "\n".join(lines) + "\n"
        if verdict.verdict != SAME:
            level = "error" if verdict.verdict in (DIVERGED, ERROR) else "warning"
            place = ""
            divergence = verdict.first_divergence or {}
            after_place = (divergence.get("where") or {}).get("after") if isinstance(divergence.get("where"), dict) else None
            if after_place and after_place.get("line"):
                place = f" file={after_place['file']},line={after_place['line']}"
            message = lines[0].replace("%", "%25").replace("\n", "%0A")
            text += f"::{level}{place}::{message}\n"
        return text
    return "\n".join(lines) + "\n"
