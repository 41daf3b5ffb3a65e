"""The whole ``verify`` command: plan the copies, run the original and the migration, compare.
The temporary copies are removed whatever happens.

With two interpreters (``--before-python tf2.1 --python tf2.4``) the releases' numerics
differ, and training makes the difference grow, so no fixed tolerance tells a changed
computation from rounding.  A third run is the control: the original again, under the TF 2.1
surface on the migrated program's interpreter.  The migration is judged on that one
interpreter, exactly (control against migrated program); the original on its own release
against the control measures how far the releases drift apart, which the report states.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from migrate_tpu.runtime import MIXED_TF_API, NATIVE_TF_API, TARGET_VARIABLE
from migrate_tpu.runtime.process.launch import builds_its_own_cluster, resolve_python
from migrate_tpu.verify.blame.blame import blame, partial_copy
from migrate_tpu.verify.command.options import VerifyOptions
from migrate_tpu.verify.values.changes import Hunk, apply, hunks_between, ran, shown_label, watch_list
from migrate_tpu.verify.judge.advice import moved_api_calls, stopped_for_lack_of_an_api
from migrate_tpu.verify.runs.cluster import reads_its_cluster
from migrate_tpu.verify.judge.compare import CompareContext, compare, error, run_summary
from migrate_tpu.verify.runs.plan import Copy, Plan, changed_links, fresh_copy, plan, put_in_place
from migrate_tpu.verify.judge.repeatability import Judgement, exact_power, judge_repeatability, measure_power, runs_at_all, seeded_power
from migrate_tpu.verify.runs.running import RunRequest, run_one
from migrate_tpu.verify.runs.side_by_side import killed, run_pair, start_beside
from migrate_tpu.verify.judge.spread import release_drift
from migrate_tpu.verify.values.tolerance import Spread
from migrate_tpu.verify.blame.suspects import likely_neutral
from migrate_tpu.verify.values.verdict import (AUTO_API, BEFORE_APIS, DEFAULT_ATOL, DEFAULT_RTOL, DIVERGED, ERROR, NOT_EXERCISED, RETRACED,
                                              SAME, RunResult, Verdict)

#: Devices of the one worker a program that builds MultiWorkerMirroredStrategy itself runs
#: on when neither --hosts nor --replicas is given: on a worker with its CPU alone the
#: strategy has one replica, where SUM and MEAN agree.  One worker, as the program runs
#: where no cluster is configured (a notebook, a first try), and as a cluster refuses a
#: program that ran TensorFlow ops before building the strategy ("Collective ops must be
#: configured at program startup", TF 2.1 to 2.21).
SINGLE_WORKER_DEVICES = 2
#: Worker processes of such a program when one worker cannot run it because it reads its
#: cluster (TF_CONFIG) itself.
DEFAULT_CLUSTER_HOSTS = 2
#: Which original a rerun runs: on the migrated program's interpreter (as the control runs), or
#: on its own interpreter (where it cannot run on the migrated program's); "migrated" reruns the
#: migration.
ORIGINAL, ORIGINAL_ON_ITS_OWN = "original", "original-on-its-own"



def verify(target: str, args: Sequence[str] = (), options: Optional[VerifyOptions] = None, **asked: Any) -> Verdict:
    """Migrate, run both (and the control, across releases), compare: ``options``, or the same
    asked by name (:class:`~migrate_tpu.verify.command.options.VerifyOptions`)."""
    session = _Session(target, tuple(args), options or VerifyOptions(**asked))
    try:
        return session.verdict()
    finally:
        shutil.rmtree(session.plan.workdir, ignore_errors=True)


class _Session:
    """One verification: the plan of its copies, the machine its runs share, the notes it
    gathers, and how each of its runs is asked for, run, run again and judged (what the stages
    below are handed, one object in place of five closures)."""

    def __init__(self, target: str, args: Tuple[str, ...], options: VerifyOptions) -> None:
        self.options, self.args = options, args
        self.before_python = options.before_python or options.python
        two_releases = (resolve_python(self.before_python) or None) != (resolve_python(options.python) or None)
        self.plan = plan(target, options.entry, options.after, options.fix_options or {}, control=two_releases)
        self.notes: List[str] = []
        self.replicas, self.hosts = options.replicas, options.hosts
        self.exact = (0.0 if options.rtol is None else options.rtol, 0.0 if options.atol is None else options.atol)
        self.moves = _moves_watched(options.fix_options or {}, options.after_api)
        self.watch = self.plan.workdir / "watch.json"
        self.hunks: List[Hunk] = []
        self.api = options.before_api  # the original's surface, once its run chose it

    # ---- the runs ---------------------------------------------------------------------

    def request(self, copy: Copy, api: str, interpreter: Optional[str], name: str, until: Optional[int] = None,
                environment: Optional[Dict[str, str]] = None) -> RunRequest:
        options = self.options
        return RunRequest(copy, list(self.args), api, interpreter, until or options.steps, options.seed, self.replicas, self.hosts,
                          options.tpu_env, options.timeout, self.plan.workdir / f"{name}.json",
                          self.watch if name in ("migrated", "migrated-alone") else None, dict(self.moves, **(environment or {})))

    def noted(self, name: str, result: RunResult, copy: Copy) -> RunResult:
        for path in changed_links(copy):
            self.notes.append(f"warning: the {name} run changed {path}, a large file verify linked from your folder instead of copying")
        return result

    def run(self, copy: Copy, api: str, interpreter: Optional[str], name: str, until: Optional[int] = None,
            environment: Optional[Dict[str, str]] = None) -> RunResult:
        return self.noted(name, run_one(self.request(copy, api, interpreter, name, until, environment)), copy)

    def rerun(self, side: str, name: str, environment: Dict[str, str]) -> RunResult:
        """The original (on the migrated program's interpreter, as the control is; on its own where
        it cannot run there) or the migration again, each in a fresh copy of the user's folder."""
        original = side in (ORIGINAL, ORIGINAL_ON_ITS_OWN)
        copy = fresh_copy(self.plan, name) if original else _fresh_migration(self.plan, self.hunks, name)
        interpreter = self.before_python if side == ORIGINAL_ON_ITS_OWN else self.options.python
        return self.run(copy, self.api if original else self.options.after_api, interpreter, name, environment=environment)

    def judged(self, reference: RunResult, other: RunResult, spread: Optional[Spread],
               tolerance: Optional[Tuple[float, float]] = None) -> Verdict:
        rtol, atol = tolerance or self.exact
        return compare(reference, other, rtol, atol, self.plan.original_label, CompareContext(self.hosts, self.api, spread))

    # ---- the verification -------------------------------------------------------------

    def verdict(self) -> Verdict:
        options = self.options
        cluster = _cluster_from_the_code(self.plan, self.hosts, self.replicas)
        if cluster is not None:
            self.replicas, self.hosts = cluster.get("replicas"), cluster.get("hosts")
            self.notes.append(cluster["note"])
        self.hunks = hunks_between(self.plan.before.root, self.plan.after.root, self.plan.fixes)
        self.watch.write_text(json.dumps(watch_list(self.hunks, self.plan.after.root)), "utf-8")
        first = _first_runs(self)
        before, after_run = first.before, first.migrated
        self.api = first.api
        shown_cluster = cluster and {k: v for k, v in cluster.items() if k != "note"}
        if after_run is None:
            # no point comparing the migrated program with an original that does not run
            verdict = _without_an_original(before, self.plan, self.exact, self.hosts, first.api, first.api_reason)
            return verdict.but(cluster=shown_cluster).noted(*self.notes, first=True)
        judgement = _judge_the_runs(first, self.rerun, self.judged, (options.rtol, options.atol), options.power)
        verdict = judgement.verdict.but(before_api_reason=first.api_reason, after_api=options.after_api, cluster=shown_cluster)
        verdict = _moved_apis(verdict, after_run, self.plan)
        if first.api_reason:
            self.notes.append(first.api_reason)
        if verdict.verdict == ERROR:
            verdict = verdict.but(error=_with_stderr_tail(verdict.error, after_run.stderr, (before, after_run)))
        elif after_run.record is not None:
            verdict = _cover(verdict, self.hunks, after_run, self.plan.after)
        if options.find_blame and verdict.verdict in (DIVERGED, RETRACED) and self.hunks:
            verdict = verdict.but(blame=_find_blame(self, verdict, judgement, after_run))
        return verdict.but(hosts=self.hosts).noted(*self.notes, first=True)


