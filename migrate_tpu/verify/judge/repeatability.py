"""Whether the original repeats itself, what follows where it does not, and what a ``same``
could have caught.

A divergence in values is checked against the original run again (A/A).  Where the original
gives other bits the second time, its nondeterminism is *found and removed, not absorbed*:

1. found: where the two runs first part (the step, the value, the line), from their records;
2. removed where the runs can: every run again with TensorFlow's kernels on one thread each
   (their partial sums added in one order; :mod:`migrate_tpu.runtime.record.power`), the original
   twice and the migration once.  If the original then repeats its bits, the migration is
   judged exactly against it, and the report names the source (kernel threads);
3. where it cannot be removed, each value is judged within its own A/A spread
   (:mod:`~migrate_tpu.verify.values.tolerance`): exactly where the original repeated it, within ten
   times its own difference where that is small, and not at all (listed) where the noise is a
   sizeable part of the value.

A ``same`` reached within a tolerance states its *power*: the original is run once more with
every learning rate scaled by 1.1, and that run must diverge from the original under the same
comparison.  If it does not (or the program reads no learning rate to scale, or nothing was
left to compare), the comparison could not have caught such a mistake, and the verdict is
``inconclusive``, never ``same``.  An exact ``same`` states its power as what it compared, bit
for bit; ``--power`` measures it there too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

from migrate_tpu.runtime.record.recorder import ONE_THREAD_VARIABLE, PERTURB_VARIABLE  # names only (no TensorFlow)
from migrate_tpu.verify.judge.spread import measure_spread
from migrate_tpu.verify.values.tolerance import NOISE_MARGIN, NOISE_SHARE, Spread
from migrate_tpu.verify.values.verdict import DIVERGED, INCONCLUSIVE, SAME, TIMED_OUT, RunResult, Verdict

#: Kinds of divergence that no rounding explains (an exception, a count of steps, an exit status).
NOT_ROUNDING = frozenset({"exception", "steps", "exit"})
#: The mistake a comparison must be able to see: every learning rate scaled by this.
POWER_FACTOR = 1.1
ONE_THREAD = {ONE_THREAD_VARIABLE: "1"}

#: Runs one copy: ("original" or "migrated", a name for its files, extra environment) -> its run.
Rerun = Callable[[str, str, Dict[str, str]], RunResult]
#: Compares two runs: (reference, other, spread or None) -> verdict.
Judged = Callable[[RunResult, RunResult, Optional[Spread]], Verdict]


@dataclass(frozen=True)
class Judgement:
    """The verdict, and how blame must judge its runs to agree with it."""
    verdict: Verdict
    spread: Optional[Spread] = None
    environment: Optional[Dict[str, str]] = None


def runs_at_all(run: RunResult) -> bool:
    """Whether a run got far enough to be compared: it recorded, and it either ended well or
    stepped at least once before it failed."""
    record = run.record
    if record is None or run.status == TIMED_OUT:
        return False
    return record.get("exit_status") == 0 or bool(record.get("steps"))


def _first_difference(itself: Verdict) -> dict:
    """Where the original's two runs first part, as the report names it."""
    divergence = itself.first_divergence or {}
    where = divergence.get("where") or {}
    place = where.get("before") if isinstance(where, dict) and "before" in where else where
    found = {"step": divergence.get("step"), "what": divergence.get("what"), "kind": divergence.get("kind"),
             "before": divergence.get("before"), "again": divergence.get("after")}
    if isinstance(place, dict) and place.get("file"):
        found["where"] = f"{place['file']}:{place.get('line')}"
        found["source"] = place.get("source")
    elif isinstance(place, dict) and place.get("variable"):
        found["where"] = f"variable {place['variable']}"
    return found


def judge_repeatability(verdict: Verdict, baseline: RunResult, after: RunResult, rerun: Rerun, judged: Judged) -> Judgement:
    """``verdict`` (the original ``baseline`` against the migration ``after``, exactly) re-judged where
    the original does not repeat itself (see the module's docstring)."""
    divergence = verdict.first_divergence or {}
    if verdict.verdict != DIVERGED or divergence.get("kind") in NOT_ROUNDING:
        return Judgement(verdict)
    again = rerun("original", "original-again", {})
    if not runs_at_all(again):
        return Judgement(verdict)
    itself = judged(baseline, again, None)
    if itself.verdict == SAME or (itself.first_divergence or {}).get("kind") in NOT_ROUNDING:
        return Judgement(verdict)  # the original repeats its bits (or differs in more than rounding): the divergence stands
    found = _first_difference(itself)
    first_again = rerun("original", "original-one-thread", ONE_THREAD)
    migrated = rerun("migrated", "migrated-one-thread", ONE_THREAD)
    second_again = rerun("original", "original-one-thread-again", ONE_THREAD)
    if not (runs_at_all(first_again) and runs_at_all(migrated) and runs_at_all(second_again)):
        return _unremoved(verdict, (baseline, again, after), rerun, judged, found, None)
    if judged(first_again, second_again, None).verdict == SAME:
        removed = judged(first_again, migrated, None).but(nondeterminism={**found, "source": "threads", "removed": True})
        removed = removed.noted(_found_words(found) + "; with TensorFlow's kernels on one thread each the original repeats its "
                                "bits, so the source is the order in which a kernel's threads add their partial results, and "
                                "every run is judged that way, exactly", first=True)
        return Judgement(removed, None, dict(ONE_THREAD))
    return _unremoved(verdict, (first_again, second_again, migrated), rerun, judged, found, ONE_THREAD)


