"""Which runs must start cold (``warm.unsafe_reason``), decided without starting anything."""

import sys

from migrate_tpu.runtime.process import warm, warm_pool

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



def test_pools_are_made_where_a_servers_socket_path_fits(monkeypatch):
    """A socket's path holds at most 107 bytes: the pool's folder, the key, ``.sock`` and the
    binding server's ``.PID.tmp``; a longer temporary folder makes pools in /tmp."""
    import tempfile

    longest, longer = "/" + "d" * (warm_pool._LONGEST_BASE - 1), "/" + "d" * warm_pool._LONGEST_BASE
    monkeypatch.setattr(tempfile, "tempdir", longest)  # what gettempdir() returns, unchecked
    assert warm_pool._base_folder() == longest
    monkeypatch.setattr(tempfile, "tempdir", longer)
    assert warm_pool._base_folder() == "/tmp"
    socket_while_bound = longest + "/migrate-tpu-warm-abcdefgh/" + "k" * 20 + ".sock" + ".4194304.tmp"
    assert len(socket_while_bound.encode()) <= 107
