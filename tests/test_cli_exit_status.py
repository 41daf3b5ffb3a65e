"""The exit status of `diff`, `fix` and `check` (and of their `-` stdin form), from one function:
its whole table (the README's and design.md's exit statuses)."""

import itertools

import pytest

from migrate_tpu.cli import exit_status

# (errors, work left, --exit-zero) -> status: errors win over everything, --exit-zero only
# turns "work left" (1) into 0.
TABLE = {
    (False, False, False): 0,
    (False, True, False): 1,
    (False, False, True): 0,
    (False, True, True): 0,
    (True, False, False): 2,
    (True, True, False): 2,
    (True, False, True): 2,
    (True, True, True): 2,
}


@pytest.mark.parametrize("errors, work_left, exit_zero", sorted(TABLE))
def test_exit_status_table(errors, work_left, exit_zero):
    assert exit_status(errors, work_left, exit_zero) == TABLE[errors, work_left, exit_zero]


def test_the_table_is_whole():
    assert set(TABLE) == set(itertools.product((False, True), repeat=3))


def test_the_commands_take_their_status_from_it():
    """No command decides its status by itself: each exit of diff, fix and check goes through it."""
    import inspect

    import migrate_tpu.cli as cli

    source = inspect.getsource(cli)
    assert source.count("exit_status(") == 1 + 3 + 1  # the definition, diff/fix/check, stdin
    assert "0 if exit_zero" not in source