def _found_words(found: dict) -> str:
    where = f" ({found['where']})" if found.get("where") else ""
    return (f"the original gives other bits when run again: first at step {found.get('step')}, {found.get('what')}{where}, "
            f"{found.get('before')!r} against {found.get('again')!r}")


def _unremoved(verdict: Verdict, runs: Tuple[RunResult, RunResult, RunResult], rerun: Rerun, judged: Judged, found: dict,
               environment: Optional[Dict[str, str]]) -> Judgement:
    """The migration judged value by value within the original's own spread (``runs``: the
    original twice and the migration, each run the same way), and the power of a ``same``
    measured."""
    first, again, migrated = runs
    spread = measure_spread(first, again, verdict.steps)
    spread.first = found
    judgement = judged(first, migrated, spread).but(
        nondeterminism={**found, "source": "not TensorFlow's kernel threads" if environment else "unknown", "removed": False,
                        "values_that_differ": len(spread.values), "largest_difference": spread.largest})
    threads = (" Kernels on one thread each do not remove it, so its source is not their threads alone: the order in which the "
               "replicas' ops run side by side (left alone: collective ops need it), or something the runs cannot seed (the "
               "clock, os.urandom, the order of a folder's files, a py_function's own state)." if environment else "")
    judgement = judgement.noted(_found_words(found) + "." + threads + f" Each value is judged within {NOISE_MARGIN:g} times the "
                                f"larger of its own difference between the original's two runs and the run's relative noise level "
                                f"({spread.relative:.2g}) times its size; a value whose own difference is over {NOISE_SHARE:.0%} of "
                                "its size is not compared", first=True)
    if judgement.values_not_compared:
        shown = ", ".join(judgement.values_not_compared[:8]) + (" ..." if len(judgement.values_not_compared) > 8 else "")
        judgement = judgement.noted(f"not compared, as the original does not repeat them: {len(judgement.values_not_compared)} "
                                    f"values ({shown})")
    if judgement.verdict == SAME:
        judgement = measure_power(judgement, first, rerun, judged, spread, environment or {})
    return Judgement(judgement, spread, dict(environment) if environment else None)


def measure_power(verdict: Verdict, reference: RunResult, rerun: Rerun, judged: Judged, spread: Optional[Spread],
                  environment: Dict[str, str]) -> Verdict:
    """``verdict`` with its power: whether the comparison that gave ``same`` catches a learning rate
    scaled by 1.1; a ``same`` that cannot is ``inconclusive``."""
    perturbed = rerun("original", "original-power", {**environment, PERTURB_VARIABLE: repr(POWER_FACTOR)})
    change = f"every learning rate scaled by {POWER_FACTOR:g}"
    if not runs_at_all(perturbed) or not (perturbed.record or {}).get("perturbed"):
        why = ("the run with it did not get far enough" if not runs_at_all(perturbed) else
               "the program's updates read no Keras optimizer's learning rate to scale")
        return _inconclusive(verdict.but(power={"change": change, "measured": False, "why": why}),
                             f"what the comparison could catch was not measured ({change}: {why})")
    caught = judged(reference, perturbed, spread)
    if caught.verdict == DIVERGED:
        divergence = caught.first_divergence or {}
        return verdict.but(power={"change": change, "measured": True, "caught": True, "step": divergence.get("step"),
                                  "what": divergence.get("what")})
    return _inconclusive(verdict.but(power={"change": change, "measured": True, "caught": False}),
                         f"the comparison does not catch {change}: the original's own differences leave no room to see a "
                         "mistake of that size, so the agreement proves nothing")


def exact_power(verdict: Verdict) -> Verdict:
    """``verdict`` with the power of an exact comparison: any changed bit of what it compared; with
    nothing compared, ``inconclusive``."""
    if verdict.verdict != SAME:
        return verdict
    if verdict.values_compared == 0:
        return _inconclusive(verdict.but(power={"change": "any", "measured": False,
                                                "why": "nothing numeric was recorded in the compared steps"}),
                             "the runs recorded no numbers to compare (no step values, variables or printed numbers): the "
                             "agreement proves nothing; verify more steps (--steps), or the path that trains")
    return verdict.but(power={"change": "any changed bit", "measured": False, "exact": True, "values": verdict.values_compared})


def _inconclusive(verdict: Verdict, why: str) -> Verdict:
    return verdict.but(verdict=INCONCLUSIVE).noted("inconclusive: " + why)


def seeded_power(verdict: Verdict, reference: RunResult, rerun: Rerun, judged: Judged,
                 environment: Optional[Dict[str, str]]) -> Verdict:
    """``--power`` on an exact ``same``: measured as for a tolerance (a run with the learning
    rates scaled must diverge)."""
    if verdict.verdict == SAME and not (verdict.power or {}).get("measured"):
        return measure_power(verdict, reference, rerun, judged, None, environment or {})
    return verdict