@dataclass
class _FirstRuns:
    """The original's run and its surface (with what ``auto`` chose and why), the control's
    (across two releases) and the migration's (``None`` where the original does not run)."""
    before: RunResult
    api: str
    api_reason: Optional[str]
    control: Optional[RunResult]
    migrated: Optional[RunResult]


def _first_runs(session: _Session) -> _FirstRuns:
    """The original (then the control) with the migration beside it where there is room
    (:mod:`~migrate_tpu.verify.runs.side_by_side`): neither waits for the other.  A run of the two
    that was killed (the memory may not have held both) runs again alone, in a fresh copy."""
    the_plan, hunks, run, noted, options = session.plan, session.hunks, session.run, session.noted, session.options
    before_api, before_python, after_api, python = options.before_api, session.before_python, options.after_api, options.python
    beside = start_beside(session.request(the_plan.after, after_api, python, "migrated"), options.jobs)
    side_used = beside is not None
    migrated: Optional[RunResult] = None
    try:
        original, api, api_reason = _original_run(the_plan, run, before_api, before_python)
        if beside is not None and killed(original):
            migrated, beside = beside.finish(), None  # (None where it did not end well either)
            put_in_place(the_plan.before, fresh_copy(the_plan, "original-alone").root)
            original, api, api_reason = _original_run(the_plan, run, before_api, before_python)
        if not runs_at_all(original):
            return _FirstRuns(original, api, api_reason, None, None)
        control = run(the_plan.control, api, python, "control") if the_plan.control is not None else None
        if beside is not None:
            migrated = beside.finish()
        if beside is not None and the_plan.control is not None and control is not None and killed(control):
            put_in_place(the_plan.control, fresh_copy(the_plan, "control-alone").root)
            control = run(the_plan.control, api, python, "control-alone")
    finally:
        if beside is not None:
            beside.stop()
    if migrated is not None:
        return _FirstRuns(original, api, api_reason, control, noted("migrated", migrated, the_plan.after))
    if side_used:  # stopped, killed, or not waited for: again, alone, in a fresh copy
        put_in_place(the_plan.after, _fresh_migration(the_plan, hunks, "migrated-alone").root)
    return _FirstRuns(original, api, api_reason, control, run(the_plan.after, after_api, python, "migrated-alone" if side_used else "migrated"))


