"""What the commands that read files (``diff``, ``fix``, ``check``) share on the command
line: their options (``shared_options``, ``exit_zero_option``), the refusal of ``--installed``
by the two that write, the paths to work on when none is named; and ``fail``, the one way a
command ends on a usage error (status 2, one line).

Apart from ``cli.py`` because none of it is a command or prints a report: ``cli.py`` holds
the commands, how their options become a run, and what they print.
"""

from __future__ import annotations

import re
import sys
from typing import Optional, Tuple

import click

from migrate_tpu.compose import TARGETS
from migrate_tpu.invocation import under_pre_commit


def _parse_shard(context, parameter, value):
    if value is None:
        return None
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", value)
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise click.BadParameter("expected K/N with 1 <= K <= N, e.g. 2/4")
    return int(match.group(1)), int(match.group(2))


def shared_options(function):
    options = [
        click.option("--select", multiple=True, metavar="IDS", help="Only these rules (ids or prefixes, comma-separated); replaces the config's list."),
        click.option("--ignore", multiple=True, metavar="IDS", help="Skip these rules (ids or prefixes, comma-separated), on top of the config's."),
        click.option("--exclude", multiple=True, metavar="GLOB", help="Skip paths matching GLOB (on top of .gitignore and the config's)."),
        click.option("--force-exclude", is_flag=True, default=None, help="Apply excludes to files named on the command line too (pre-commit)."),
        click.option("--target", type=click.Choice(TARGETS + ("auto",)), default=None,
                     help="TensorFlow version to migrate to (default 2.4); auto: from the tensorflow requirement."),
        click.option("--unsafe-fixes/--no-unsafe-fixes", default=None, help="Also apply fixes that may change behaviour."),
        click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: one per core; 1 under pre-commit)."),
        click.option("--no-gitignore", is_flag=True, help="Do not skip what .gitignore ignores."),
        click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None, help="Read settings from this pyproject.toml."),
        click.option("--isolated", is_flag=True, help="Ignore pyproject.toml settings."),
        click.option("--no-progress", is_flag=True, help="Never draw a progress bar."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the result cache."),
        click.option("--follow-symlinks", is_flag=True, help="Follow symbolic links while walking folders (cycles are detected)."),
        click.option("--timeout", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
                     help="Give up on a file after this long (0: no limit; default grows with file size)."),
        click.option("--cache-dir", type=click.Path(file_okay=False), default=None, help="Where the result cache lives (default .migrate-tpu-cache)."),
        click.option("--shard", callback=_parse_shard, default=None, metavar="K/N", help="Process only shard K of N (split by path, stable across machines)."),
        click.option("--quiet", "-q", is_flag=True, help="Print only errors and the essential output."),
        click.option("--stdin-filename", default=None, help="Name to show for source read from stdin (a .ipynb name reads a notebook)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def fail(message: str) -> None:
    click.echo(f"migrate-tpu: error: {message}", err=True)
    sys.exit(2)


def paths_to_work_on(paths, default: Optional[str] = None) -> Tuple[str, ...]:
    """The paths to work on: pre-commit may call a hook with no file, and nothing to do is a success."""
    if paths:
        return tuple(paths)
    if under_pre_commit():
        sys.exit(0)
    if default is not None:
        return (default,)
    raise click.UsageError("Missing argument 'PATHS...': name files or folders (`.` for the current one).")


def installed_refused(function):
    """``--installed`` (and check's ``--python``, ``--include-tensorflow`` with it), refused by ``fix`` and ``diff``."""
    function = click.option("--installed", is_flag=True, hidden=True, help="Refused: installed packages are only checked.")(function)
    function = click.option("--python", "installed_python", default=None, hidden=True, help="Refused with --installed.")(function)
    return click.option("--include-tensorflow", "installed_tensorflow", is_flag=True, hidden=True, help="Refused with --installed.")(function)


def refuse_installed(command: str) -> None:
    fail(f"`{command} --installed`: migrate-tpu never changes installed packages (pip owns them, and an upgrade "
         f"would undo it); `migrate-tpu check --installed` lists what they call; upgrade the distribution, "
         f"or copy the module into your project and run `migrate-tpu {command}` on the copy")


exit_zero_option = click.option("--exit-zero", is_flag=True, help="Exit with status 0 even when findings or changes remain (2 still means errors).")
