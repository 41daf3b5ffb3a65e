"""The one walk of two recorded values (verify/values/record_walk.py) that every comparison reads
records through: its steps in the record's order, where two structures part, and the same keys
for the verdict's tolerance lookups as for the A/A spread's measurements (pure, milliseconds)."""

from pathlib import Path

from migrate_tpu.verify import RunResult, compare
from migrate_tpu.verify.judge.compare import CompareContext
from migrate_tpu.verify.judge.spread import measure_spread
from migrate_tpu.verify.values.record_walk import Apart, Leaf, numeric_leaves, walk
from migrate_tpu.verify.values.tolerance import Judge


def array(values, dtype="float32"):
    return {"dtype": dtype, "shape": [len(values)], "value": list(values)}


def python(value):
    return {"python": value}


# a Keras log of two replicas, a list and a description whose repr names its address
VALUE = {"dict": [["loss", {"replicas": [array([1.0, 2.0]), array([3.0, 4.0])]}],
                  ["steps", {"list": [python(3), python("epoch"), python(True)]}],
                  ["model", {"object": "<Model at 0x7f00>"}]]}


def test_the_walk_reaches_every_value_in_the_records_order_with_its_key_and_replica():
    steps = list(walk(VALUE, VALUE, ("event", 0, 4)))
    assert [(s.kind, s.key[3:], s.replica, s.names) for s in steps] == [
        ("array", (("k", "loss"),), 0, ("loss",)),
        ("array", (("k", "loss"),), 1, ("loss",)),  # one value across its replicas: one key
        ("number", (("k", "steps"), ("l", 0)), None, ("steps",)),
        ("python", (("k", "steps"), ("l", 1)), None, ("steps",)),
        ("python", (("k", "steps"), ("l", 2)), None, ("steps",)),  # a bool is no number
        ("other", (("k", "model"),), None, ("model",)),
    ]
    assert [leaf.kind for leaf in numeric_leaves(VALUE, VALUE)] == ["array", "array", "number"]


def test_where_two_structures_part_the_walk_says_how_and_goes_no_deeper():
    def first_apart(after):
        return next(step for step in walk(VALUE, after) if isinstance(step, Apart))

    fewer = {"dict": [["loss", {"replicas": [array([1.0, 2.0])]}]] + VALUE["dict"][1:]}
    assert (first_apart(fewer).what, first_apart(fewer).names) == ("replica count", ("loss",))
    longer = {"dict": [["loss", {"replicas": [array([1.0, 2.0, 5.0]), array([3.0, 4.0])]}]] + VALUE["dict"][1:]}
    assert (first_apart(longer).what, first_apart(longer).replica) == ("shape", 0)
    as_ints = {"dict": [["loss", {"replicas": [array([1, 2], "int64"), array([3.0, 4.0])]}]] + VALUE["dict"][1:]}
    assert first_apart(as_ints).what == "dtype"
    renamed = {"dict": [["cost", VALUE["dict"][0][1]]] + VALUE["dict"][1:]}
    assert first_apart(renamed).what == "structure"
    assert list(numeric_leaves(VALUE, renamed)) == []  # a part that differs is no rounding to measure
    assert [type(step) for step in walk(None, python(1))] == [Apart] and list(walk(None, None)) == []
    assert all(isinstance(step, Leaf) for step in walk(VALUE, VALUE))


def record(value, loss):
    return {"steps": 1, "exit_status": 0, "exception": None, "traces": {}, "traces_per_step": [1], "printed": [],
            "events": [{"step": 1, "kind": "function", "where": "/nowhere/t.py:9", "value": value}],
            "variables": [{"name": "dense/kernel:0", "shape": [2], "dtype": "float32",
                           "replicas": [array([loss, 1.0]), array([loss, 1.0])]}]}


def test_the_verdict_asks_a_tolerance_for_each_key_the_spread_measures(monkeypatch):
    """Each value's tolerance follows from its own A/A spread only if the comparison and the
    spread key a value alike: both read the record through the one walk."""
    import migrate_tpu.verify.judge.compare as comparing
    asked = []

    class KeysAsked(Judge):
        def tolerance(self, key, where=""):
            asked.append(key)
            return super().tolerance(key, where)

    monkeypatch.setattr(comparing, "Judge", KeysAsked)
    moved = {"dict": [["loss", {"replicas": [array([1.0000001, 2.0000002]), array([3.0000003, 4.0000004])]}],
                      ["steps", {"list": [python(3.0000003), python("epoch"), python(True)]}],
                      ["model", {"object": "<Model at 0x7f08>"}]]}
    first = RunResult(0, 1.0, record(VALUE, 0.5), "", "", Path("/a"))
    again = RunResult(0, 1.0, record(moved, 0.5000001), "", "", Path("/b"))
    spread = measure_spread(first, again, 1)  # every number moved a little: each value's key noted
    assert len(spread.values) == 3  # the loss (over its replicas), the step count, the kernel
    verdict = compare(first, again, 0.0, 0.0, "t.py", CompareContext(spread=spread))
    assert verdict.verdict == "same"
    assert set(asked) == set(spread.values)