def _moved_apis(verdict: Verdict, after_run: RunResult, the_plan: Plan) -> Verdict:
    """``verdict`` with the moved APIs the migrated run still called (the report lists them), and,
    where the run stopped at one, the advice to cover it."""
    verdict = verdict.but(moved_apis=tuple(moved_api_calls(after_run.record, the_plan.after, the_plan.whole_folder)))
    failed = next((call for call in verdict.moved_apis if call.get("failed")), None)
    if failed is not None and verdict.verdict == ERROR:
        return verdict.but(advice=f"the migrated run stopped at {failed['where']}, a moved API ({failed['rule']}): {failed['to_do']}")
    return verdict


def _without_an_original(before: RunResult, the_plan: Plan, exact: Tuple[float, float], hosts: Optional[int], api: str,
                         api_reason: Optional[str]) -> Verdict:
    """The verdict where the original does not run at all: an error, with its advice."""
    rtol, atol = exact
    verdict = compare(before, RunResult(-1, 0.0, None, "", "", the_plan.after.root), rtol, atol, the_plan.original_label,
                      CompareContext(hosts, api))
    verdict = verdict.but(after=None, before_api_reason=api_reason)
    if verdict.verdict != ERROR:
        verdict = error(verdict, "the original did not run", f"run it with `migrate-tpu run --tf-api {api}`")
    return verdict.but(error=_with_stderr_tail(verdict.error, before.stderr, (before,)))


