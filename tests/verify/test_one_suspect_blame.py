"""The one-run blame of a single suspect (verify/command/session.py, ``_the_one_suspect``) judges
the suspect's run against the migrated run up to the step where the runs parted: what it keeps
of a run (pure, milliseconds; the blame itself: tests/verify/test_verify.py's planted mistake,
blamed in one run)."""

from pathlib import Path

from migrate_tpu.verify import RunResult
from migrate_tpu.verify.command.session import _steps_up_to


def scalar(x):
    return {"dtype": "float32", "shape": [], "value": x}


def test_the_suspect_is_judged_on_the_steps_up_to_the_divergence_alone():
    record = {"steps": 3, "exit_status": 1, "exception": {"type": "ValueError"}, "traces": {}, "traces_per_step": [1, 0, 0],
              "events": [{"step": k, "kind": "function", "where": "/nowhere/t.py:9", "value": scalar(k)} for k in (1, 2, 3)],
              "variables": [{"name": "w:0"}], "printed": [{"step": 3, "text": "3.0"}]}
    full = RunResult(1, 1.0, record, "3.0\n", "Traceback ...", Path("/nowhere"))
    short = _steps_up_to(full, 1)
    assert [event["step"] for event in short.record["events"]] == [1]
    assert (short.record["steps"], short.record["variables"], short.record["printed"], short.record["traces_per_step"]) == (1, [], [], [1])
    assert (short.record["exception"], short.record["exit_status"], short.status, short.stdout) == (None, 0, 0, "")
    assert full.record["steps"] == 3 and len(full.record["events"]) == 3  # the run itself is left as it was
