"""Every `same` states its power, whichever way verify reached it (no TensorFlow, records written
by hand): with the user's tolerance, `--rtol` or `--atol` alone included, a run with the learning
rates scaled must diverge under it; with an explicit `--rtol 0 --atol 0` the comparison is exact
and says so; where the original cannot run on the migrated program's interpreter (compared across
the two releases within the tolerance), the mistake is run on the original's own interpreter."""

from pathlib import Path

from migrate_tpu.runtime.record.recorder import PERTURB_VARIABLE
from migrate_tpu.verify import RunResult, compare
from migrate_tpu.verify.judge.compare import CompareContext
from migrate_tpu.verify.command.session import ORIGINAL, ORIGINAL_ON_ITS_OWN, _FirstRuns, _judge_the_runs, _judgement
from migrate_tpu.verify.values.verdict import INCONCLUSIVE, SAME


def scalar(x):
    return {"dtype": "float32", "shape": [], "value": x}


def record(losses, perturbed=0, exit_status=0):
    return {"steps": len(losses), "exit_status": exit_status, "exception": None, "perturbed": perturbed,
            "events": [{"step": k + 1, "kind": "function", "where": "/nowhere/t.py:9", "value": scalar(x)} for k, x in enumerate(losses)],
            "variables": [], "traces": {}, "traces_per_step": [1] * len(losses), "printed": []}


def result(rec, status=0):
    return RunResult(status, 1.0, rec, "", "Traceback ...\nValueError: no such op", Path("/nowhere"))


LOSSES = [0.5, 0.25, 0.125]
SCALED = [0.5, 0.2, 0.1]  # what the run with every learning rate scaled by 1.1 records


class Reruns:
    """verify's reruns answered from records; every call noted as (side, perturbed)."""

    def __init__(self, perturbed_losses=SCALED, perturbed=1):
        self.calls = []
        self.perturbed_losses, self.perturbed = perturbed_losses, perturbed

    def __call__(self, side, name, environment):
        scaled = PERTURB_VARIABLE in environment
        self.calls.append((side, scaled))
        return result(record(self.perturbed_losses, perturbed=self.perturbed) if scaled else record(LOSSES))


def judged_within(default):
    def judged(reference, other, spread, tolerance=None):
        rtol, atol = tolerance or default
        return compare(reference, other, rtol, atol, "t.py", CompareContext(spread=spread))
    return judged


def test_rtol_alone_measures_the_power_of_its_same():
    """`--rtol` without `--atol` is the user's tolerance: the run with the mistake is asked for
    and must diverge under it (it once skipped the run and said `same` without a power)."""
    reruns, judged = Reruns(), judged_within((1e-3, 0.0))
    verdict = judged(result(record(LOSSES)), result(record(LOSSES)), None)
    judgement = _judgement(verdict, (result(record(LOSSES)), result(record(LOSSES))), reruns, judged, (1e-3, None), False)
    assert reruns.calls == [(ORIGINAL, True)]
    assert judgement.verdict.verdict == SAME
    assert judgement.verdict.power["measured"] and judgement.verdict.power["caught"]


def test_a_tolerance_too_wide_to_see_the_mistake_is_inconclusive():
    reruns, judged = Reruns(), judged_within((0.5, 0.5))
    verdict = judged(result(record(LOSSES)), result(record(LOSSES)), None)
    judgement = _judgement(verdict, (result(record(LOSSES)), result(record(LOSSES))), reruns, judged, (None, 0.5), False)
    assert judgement.verdict.verdict == INCONCLUSIVE
    assert judgement.verdict.power == {"change": "every learning rate scaled by 1.1", "measured": True, "caught": False}


def test_an_explicit_zero_tolerance_is_exact_and_says_so():
    """`--rtol 0 --atol 0` is the exact comparison: its `same` states it (any changed bit of what
    it compared), as the default's does; `--power` measures it too."""
    reruns, judged = Reruns(), judged_within((0.0, 0.0))
    verdict = judged(result(record(LOSSES)), result(record(LOSSES)), None)
    judgement = _judgement(verdict, (result(record(LOSSES)), result(record(LOSSES))), reruns, judged, (0.0, 0.0), False)
    assert judgement.verdict.verdict == SAME
    assert judgement.verdict.power == {"change": "any changed bit", "measured": False, "exact": True, "values": 3}
    assert reruns.calls == []
    verdict = judged(result(record(LOSSES)), result(record(LOSSES)), None)
    measured = _judgement(verdict, (result(record(LOSSES)), result(record(LOSSES))), reruns, judged, (0.0, 0.0), True)
    assert reruns.calls == [(ORIGINAL, True)] and measured.verdict.power["measured"] and measured.verdict.power["caught"]


def test_where_the_control_fails_the_mistake_runs_on_the_originals_own_interpreter():
    """Across two releases, where the original cannot run on the migrated program's interpreter,
    verify compares across the releases within the default tolerance: that `same` states its
    power too, measured by the original's own interpreter (the other cannot run it)."""
    reruns, judged = Reruns(), judged_within((0.0, 0.0))
    control = result(None, status=1)
    judgement = _judge_the_runs(_FirstRuns(result(record(LOSSES)), "2.1", None, control, result(record(LOSSES))), reruns, judged, (None, None), False)
    assert judgement.verdict.verdict == SAME
    assert reruns.calls == [(ORIGINAL_ON_ITS_OWN, True)]
    assert judgement.verdict.power["measured"] and judgement.verdict.power["caught"]
    assert "compared across the two releases within the tolerance" in judgement.verdict.notes[0]


def test_where_the_control_fails_a_mistake_it_cannot_see_leaves_it_inconclusive():
    reruns, judged = Reruns(perturbed_losses=LOSSES), judged_within((0.0, 0.0))
    judgement = _judge_the_runs(_FirstRuns(result(record(LOSSES)), "2.1", None, result(None, status=1), result(record(LOSSES))),
                                reruns, judged, (None, None), False)
    assert judgement.verdict.verdict == INCONCLUSIVE
    assert judgement.verdict.power["measured"] and not judgement.verdict.power["caught"]