def _judge_the_runs(first: _FirstRuns, rerun: Callable[[str, str, Dict[str, str]], RunResult],
                    judged: Callable[..., Verdict], tolerance: Tuple[Optional[float], Optional[float]], power: bool) -> Judgement:
    """The migration against the original on its interpreter (across two releases: against the
    control, with the releases' drift noted; where the original cannot run there, across the
    releases within the default tolerance)."""
    before, control, after_run = first.before, first.control, first.migrated
    assert after_run is not None  # judged only where the original ran and the migration with it
    rtol, atol = tolerance
    if control is not None and not runs_at_all(control):
        within = (DEFAULT_RTOL if rtol is None else rtol, DEFAULT_ATOL if atol is None else atol)
        verdict = judged(before, after_run, None, within)
        verdict = verdict.noted(f"the original does not run under the TF {verdict.before_api} surface on the migrated program's "
                                f"interpreter ({_last_line(control.stderr)}): compared across the two releases within the tolerance",
                                first=True)
        # its power as well: the original's own interpreter runs it with the mistake
        return Judgement(_state_power(verdict, before, _on_its_own(rerun), judged, within, power))
    baseline = control if control is not None else before
    judgement = _judgement(judged(baseline, after_run, None), (baseline, after_run), rerun, judged, tolerance, power)
    if control is not None:
        return replace(judgement, verdict=_note_drift(judgement.verdict, before, control))
    return judgement


def _original_run(the_plan: Plan, run: Callable[..., RunResult], before_api: str,
                  python: Optional[str]) -> Tuple[RunResult, str, Optional[str]]:
    """The original's run, under ``before_api`` or, for ``auto``, under the oldest surface
    where it does not stop for a name the surface lacks (at once, or after some steps: a
    TF 2.3-era notebook may train before it asks for ``strategy.cluster_resolver``); each
    try in a fresh copy.  Returns the run, its surface, and what ``auto`` chose and why."""
    if before_api != AUTO_API:
        return run(the_plan.before, before_api, python, "original"), before_api, None
    first: Optional[RunResult] = None
    for index, api in enumerate(BEFORE_APIS):
        copy = the_plan.before if index == 0 else fresh_copy(the_plan, f"original-{api}")
        result = run(copy, api, python, f"original-{api}")
        first = first or result
        if not stopped_for_lack_of_an_api(result.record):
            if index == 0:
                return result, api, None
            exception = (first.record or {}).get("exception") or {}
            return result, api, (f"--before-api auto: the original runs under the TF {api} surface, not under older ones "
                                 f"(TF {BEFORE_APIS[0]}: {exception.get('type')}: {exception.get('message')})")
    assert first is not None
    return first, BEFORE_APIS[0], None


def _find_blame(session: _Session, verdict: Verdict, judgement: Judgement, after_run: RunResult) -> dict:
    """The verdict's blame: delta debugging over the changes, each test a short run up to the
    failing step, run and judged as the verdict was (kernels on one thread, each value's own
    tolerance).  The baseline (the original under both surfaces' names) runs beside the first
    test, where there is room; a single change is blamed without a run, and a single suspect
    beside catalogued renames in one run where it records the migrated program's values up to the
    step where the runs parted (:func:`_the_one_suspect`)."""
    # each test's copy is made from the user's folder afresh, not from the copy the original
    # ran in: what that run wrote (a checkpoint it would resume from) is no test's business
    source = fresh_copy(session.plan, "blame-source")
    neutral = likely_neutral(source.root)  # read once: both ways of blaming order by it
    confirmed = _the_one_suspect(session, verdict, judgement, after_run, (source, neutral))
    if confirmed is not None:
        return confirmed
    the_plan, hunks, noted, hosts, jobs = session.plan, session.hunks, session.noted, session.hosts, session.options.jobs
    rtol, atol = session.exact
    wanted = verdict.verdict
    until = max(1, int((verdict.first_divergence or {}).get("step") or verdict.steps or 1)) if wanted == DIVERGED else (verdict.steps or None)
    counter = [0]
    baselines: List[RunResult] = []

    def as_mixed(copy: Copy, name: Optional[str] = None) -> RunRequest:
        if name is None:
            counter[0] += 1
            name = f"blame-{counter[0]}"
        return session.request(copy, MIXED_TF_API, session.options.python, name, until, environment=judgement.environment)

    def reproduces(copy: Copy) -> bool:
        if baselines:
            mixed = run_one(as_mixed(copy))
        else:
            first = as_mixed(partial_copy(source, [], the_plan.workdir / "blame-baseline"), "blame-baseline")
            baseline, mixed = run_pair(first, as_mixed(copy), jobs)
            baselines.append(noted("blame-baseline", baseline, first.copy))
            if not runs_at_all(baseline):
                raise _NoBaseline(baseline)
        noted("blame", mixed, copy)
        context = CompareContext(hosts, spread=judgement.spread)
        return compare(baselines[0], mixed, rtol, atol, the_plan.original_label, context).verdict == wanted

    started = time.monotonic()
    after = the_plan.after
    try:
        found = blame(hunks, source, the_plan.workdir, reproduces,
                      lambda hunk: shown_label(hunk, after.root, after.shown_root, after.program, after.shown_program),
                      neutral)
    except _NoBaseline as failed:
        found = {"changes": [], "runs": 2, "message": f"the original does not run under both surfaces' names (--tf-api {MIXED_TF_API}): "
                                                      + _last_line(failed.baseline.stderr)}
    else:
        found = dict(found, runs=found["runs"] + len(baselines))
    return dict(found, seconds=round(time.monotonic() - started, 2))


