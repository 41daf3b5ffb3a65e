"""verify's decisions where the original does not repeat itself, on records written by hand (no
TensorFlow, milliseconds): each value judged within its own A/A spread, never one number for
all; a value the original cannot repeat left out and listed; nondeterminism removed where
kernels on one thread remove it; the power of a `same` measured, and a `same` that could not
have caught a learning rate scaled by 1.1 called `inconclusive` (exit status 3)."""

from pathlib import Path

import pytest

from migrate_tpu.runtime.record.recorder import ONE_THREAD_VARIABLE, PERTURB_VARIABLE
from migrate_tpu.verify import RunResult, compare
from migrate_tpu.verify.judge.compare import CompareContext
from migrate_tpu.verify.judge.repeatability import exact_power, judge_repeatability
from migrate_tpu.verify.judge.spread import measure_spread
from migrate_tpu.verify.values.tolerance import NOISE_MARGIN
from migrate_tpu.verify.values.verdict import EXIT_STATUS


def scalar(x):
    return {"dtype": "float32", "shape": [], "value": x}


def record(losses, variables=(), perturbed=0, printed=()):
    return {"steps": len(losses), "exit_status": 0, "exception": None, "perturbed": perturbed,
            "events": [{"step": k + 1, "kind": "function", "where": "/nowhere/t.py:9", "value": scalar(x)} for k, x in enumerate(losses)],
            "variables": [{"name": n, "shape": [], "dtype": "float32", "replicas": [scalar(v), scalar(v)]} for n, v in variables],
            "traces": {}, "traces_per_step": [1] * len(losses),
            "printed": [{"step": len(losses), "where": "/nowhere/t.py:20", "text": text} for text in printed]}


def result(rec):
    return RunResult(0, 1.0, rec, "", "", Path("/nowhere"))


def judged(reference, other, spread):
    return compare(reference, other, 0.0, 0.0, "t.py", CompareContext(spread=spread))


