"""One run's settings, resolved from the command line and the settings file.

:func:`resolve` is pure: it is handed what the user typed, the checked
``[tool.migrate-tpu]`` table (``engine.config.load_config``) and the few facts
about the run it needs, and reads nothing itself. Precedence, in one place:

- an option given on the command line wins over the file;
- ``--select`` starts a new selection: the file's ``select`` *and* ``ignore``
  are dropped; ``--ignore`` adds to the file's ``ignore`` (as ruff does);
- ``--exclude`` adds to the file's ``exclude``;
- ``--target`` defaults to the file's ``target``, then to 2.4; ``auto`` is
  left for the caller to settle from the project's requirements;
- ``--jobs`` defaults to the file's ``jobs``, then to 1 under pre-commit or for
  a small batch of named files, else 0 (one worker per core).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Mapping, Optional, Sequence, Tuple, cast

AUTO_TARGET = "auto"


@dataclass(frozen=True)
class Settings:
    select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()
    target: str = "2.4"
    unsafe_fixes: bool = False
    jobs: int = 0
    respect_gitignore: bool = True
    # (glob, rule ids) pairs: those rules are off for matching files.
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    # Apply `exclude` to files named on the command line too (pre-commit).
    force_exclude: bool = False
    # The folder path patterns are relative to, and the file they came from.
    base: Optional[str] = None
    config_file: Optional[str] = None
    # What the project the codemod reads leaves out (its other modules, its stand-in classes);
    # None: ``exclude`` (verify's copy runs with no exclude, and keeps the project's here).
    project_exclude: Optional[Tuple[str, ...]] = None


@dataclass(frozen=True)
class CommandLine:
    """The settings options as typed; None (or empty) where an option was not given."""

    select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()
    force_exclude: Optional[bool] = None
    target: Optional[str] = None
    unsafe_fixes: Optional[bool] = None
    jobs: Optional[int] = None
    no_gitignore: bool = False


@dataclass(frozen=True)
class Circumstances:
    """Facts about the run that settle defaults; the caller finds them out."""

    under_pre_commit: bool = False
    # Only a few files, all named one by one (a pre-commit batch, an editor).
    small_batch: bool = False
    config_file: Optional[str] = None
    # The folder of ``config_file``: path patterns in it are relative to it.
    base: Optional[str] = None


class SettingsError(Exception):
    """Settings that cannot be used; the message says which and why."""


def split_ids(values: Sequence[str]) -> Tuple[str, ...]:
    """``("TPU1,TPU2", "TPU3")`` -> ``("TPU1", "TPU2", "TPU3")``."""
    items: List[str] = []
    for value in values:
        items += [part.strip() for part in value.split(",") if part.strip()]
    return tuple(items)


# The file's values are typed by ``load_config``'s checks, not by its return type
# (a table of mixed values); these readers state the type each key was checked for.


def _strings_setting(file: Mapping[str, object], key: str) -> Tuple[str, ...]:
    return tuple(cast(Sequence[str], file.get(key, ())))


def _per_file_ignores_setting(file: Mapping[str, object]) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    return tuple(cast(Sequence[Tuple[str, Tuple[str, ...]]], file.get("per-file-ignores", ())))


def resolve(
    cli: CommandLine,
    file: Mapping[str, object],
    targets: Sequence[str],
    circumstances: Circumstances = Circumstances(),
) -> Settings:
    """The run's settings. ``file``: the ``[tool.migrate-tpu]`` table as
    ``load_config`` returns it ({} for none); ``targets``: the targets the
    codemod knows (``auto`` is accepted besides)."""
    target = cli.target or file.get("target") or targets[0]
    if target not in tuple(targets) + (AUTO_TARGET,):
        where = f"{circumstances.config_file}: [tool.migrate-tpu] target" if not cli.target else "--target"
        raise SettingsError(f"{where} must be one of {', '.join(tuple(targets) + (AUTO_TARGET,))}, not {target!r}")
    select = split_ids(cli.select) if cli.select else _strings_setting(file, "select")
    ignore = (() if cli.select else _strings_setting(file, "ignore")) + split_ids(cli.ignore)
    if cli.jobs:
        jobs = cli.jobs
    elif file.get("jobs"):
        jobs = cast(int, file["jobs"])
    else:
        jobs = 1 if circumstances.under_pre_commit or circumstances.small_batch else 0
    return Settings(
        select=select,
        ignore=ignore,
        exclude=_strings_setting(file, "exclude") + split_ids(cli.exclude),
        target=str(target),
        unsafe_fixes=bool(cli.unsafe_fixes if cli.unsafe_fixes is not None else file.get("unsafe-fixes", False)),
        jobs=jobs,
        respect_gitignore=not cli.no_gitignore and bool(file.get("respect-gitignore", True)),
        per_file_ignores=_per_file_ignores_setting(file),
        force_exclude=bool(cli.force_exclude if cli.force_exclude is not None else file.get("force-exclude", False)),
        base=circumstances.base,
        config_file=circumstances.config_file,
    )


def unknown_rule_patterns(settings: Settings, rule_ids: Sequence[str]) -> List[str]:
    """Patterns in select, ignore and per-file ignores that match no rule id (``ALL`` matches all)."""
    patterns = settings.select + settings.ignore + tuple(i for _, ids in settings.per_file_ignores for i in ids)
    return [
        pattern
        for pattern in patterns
        if pattern.upper() != "ALL" and not any(rule_id.startswith(pattern.upper()) for rule_id in rule_ids)
    ]