#: Kinds of a first divergence that are not a value recorded in a step (the exit, the exception,
#: the count of steps, the variables at the end, a printed line).
_NOT_IN_A_STEP = frozenset({"exit", "exception", "steps", "variable", "printed"})


def _the_one_suspect(session: _Session, verdict: Verdict, judgement: Judgement, after_run: RunResult,
                     changes: Tuple[Copy, Callable[[Hunk], bool]]) -> Optional[dict]:
    """Blame in one run and no baseline, where one change is a suspect and the others only rename
    what the catalogue moved (:func:`~migrate_tpu.verify.blame.suspects.likely_neutral`): the
    original with that change alone, run up to the step where the runs parted under both surfaces'
    names (as far as the long way runs), records the migrated program's very values in those
    steps.  An innocent change would leave the original's values, which the verdict found to part
    from the migration's at that step, so it could not agree with the migrated run bit for bit.
    Only for a divergence in a value recorded in a step: a retrace is judged one way round, and a
    divergence in the variables at the end, the exit or a printed line is not in the steps
    compared.  None, and blame goes the long way against a baseline, where it does not agree, or
    where the verdict was reached otherwise than exactly on plain runs of one host (kernels on one
    thread, the original's own spread, a pod)."""
    divergence = verdict.first_divergence or {}
    if (verdict.verdict != DIVERGED or divergence.get("kind") in _NOT_IN_A_STEP or not divergence.get("step")
            or judgement.spread is not None or judgement.environment is not None or after_run.record is None
            or (session.hosts or 1) > 1):
        return None
    source, neutral = changes  # the user's folder afresh, and which changes only rename
    suspects = [hunk for hunk in session.hunks if not neutral(hunk)]
    if len(session.hunks) < 2 or len(suspects) != 1:
        return None
    started, until = time.monotonic(), int(divergence["step"])
    copy = partial_copy(source, suspects, session.plan.workdir / "blame-suspect")
    try:
        request = session.request(copy, MIXED_TF_API, session.options.python, "blame-suspect", until)
        confirming = session.noted("blame", run_one(request), copy)
    finally:
        shutil.rmtree(copy.root, ignore_errors=True)
    agreed = compare(_steps_up_to(after_run, until), _steps_up_to(confirming, until), 0.0, 0.0, session.plan.original_label)
    if agreed.verdict != SAME:
        return None
    after = session.plan.after
    return {"changes": [shown_label(suspects[0], after.root, after.shown_root, after.program, after.shown_program)],
            "rules": sorted(suspects[0].rules), "runs": 1, "seconds": round(time.monotonic() - started, 2)}