class Runs:
    """verify's reruns, answered from records: ``(side, environment) -> record``; each call noted."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, side, name, environment):
        self.calls.append((side, name, dict(environment)))
        threads = environment.get(ONE_THREAD_VARIABLE) == "1"
        perturbed = PERTURB_VARIABLE in environment
        key = (side, "power" if perturbed else "one thread" if threads else "plain")
        answer = self.answers[key]
        if isinstance(answer, list):  # successive runs of one kind
            answer = answer.pop(0)
        return result(answer)


# ---------------------------------------------------------------- per-value tolerance


def test_each_value_is_judged_by_its_own_spread_or_the_runs_relative_noise_at_its_size():
    # the original's two runs part from step 2 on (1e-7 on the loss, 1e-6 on the kernel)
    first = result(record([0.5, 0.25, 0.125], [("kernel:0", 1.0)]))
    again = result(record([0.5, 0.2500001, 0.125], [("kernel:0", 1.000001)]))
    spread = measure_spread(first, again, 3)
    assert sorted(spread.values) == [("event", 0, 1), ("variable", 0, "kernel:0")]

    def migrated(losses, kernel):
        return judged(first, result(record(losses, [("kernel:0", kernel)])), spread)

    # within ten times the spread: same; beyond it: diverged, and named
    assert migrated([0.5, 0.25, 0.125], 1.000009).verdict == "same"
    beyond = migrated([0.5, 0.25, 0.125], 1.00002)
    assert (beyond.verdict, beyond.first_divergence["what"]) == ("diverged", "variable kernel:0")
    # a value the pair agreed on (by chance, or before the noise): within ten times the run's
    # relative noise level (1e-6) times its own size, never the kernel's absolute tolerance
    assert migrated([0.500004, 0.25, 0.125000001], 1.0).verdict == "same"
    early = migrated([0.50001, 0.25, 0.125], 1.0)
    assert (early.verdict, early.first_divergence["step"]) == ("diverged", 1)
    assert migrated([0.5, 0.25, 0.12501], 1.0).verdict == "diverged"


def test_a_noisy_value_never_lends_its_tolerance_to_another():
    # one value wanders by 5e3 (a metric's count), the learning-rate-sized one not at all
    first = result(record([1.0], [("counts:0", 5e4), ("lr_scaled:0", 1e-3)]))
    again = result(record([1.0], [("counts:0", 4.5e4), ("lr_scaled:0", 1e-3)]))
    spread = measure_spread(first, again, 1)
    planted = judged(first, result(record([1.0], [("counts:0", 5e4), ("lr_scaled:0", 1e-4)])), spread)
    assert (planted.verdict, planted.first_divergence["what"]) == ("diverged", "variable lr_scaled:0")


def test_a_value_whose_noise_is_a_sizeable_part_of_it_is_listed_not_compared():
    first = result(record([1.0, 2.0], [("kernel:0", 3.0)]))
    again = result(record([1.0, 2.5], [("kernel:0", 3.0)]))  # step 2 differs by 20 %
    spread = measure_spread(first, again, 2)
    verdict = judged(first, result(record([1.0, 9.0], [("kernel:0", 3.0)])), spread)
    assert verdict.verdict == "same"
    assert verdict.values_not_compared == ("step 2: the value returned by the step function",)
    assert verdict.values_compared == 3  # step 1's value and the kernel's two replicas (one key, compared on each)
    assert verdict.tolerance["per_value"] is True and verdict.tolerance["margin"] == NOISE_MARGIN


def test_a_printed_number_is_judged_by_its_own_spread():
    first = result(record([1.0], printed=["accuracy 0.75 loss 1.5"]))
    again = result(record([1.0], printed=["accuracy 0.75 loss 1.5000001"]))
    spread = measure_spread(first, again, 1)
    assert judged(first, result(record([1.0], printed=["accuracy 0.75 loss 1.5000005"])), spread).verdict == "same"
    moved = judged(first, result(record([1.0], printed=["accuracy 0.76 loss 1.5"])), spread)
    assert (moved.verdict, moved.first_divergence["kind"]) == ("diverged", "printed")


def test_the_release_as_the_program_derives_it_is_no_divergence():
    # `tf_version = float(tf.__version__[:3])` prints 2.1 under the 2.1 surface and 2.4 under 2.4
    before = result(dict(record([1.0], printed=["tf_version = 2.1"]), tensorflow="2.21.0"))
    after = result(dict(record([1.0], printed=["tf_version = 2.4"]), tensorflow="2.21.0"))
    assert compare(before, after, 0.0, 0.0, "t.py").verdict == "same"
    other = result(dict(record([1.0], printed=["tf_version = 2.7"]), tensorflow="2.21.0"))
    assert compare(before, other, 0.0, 0.0, "t.py").verdict == "diverged"


# ---------------------------------------------------------------- the session's decisions


def test_an_original_that_repeats_its_bits_leaves_the_divergence_standing_after_one_run():
    original, migrated = record([0.5, 0.25]), record([0.5, 0.3])
    runs = Runs({("original", "plain"): record([0.5, 0.25])})
    verdict = judged(result(original), result(migrated), None)
    judgement = judge_repeatability(verdict, result(original), result(migrated), runs, judged)
    assert (judgement.verdict.verdict, judgement.spread, judgement.environment) == ("diverged", None, None)
    assert [call[:2] for call in runs.calls] == [("original", "original-again")]


def test_nondeterminism_that_one_thread_kernels_remove_is_judged_exactly_that_way():
    original, migrated = record([0.5, 0.25]), record([0.5, 0.25000003])
    runs = Runs({("original", "plain"): record([0.5, 0.25000006]),
                 ("original", "one thread"): [record([0.5, 0.25]), record([0.5, 0.25])],
                 ("migrated", "one thread"): record([0.5, 0.25])})
    verdict = judged(result(original), result(migrated), None)
    judgement = judge_repeatability(verdict, result(original), result(migrated), runs, judged)
    assert judgement.verdict.verdict == "same"
    assert judgement.spread is None and judgement.environment == {ONE_THREAD_VARIABLE: "1"}
    found = judgement.verdict.nondeterminism
    assert (found["step"], found["source"], found["removed"]) == (2, "threads", True)
    assert "first at step 2" in judgement.verdict.notes[0]


def test_a_removed_nondeterminism_still_shows_a_real_divergence_exactly():
    original, migrated = record([0.5, 0.25]), record([0.5, 0.25000003])
    runs = Runs({("original", "plain"): record([0.5, 0.25000006]),
                 ("original", "one thread"): [record([0.5, 0.25]), record([0.5, 0.25])],
                 ("migrated", "one thread"): record([0.5, 0.2500001])})
    judgement = judge_repeatability(judged(result(original), result(migrated), None), result(original), result(migrated), runs, judged)
    assert (judgement.verdict.verdict, judgement.verdict.first_divergence["step"]) == ("diverged", 2)


def noisy(kernel, loss=0.25, perturbed=0):
    return record([0.5, loss], [("kernel:0", kernel)], perturbed=perturbed)


def test_unremovable_noise_is_judged_per_value_and_a_same_states_the_power_that_caught_the_planted_rate():
    runs = Runs({("original", "plain"): noisy(1.000001),
                 ("original", "one thread"): [noisy(1.0), noisy(1.000001)],
                 ("migrated", "one thread"): noisy(1.000002),
                 ("original", "power"): noisy(1.01, perturbed=4)})
    verdict = judged(result(noisy(1.0)), result(noisy(1.000003)), None)
    judgement = judge_repeatability(verdict, result(noisy(1.0)), result(noisy(1.000003)), runs, judged)
    assert judgement.verdict.verdict == "same", judgement.verdict.notes
    assert judgement.verdict.power == {"change": "every learning rate scaled by 1.1", "measured": True, "caught": True, "step": 2,
                                       "what": "variable kernel:0"}
    assert judgement.environment == {ONE_THREAD_VARIABLE: "1"} and judgement.spread is not None
    assert judgement.verdict.nondeterminism["source"] == "not TensorFlow's kernel threads"
    power_run = [call for call in runs.calls if call[1] == "original-power"]
    assert power_run and power_run[0][2] == {ONE_THREAD_VARIABLE: "1", PERTURB_VARIABLE: "1.1"}


def test_a_same_that_cannot_see_a_scaled_learning_rate_is_inconclusive_with_its_own_exit_status():
    # the original's noise is as large as what a 1.1 learning rate changes: nothing can be proved
    runs = Runs({("original", "plain"): noisy(1.001),
                 ("original", "one thread"): [noisy(1.0), noisy(1.001)],
                 ("migrated", "one thread"): noisy(1.002),
                 ("original", "power"): noisy(1.003, perturbed=4)})
    verdict = judged(result(noisy(1.0)), result(noisy(1.002)), None)
    judgement = judge_repeatability(verdict, result(noisy(1.0)), result(noisy(1.002)), runs, judged).verdict
    assert (judgement.verdict, judgement.exit_status, EXIT_STATUS["inconclusive"]) == ("inconclusive", 3, 3)
    assert judgement.power == {"change": "every learning rate scaled by 1.1", "measured": True, "caught": False}
    assert any(note.startswith("inconclusive: the comparison does not catch") for note in judgement.notes)


def test_a_same_within_a_tolerance_whose_power_cannot_be_measured_is_inconclusive():
    runs = Runs({("original", "plain"): noisy(1.000001),
                 ("original", "one thread"): [noisy(1.0), noisy(1.000001)],
                 ("migrated", "one thread"): noisy(1.000002),
                 ("original", "power"): noisy(1.0000005, perturbed=0)})  # no optimizer read a learning rate
    verdict = judged(result(noisy(1.0)), result(noisy(1.000002)), None)
    judgement = judge_repeatability(verdict, result(noisy(1.0)), result(noisy(1.000002)), runs, judged).verdict
    assert judgement.verdict == "inconclusive"
    assert judgement.power["measured"] is False and "no Keras optimizer" in judgement.power["why"]


def test_a_divergence_beyond_the_noise_stands_without_a_power_run():
    runs = Runs({("original", "plain"): noisy(1.000001),
                 ("original", "one thread"): [noisy(1.0), noisy(1.000001)],
                 ("migrated", "one thread"): noisy(1.2)})
    verdict = judged(result(noisy(1.0)), result(noisy(1.2)), None)
    judgement = judge_repeatability(verdict, result(noisy(1.0)), result(noisy(1.2)), runs, judged).verdict
    assert (judgement.verdict, judgement.first_divergence["what"]) == ("diverged", "variable kernel:0")
    assert all(call[1] != "original-power" for call in runs.calls)


@pytest.mark.parametrize("kind", ["exception", "steps"])
def test_a_divergence_no_rounding_explains_is_never_rejudged(kind):
    failing = dict(record([0.5]), exit_status=1, exception={"type": "ValueError", "message": "boom"})
    after = failing if kind == "exception" else record([0.5, 0.5])
    verdict = judged(result(record([0.5])), result(after), None)
    runs = Runs({})
    assert judge_repeatability(verdict, result(record([0.5])), result(after), runs, judged).verdict.verdict == "diverged"
    assert runs.calls == []


def test_an_exact_same_states_its_power_and_one_that_compared_nothing_is_inconclusive():
    same = exact_power(judged(result(record([0.5], [("kernel:0", 1.0)])), result(record([0.5], [("kernel:0", 1.0)])), None))
    assert (same.verdict, same.power) == ("same", {"change": "any changed bit", "measured": False, "exact": True, "values": 3})
    empty = judged(result(record([])), result(record([])), None)
    assert exact_power(empty).verdict == "inconclusive" and empty.verdict == "same"  # a new verdict; the given one unchanged


def test_a_value_judged_across_its_replicas_where_one_replica_agreed_by_chance():
    # a sync-on-read metric's count: replica 0's part agreed in the original's two runs, replica 1's
    # moved by one; the migration's replica 0 moves by one: within the value's own spread
    def counts(first, second):
        return {"steps": 1, "exit_status": 0, "exception": None, "traces": {}, "traces_per_step": [1],
                "events": [], "variables": [{"name": "false_positives:0", "shape": [], "dtype": "float32",
                                             "replicas": [scalar(first), scalar(second)]}]}
    first, again = result(counts(143.0, 120.0)), result(counts(143.0, 121.0))
    spread = measure_spread(first, again, 1)
    assert judged(first, result(counts(144.0, 120.0)), spread).verdict == "same"
    assert judged(first, result(counts(160.0, 120.0)), spread).verdict == "diverged"


@pytest.mark.parametrize("again", [
    record([0.5, 0.25, 0.125]),  # one step more: the A/A pair parts in its steps
    dict(record([0.5, 0.25]), exit_status=1, exception={"type": "ValueError", "message": "boom"})])  # in its exception
def test_an_original_that_differs_from_itself_in_more_than_rounding_leaves_the_divergence_standing(again):
    """Pins judge_repeatability's ``(itself.first_divergence or {}).get("kind") in NOT_ROUNDING``:
    an original whose A/A pair parts in its steps or its exception does not repeat itself in a way
    rounding explains, so the migration's divergence stands (``diverged``, after that one rerun)
    and is never re-judged by one-thread runs that could call it ``same``."""
    original, migrated = record([0.5, 0.25]), record([0.5, 0.3])
    runs = Runs({("original", "plain"): again,
                 ("original", "one thread"): [record([0.5, 0.25]), record([0.5, 0.25])],
                 ("migrated", "one thread"): record([0.5, 0.25])})
    judgement = judge_repeatability(judged(result(original), result(migrated), None), result(original), result(migrated), runs, judged)
    assert judgement.verdict.verdict == "diverged", judgement.verdict.notes
    assert judgement.verdict.first_divergence["step"] == 2
    assert [call[:2] for call in runs.calls] == [("original", "original-again")]


def test_the_spread_pairs_no_events_after_the_original_s_two_runs_part():
    """Pins measure_spread's ``break`` where two events' kinds differ: once one run records an
    event the other does not, the events after it are not one value twice; pairing them (2.0
    with 1.0) would invent a 50 % spread, which drops step 2's value from the comparison and
    lets a wrong migrated value through."""
    first = record([1.0, 2.0])
    again = record([1.0, 2.0])
    again["events"].insert(0, {"step": 1, "kind": "keras", "where": "/nowhere/t.py:12", "value": scalar(7.0)})
    spread = measure_spread(result(first), result(again), 2)
    assert spread.values == {}
    wrong = judged(result(first), result(record([1.0, 2.5])), spread)
    assert (wrong.verdict, wrong.first_divergence["step"], wrong.values_not_compared) == ("diverged", 2, ())
