"""settings.resolve: command line over file, in-process, no files read."""

from __future__ import annotations

import pytest

from migrate_tpu.settings import Circumstances, CommandLine, Settings, SettingsError, resolve, split_ids, unknown_rule_patterns

TARGETS = ("2.4", "latest")


def test_nothing_given_gives_the_defaults():
    assert resolve(CommandLine(), {}, TARGETS) == Settings()


def test_the_command_line_wins_over_the_file():
    file = {"target": "latest", "unsafe-fixes": True, "jobs": 3, "respect-gitignore": False, "force-exclude": True}
    from_file = resolve(CommandLine(), file, TARGETS)
    assert (from_file.target, from_file.unsafe_fixes, from_file.jobs, from_file.respect_gitignore, from_file.force_exclude) == ("latest", True, 3, False, True)
    typed = CommandLine(target="2.4", unsafe_fixes=False, jobs=5, force_exclude=False)
    chosen = resolve(typed, file, TARGETS)
    assert (chosen.target, chosen.unsafe_fixes, chosen.jobs, chosen.force_exclude) == ("2.4", False, 5, False)
    # --no-gitignore can only turn the .gitignore off.
    assert resolve(CommandLine(no_gitignore=True), {}, TARGETS).respect_gitignore is False


def test_select_starts_a_new_selection_and_ignore_adds():
    file = {"select": ("TPU1",), "ignore": ("TPU102",), "exclude": ("build",)}
    assert resolve(CommandLine(), file, TARGETS).select == ("TPU1",)
    added = resolve(CommandLine(ignore=("TPU103, TPU104",), exclude=("gen/*",)), file, TARGETS)
    assert added.select == ("TPU1",) and added.ignore == ("TPU102", "TPU103", "TPU104")
    assert added.exclude == ("build", "gen/*")
    fresh = resolve(CommandLine(select=("TPU2",), ignore=("TPU201",)), file, TARGETS)
    assert fresh.select == ("TPU2",) and fresh.ignore == ("TPU201",)


@pytest.mark.parametrize(
    "circumstances, file, jobs",
    [
        (Circumstances(), {}, 0),
        (Circumstances(under_pre_commit=True), {}, 1),
        (Circumstances(small_batch=True), {}, 1),
        (Circumstances(small_batch=True), {"jobs": 4}, 4),
        (Circumstances(), {"jobs": 0}, 0),
    ],
)
def test_jobs_default(circumstances, file, jobs):
    assert resolve(CommandLine(), file, TARGETS, circumstances).jobs == jobs


def test_auto_is_left_to_the_caller_and_bad_targets_are_named():
    assert resolve(CommandLine(target="auto"), {}, TARGETS).target == "auto"
    assert resolve(CommandLine(), {"target": "auto"}, TARGETS).target == "auto"
    with pytest.raises(SettingsError, match=r"pyproject.toml: \[tool.migrate-tpu\] target must be one of 2.4, latest, auto, not '2.9'"):
        resolve(CommandLine(), {"target": "2.9"}, TARGETS, Circumstances(config_file="pyproject.toml"))


def test_per_file_ignores_and_where_patterns_are_relative_to():
    circumstances = Circumstances(config_file="/p/pyproject.toml", base="/p")
    settings = resolve(CommandLine(), {"per-file-ignores": (("tests/*", ("TPU101",)),)}, TARGETS, circumstances)
    assert settings.per_file_ignores == (("tests/*", ("TPU101",)),)
    assert (settings.base, settings.config_file) == ("/p", "/p/pyproject.toml")


def test_unknown_rule_patterns():
    settings = Settings(select=("TPU1", "all"), ignore=("NOPE",), per_file_ignores=(("x", ("TPU9",)),))
    assert unknown_rule_patterns(settings, ["TPU101", "TPU201"]) == ["NOPE", "TPU9"]


def test_split_ids():
    assert split_ids(["TPU101,TPU102", " TPU103 ", ","]) == ("TPU101", "TPU102", "TPU103")