def _steps_up_to(run: RunResult, step: int) -> RunResult:
    """``run`` as far as its record of the first ``step`` steps goes: the values recorded in them,
    and nothing of what the run did after (its variables at the end, its exit, what it printed)."""
    record = dict(run.record or {})
    record.update(events=[event for event in record.get("events", []) if event["step"] <= step], variables=[], printed=[],
                  steps=min(int(record.get("steps") or 0), step), exception=None, exit_status=0,
                  traces_per_step=list(record.get("traces_per_step") or [])[:step])
    return replace(run, status=0, record=record, stdout="", stderr="", host_records=[])


class _NoBaseline(Exception):
    """Blame's baseline did not run: nothing can be judged against it."""

    def __init__(self, baseline: RunResult) -> None:
        super().__init__("the baseline did not run")
        self.baseline = baseline


def _cover(verdict: Verdict, hunks: List[Hunk], after: RunResult, copy: Copy) -> Verdict:
    """``verdict`` with which of the migration's changes the compared steps ran; ``same`` with
    none of them run is ``not exercised``."""
    lines_ran: Dict[str, List[int]] = {}
    for record in [after.record] + list(after.host_records):
        for name, lines in ((record or {}).get("lines_ran") or {}).items():
            lines_ran.setdefault(name, []).extend(lines)
    not_run = [hunk for hunk in hunks if not ran(hunk, after.root, lines_ran)]

    verdict = verdict.but(coverage={"changed": len(hunks), "ran": len(hunks) - len(not_run),
                                    "not_run": [shown_label(h, copy.root, copy.shown_root, copy.program, copy.shown_program)
                                                for h in not_run]})
    if hunks and len(not_run) == len(hunks) and verdict.verdict == SAME:
        return verdict.but(verdict=NOT_EXERCISED).noted(
            "none of the migration's changed lines ran during the compared steps: the values agree, but nothing the "
            "migration changed was proved; verify more steps (--steps), or the path that uses them")
    return verdict


def _judgement(verdict: Verdict, runs: Tuple[RunResult, RunResult], rerun: Callable[[str, str, Dict[str, str]], RunResult],
               judged: Callable[[RunResult, RunResult, Optional[Spread]], Verdict], tolerance: Tuple[Optional[float], Optional[float]],
               power: bool) -> Judgement:
    """The exact verdict of ``runs`` (the original, the migration), re-judged where the original
    does not repeat itself, with the power of a ``same`` stated
    (:mod:`~migrate_tpu.verify.judge.repeatability`)."""
    (baseline, after_run), (rtol, atol) = runs, tolerance
    if rtol is not None or atol is not None:
        # the user's own tolerance: a `same` within it must still be able to catch a mistake
        return Judgement(_state_power(verdict, baseline, rerun, judged, (rtol or 0.0, atol or 0.0), power))
    judgement = judge_repeatability(verdict, baseline, after_run, rerun, judged)
    if judgement.spread is not None:
        return judgement
    verdict = exact_power(judgement.verdict)
    if power:
        reference = baseline if judgement.environment is None else rerun("original", "original-reference", judgement.environment)
        verdict = seeded_power(verdict, reference, rerun, judged, judgement.environment)
    return replace(judgement, verdict=verdict)


def _moves_watched(fix_options: dict, after_api: str) -> Dict[str, str]:
    """The moves the runs' record of moved APIs watches for: those of the migration's target."""
    fix_target = fix_options.get("target")
    return {TARGET_VARIABLE: fix_target if fix_target in ("2.4", "latest") else "latest" if after_api == NATIVE_TF_API else "2.4"}


def _state_power(verdict: Verdict, reference: RunResult, rerun: Callable[[str, str, Dict[str, str]], RunResult],
                 judged: Callable[..., Verdict], within: Tuple[float, float], power: bool) -> Verdict:
    """``verdict`` stating its power, if a ``same``, whichever way it was reached: within a
    tolerance, what a run with the learning rates scaled shows under it (measured); exactly, any
    changed bit of what was compared (measured too with ``--power``)."""
    if verdict.verdict != SAME:
        return verdict
    if any(within):
        return measure_power(verdict, reference, rerun, lambda first, other, spread: judged(first, other, spread, within), None, {})
    verdict = exact_power(verdict)
    return seeded_power(verdict, reference, rerun, judged, None) if power else verdict


