"""Which runs must start cold (``warm.unsafe_reason``), decided without starting anything."""

import sys

from migrate_tpu.runtime import warm

RUN = [sys.executable, "-m", "migrate_tpu.runtime", "train.py"]


def test_a_relative_pythonpath_entry_makes_a_run_start_cold():
    # an interpreter resolves "." against the folder it starts in: a warm server started in
    # another folder than the run's would not find the run's own packages (the verify corpus's
    # densenet imports tensorflow_examples from PYTHONPATH=.)
    reason = warm.unsafe_reason(RUN, environ={"PYTHONHASHSEED": "0", "PYTHONPATH": ".:/opt/lib"})
    assert reason is not None and "PYTHONPATH" in reason and "'.'" in reason


def test_absolute_pythonpath_entries_keep_a_run_warm():
    reason = warm.unsafe_reason(RUN, environ={"PYTHONHASHSEED": "0", "PYTHONPATH": "/opt/lib::/srv/pkgs"})
    assert reason is None or not warm.available(), reason