def _on_its_own(rerun: Callable[[str, str, Dict[str, str]], RunResult]) -> Callable[[str, str, Dict[str, str]], RunResult]:
    """``rerun`` with the original run on its own interpreter (where it cannot run on the
    migrated program's)."""
    return lambda side, name, environment: rerun(ORIGINAL_ON_ITS_OWN if side == ORIGINAL else side, name, environment)


def _fresh_migration(the_plan: Plan, hunks: List[Hunk], name: str) -> Copy:
    """Another copy of the migrated program: the user's folder afresh, the migration's changes
    applied (the migrated copy a run used may hold what that run wrote)."""
    copy = fresh_copy(the_plan, name)
    for file in sorted({hunk.file for hunk in hunks}):
        path = copy.root / file
        before = path.read_text("utf-8") if path.is_file() else ""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(apply(file, before, hunks), "utf-8")
    after = the_plan.after
    return Copy(copy.root, after.shown_root, copy.root / after.program.relative_to(after.root), copy.cwd, after.shown_program)


def _cluster_from_the_code(the_plan: Plan, hosts: Optional[int], replicas: Optional[int]) -> Optional[dict]:
    """How the runs of a program that builds MultiWorkerMirroredStrategy itself are laid out,
    decided from its code: a cluster of worker processes where it reads TF_CONFIG itself (one
    worker could not run it), else one worker with two devices; ``None``: as asked."""
    if hosts is not None or replicas is not None or not builds_its_own_cluster(str(the_plan.before.program)):
        return None
    reads = reads_its_cluster(the_plan.before.program)
    if reads is None:
        return {"replicas": SINGLE_WORKER_DEVICES, "hosts": None, "because": "builds MultiWorkerMirroredStrategy",
                "note": f"the program builds MultiWorkerMirroredStrategy: each run is one worker with {SINGLE_WORKER_DEVICES} devices, "
                        "so that reductions have two replicas to show in (--hosts N runs it as a cluster of N worker processes)"}
    file = _shown_file(the_plan, reads["file"])
    where = f"{file}:{reads['line']}" if "cell" not in reads else f"{file} cell {reads['cell']}, line {reads['line']}"
    return {"replicas": None, "hosts": DEFAULT_CLUSTER_HOSTS, "because": "reads TF_CONFIG", "where": where, "source": reads["source"],
            "note": f"the program builds MultiWorkerMirroredStrategy and reads TF_CONFIG itself ({where}: `{reads['source']}`): "
                    f"each run is a cluster of {DEFAULT_CLUSTER_HOSTS} worker processes, one replica each, so that reductions have "
                    "two replicas to show in (--hosts sets another number)"}


def _shown_file(the_plan: Plan, path: Path) -> str:
    """A file of the original's copy as the user names it."""
    original = the_plan.before
    if path == original.program:
        return original.shown_program
    try:
        return os.path.normpath(os.path.join(original.shown_root or ".", *path.relative_to(original.root).parts))
    except ValueError:
        return str(path)


# The largest relative difference between two releases' runs of one program that is still
# called their rounding in the report.
ROUNDING_DRIFT = 1e-3


def _note_drift(verdict: Verdict, before: RunResult, control: RunResult) -> Verdict:
    """``verdict`` with the original on its own release against the control: how far the releases
    drift apart."""
    drift = release_drift(before, control, verdict.steps)
    versions = drift["tensorflow"]
    verdict = verdict.but(release_drift=drift, control=verdict.before, before=run_summary(before))
    where = f" ({drift['where']})" if drift.get("where") else ""
    if drift["absolute"] == 0:
        return verdict.noted(f"the original computes the same bits on TF {versions['before']} as on TF {versions['control']}; "
                             f"the migration is compared on TF {versions['control']}, exactly, against the original run there")
    # Training makes rounding grow, but a value far off from the first steps is the releases
    # computing the program differently (Keras defaults, shuffles, draws): name it as such.
    cause = ("the releases' rounding" if drift["relative"] <= ROUNDING_DRIFT else
             "more than rounding: the two releases compute this program differently (a Keras default, a shuffle "
             "or a random draw of their own), whatever the migration does")
    return verdict.noted(
        f"the original gives other bits on TF {versions['before']} than on TF {versions['control']}: largest difference "
        f"{drift['relative']:.2g} relative, {drift['absolute']:.2g} absolute{where}; that is {cause}, so the "
        f"migration is compared on TF {versions['control']} alone, exactly, against the original run there")


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


# A frame of the runtime's own code in a traceback, and TensorFlow's log lines: noise in an excerpt.
_OWN_FRAME = re.compile(r'^\s*File "[^"]*[/\\]migrate_tpu[/\\]')
# A frame of an installed library's code (TensorFlow, Keras, NumPy, the standard library).
_LIBRARY_FRAME = re.compile(r'^\s*File "[^"]*([/\\](site|dist)-packages[/\\]|[/\\]lib[/\\]python\d+(\.\d+)?[/\\])')
# Where an interpreter keeps its libraries, in a path: shown as <installed> (or <python>).
_LIBRARY_FOLDER = re.compile(r'"[^"]*[/\\](?:site|dist)-packages(?=[/\\])')
_STANDARD_LIBRARY = re.compile(r'"[^"]*[/\\]lib[/\\]python\d+(?:\.\d+)?(?=[/\\])')
_LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] |[IWEF]\d{4} \d\d:\d\d:\d\d|WARNING:tensorflow:|INFO:tensorflow:)")


def _with_stderr_tail(error: Optional[str], stderr: str, runs: Sequence[RunResult] = (), lines: int = 12) -> str:
    """``error`` and the last lines the run wrote to stderr: the copies' paths as the user
    names them, without TensorFlow's log lines or the runtime's own frames, less a last line
    the error already quotes (its headline is often the run's own last line)."""
    error = error or ""
    kept: List[str] = []
    skip_source = False
    for line in stderr.splitlines():
        if skip_source:
            skip_source = False
            if _is_frame_source(line):
                continue
        if not line.strip() or line.startswith("migrate-tpu run: TPU emulation") or _LOG_LINE.match(line):
            continue
        if _OWN_FRAME.match(line):
            skip_source = True
            continue
        kept.append(_user_paths(line, runs))
    kept = _fold_library_frames(kept)[-lines:]
    if kept and error and kept[-1].strip() in error.splitlines()[0]:
        kept.pop()
    return error + ("\n" + "\n".join(kept) if kept else "")


def _is_frame_source(line: str) -> bool:
    """Whether a traceback line is the source line under a ``File ...`` line."""
    return line.startswith("    ") and not line.lstrip().startswith("File ")


def _fold_library_frames(lines: List[str]) -> List[str]:
    """A traceback's runs of library frames folded to a count and their last frame (where it
    raised, or where it called back into the program), so that the program's own frames,
    which say where in the user's code it failed, are what the excerpt shows."""
    folded: List[str] = []
    run: List[List[str]] = []  # the library frames of the current run: each its File line and source

    def flush() -> None:
        if len(run) > 1:
            indent = run[-1][0][:len(run[-1][0]) - len(run[-1][0].lstrip())]
            folded.append(f"{indent}... {len(run) - 1} frames of installed libraries ...")
        if run:
            # the interpreter's own folders are no part of what the user needs to read
            last = _STANDARD_LIBRARY.sub('"<python>', _LIBRARY_FOLDER.sub('"<installed>', run[-1][0]))
            folded.extend([last] + run[-1][1:])
        run.clear()

    for line in lines:
        if _LIBRARY_FRAME.match(line):
            run.append([line])
        elif run and len(run[-1]) == 1 and _is_frame_source(line):
            run[-1].append(line)  # the library frame's source line
        else:
            flush()
            folded.append(line)
    flush()
    return folded


def _user_paths(text: str, runs: Sequence[RunResult]) -> str:
    for run in runs:
        if run.program is not None and run.shown_program:
            text = text.replace(str(run.program), run.shown_program)
        text = text.replace(str(run.root), run.shown_root or ".")
    return text


__all__ = ["Plan", "verify"]
