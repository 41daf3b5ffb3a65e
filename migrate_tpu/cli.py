"""Command line: parse options, call the engine, pick a reporter.

Exit status: ``diff`` 0 nothing to change, 1 changes due, 2 errors; ``fix`` 0
all done, 1 manual work remains, 2 errors; ``check`` 0 clean, 1 findings, 2
errors. Heavy modules (LibCST, the rules) load only once a file must be parsed.

Settings come from ``[tool.migrate-tpu]`` in the nearest ``pyproject.toml``;
options given here win over it.
"""

from __future__ import annotations

import io
import os
import re
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import click

from migrate_tpu import __version__

TARGETS = ("2.4", "latest")
REPORT_FORMATS = ("text", "json", "github", "sarif", "markdown")
# Up to this many files named one by one (a pre-commit batch, an editor) run in
# this process: pre-commit already runs one hook process per core.
SMALL_BATCH = 64


def _split(values: Sequence[str]) -> Tuple[str, ...]:
    items: List[str] = []
    for value in values:
        items += [part.strip() for part in value.split(",") if part.strip()]
    return tuple(items)


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
        click.option("--target", type=click.Choice(TARGETS + ("auto",)), default=None, help="TensorFlow version to migrate to (default 2.4); auto: from the tensorflow requirement."),
        click.option("--unsafe-fixes/--no-unsafe-fixes", default=None, help="Also apply fixes that may change behaviour."),
        click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: one per core; 1 under pre-commit)."),
        click.option("--no-gitignore", is_flag=True, help="Do not skip what .gitignore ignores."),
        click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None, help="Read settings from this pyproject.toml."),
        click.option("--isolated", is_flag=True, help="Ignore pyproject.toml settings."),
        click.option("--no-progress", is_flag=True, help="Never draw a progress bar."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the result cache."),
        click.option("--follow-symlinks", is_flag=True, help="Follow symbolic links while walking folders (cycles are detected)."),
        click.option("--timeout", type=click.FloatRange(min=0), default=None, metavar="SECONDS", help="Give up on a file after this long (0: no limit; default grows with file size)."),
        click.option("--cache-dir", type=click.Path(file_okay=False), default=None, help="Where the result cache lives (default .migrate-tpu-cache)."),
        click.option("--shard", callback=_parse_shard, default=None, metavar="K/N", help="Process only shard K of N (split by path, stable across machines)."),
        click.option("--quiet", "-q", is_flag=True, help="Print only errors and the essential output."),
        click.option("--stdin-filename", default=None, help="Name to show for source read from stdin (a .ipynb name reads a notebook)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _fail(message: str) -> None:
    click.echo(f"migrate-tpu: error: {message}", err=True)
    sys.exit(2)


def _under_pre_commit() -> bool:
    return bool(os.environ.get("PRE_COMMIT"))


def _no_paths(paths) -> None:
    """pre-commit may call a hook with no file: nothing to do is a success."""
    if not paths:
        if _under_pre_commit():
            sys.exit(0)
        raise click.UsageError("Missing argument 'PATHS...': name files or folders (`.` for the current one).")


class Run:
    """Everything one invocation decided, shared by the subcommands."""

    def __init__(
        self,
        paths,
        select=(),
        ignore=(),
        exclude=(),
        force_exclude=None,
        target=None,
        unsafe_fixes=None,
        jobs=None,
        no_gitignore=False,
        config_file=None,
        isolated=False,
        no_progress=False,
        quiet=False,
        stdin_filename=None,
        want_edits=False,
        no_cache=False,
        cache_dir=None,
        shard=None,
        follow_symlinks=False,
        timeout=None,
    ):
        from migrate_tpu.engine.config import ConfigError, Settings, find_config, load_config

        self.paths = paths
        self.no_cache = no_cache
        self.follow_symlinks = follow_symlinks
        self.timeout = timeout
        self.cache_dir = cache_dir
        self.shard = shard
        self.quiet = quiet
        self.no_progress = no_progress
        self.stdin_filename = stdin_filename
        self.want_edits = want_edits
        self.start = self._start_folder()
        values = {}
        config_path = None
        if not isolated:
            try:
                config_path = Path(config_file) if config_file else find_config(self.start)
                if config_path is not None:
                    values = load_config(config_path)
            except ConfigError as error:
                _fail(str(error))
        base = str(config_path.parent.resolve()) if config_path else None

        target = target or values.get("target") or "2.4"
        if target not in TARGETS + ("auto",):
            _fail(f"{config_path}: [tool.migrate-tpu] target must be one of {', '.join(TARGETS + ('auto',))}, not {target!r}")
        self.target_note = None
        if target == "auto":
            from migrate_tpu.engine.config import find_tensorflow_pin, target_for_pin

            target, self.target_note = target_for_pin(find_tensorflow_pin(self.start))
        explicit_jobs = jobs or values.get("jobs") or 0
        self.settings = Settings(
            select=_split(select) if select else tuple(values.get("select", ())),
            # A --select given here starts a new selection: the config's ignore goes with its select.
            ignore=(() if select else tuple(values.get("ignore", ()))) + _split(ignore),
            exclude=tuple(values.get("exclude", ())) + _split(exclude),
            target=target,
            unsafe_fixes=bool(unsafe_fixes if unsafe_fixes is not None else values.get("unsafe-fixes", False)),
            jobs=explicit_jobs or self._default_jobs(),
            respect_gitignore=not no_gitignore and bool(values.get("respect-gitignore", True)),
            per_file_ignores=tuple(values.get("per-file-ignores", ())),
            force_exclude=bool(force_exclude if force_exclude is not None else values.get("force-exclude", False)),
            base=base,
            config_file=str(config_path) if config_path else None,
        )
        self._check_rule_ids()
        if self.target_note and not quiet:
            click.echo(f"migrate-tpu: --target auto: {self.target_note}", err=True)

    def _start_folder(self) -> Path:
        for raw in self.paths:
            if raw != "-":
                return Path(raw)
        if self.stdin_filename:
            return Path(self.stdin_filename).parent if Path(self.stdin_filename).parent.is_dir() else Path.cwd()
        return Path.cwd()

    def _default_jobs(self) -> int:
        """No pool under pre-commit or for a small batch of named files."""
        if _under_pre_commit():
            return 1
        files = [p for p in self.paths if p != "-"]
        if files and len(files) <= SMALL_BATCH and all(Path(p).is_file() for p in files):
            return 1
        return 0

    def _check_rule_ids(self) -> None:
        patterns = self.settings.select + self.settings.ignore + tuple(i for _, ids in self.settings.per_file_ignores for i in ids)
        if not patterns:
            return
        from migrate_tpu.codemod.rule import all_rules

        ids = [rule.id for rule in all_rules()]
        for pattern in patterns:
            if pattern.upper() != "ALL" and not any(rule_id.startswith(pattern.upper()) for rule_id in ids):
                raise click.BadParameter(f"no rule matches {pattern!r} (see `migrate-tpu rules`)", param_hint="--select/--ignore or [tool.migrate-tpu]")

    def migrator(self, mode: str = "diff"):
        from migrate_tpu.codemod.options import Options
        from migrate_tpu.codemod.migrator import TPUMigrator
        from migrate_tpu.engine.config import PathMigrator

        roots = tuple(str(Path(p).resolve()) for p in self.paths if p != "-" and Path(p).is_dir())

        def build(extra_ignores: Tuple[str, ...] = ()):
            options = Options(
                select=self.settings.select,
                ignore=self.settings.ignore + extra_ignores,
                target=self.settings.target,
                unsafe_fixes=self.settings.unsafe_fixes,
                want_edits=self.want_edits,
                mode=mode,
            )
            return TPUMigrator(options, roots)

        default = build()
        if not self.settings.per_file_ignores:
            return default
        variants = [((glob,), build(ids)) for glob, ids in self.settings.per_file_ignores]
        return PathMigrator(default, variants, self.settings.base)

    def files(self):
        """``(files to process, problems found while walking)``."""
        from migrate_tpu.engine.config import path_matches
        from migrate_tpu.engine.discover import discover
        from migrate_tpu.engine.pipeline import FileResult

        settings = self.settings
        base = Path(settings.base) if settings.base else None
        named = {os.path.normpath(p) for p in self.paths if p != "-" and Path(p).is_file()}
        files, errors, notes = [], [], []
        from migrate_tpu.engine.discover import in_shard

        shard_base = base or Path.cwd()
        for found in discover(self.paths, settings.exclude, settings.respect_gitignore, base=base, follow_symlinks=self.follow_symlinks):
            if self.shard is not None and not in_shard(found.path, self.shard, shard_base):
                continue
            if found.problem is None:
                if (
                    settings.force_exclude
                    and os.path.normpath(str(found.path)) in named
                    and any(path_matches(str(found.path), glob, settings.base) for glob in settings.exclude)
                ):
                    continue
                files.append(found.path)
            elif found.is_error:
                errors.append(FileResult(found.path.as_posix(), error=found.problem))
            else:
                notes.append(f"{found.path.as_posix()}: {found.problem}")
        return files, errors, notes

    def results(self, mode: str, progress_label: str = "files"):
        """Every file's result, in path order; problems found while walking first.

        ``self.progress`` is set while this runs: messages for stderr go
        through ``self.echo`` so that they do not tear the progress bar.
        """
        from migrate_tpu.engine.pipeline import run
        from migrate_tpu.engine.progress import Progress, wanted

        files, errors, notes = self.files()
        self.progress = Progress(len(files), wanted(len(files), disabled=self.no_progress or self.quiet), label=progress_label)
        try:
            if not self.quiet:
                for note in notes:
                    self.echo(note)
            yield from errors
            migrator = self.migrator(mode)
            cache = None
            if not self.no_cache and hasattr(migrator, "cache_salt"):
                from migrate_tpu.engine.cache import default_cache

                cache = default_cache(migrator.cache_salt(), self.cache_dir)
            for result in run(files, migrator, mode, self.settings.jobs or None, timeout=self.timeout, cache=cache):
                self.progress.advance(result.path)
                yield result
        finally:
            self.progress.close()

    progress = None

    def echo(self, text: str) -> None:
        if self.progress is not None and self.progress.enabled:
            self.progress.echo(text)
        else:
            click.echo(text, err=True)


def _stdin(run: Run, mode: str) -> int:
    """``-`` as the only path: source from stdin, result to stdout.

    The source goes through a worker process like any file, so that a parser
    crash or a time-out is reported instead of taking the command down.
    """
    from migrate_tpu.engine.pipeline import migrate_isolated
    from migrate_tpu.engine.report import finding_line

    name = run.stdin_filename or "<stdin>"
    data = sys.stdin.buffer.read()
    migrator = run.migrator(mode)
    result, new_data = migrate_isolated(data, Path(name if run.stdin_filename else "stdin"), migrator, mode, timeout=run.timeout)
    if result.failed:
        where = name + (f":{result.error_line}" if result.error_line else "")
        click.echo(f"{where}: error: {result.error}", err=True)
        if mode == "fix":
            sys.stdout.buffer.write(data)
        return 2
    reports = result.reports
    if mode == "fix":
        sys.stdout.buffer.write(new_data if new_data is not None else data)
        sys.stdout.buffer.flush()
        for report in reports:
            if not report.applied and not run.quiet:
                click.echo(finding_line(name, report), err=True)
        return 1 if any(not r.applied for r in reports) else 0
    if mode == "diff":
        sys.stdout.buffer.write(result.diff)
        return 1 if result.changed else 0
    for report in reports:
        click.echo(finding_line(name, report))
    return 1 if reports else 0


class _Group(click.Group):
    """Exit status 2, not Python's 1 (which means "findings"), when something breaks."""

    def invoke(self, ctx):
        from migrate_tpu.engine.pipeline import stop_signals

        try:
            with stop_signals():
                return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit, KeyboardInterrupt):
            raise
        except Exception:  # pragma: no cover - a bug; the traceback is for the report
            import traceback

            traceback.print_exc()
            click.echo("migrate-tpu: internal error (a bug: please report it with the traceback above)", err=True)
            sys.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="migrate-tpu")
def main() -> None:
    """Migrate TensorFlow 2.1 TPU code to TensorFlow 2.4 form."""


@main.command()
@click.argument("paths", nargs=-1)
@shared_options
def diff(paths, **options) -> None:
    """Print the changes `fix` would make, as a unified diff; write nothing.

    Notebooks are shown cell by cell (`notebook.ipynb:cell 4`)."""
    _no_paths(paths)
    run = Run(paths, **options)
    if paths == ("-",):
        sys.exit(_stdin(run, "diff"))
    from migrate_tpu.engine.report import RunSummary, error_line, summary_text, write_text_findings

    summary = RunSummary()
    remaining = []
    out = sys.stdout.buffer
    for result in run.results("diff"):
        summary.add(result)
        if result.failed:
            run.echo(error_line(result))
        if result.diff:
            run.progress.clear()
            out.write(result.diff)
            out.flush()
        if any(not r.applied for r in result.reports):
            remaining.append(result)
    if not run.quiet:
        write_text_findings(remaining, sys.stderr, only_remaining=True)
        click.echo(summary_text(summary, "diff"), err=True)
    sys.exit(2 if summary.errors else 1 if summary.changed else 0)


@main.command()
@click.argument("paths", nargs=-1)
@shared_options
def fix(paths, **options) -> None:
    """Rewrite files in place (atomically); `fix -` reads stdin and writes stdout."""
    _no_paths(paths)
    run = Run(paths, **options)
    if paths == ("-",):
        sys.exit(_stdin(run, "fix"))
    from migrate_tpu.engine.report import RunSummary, error_line, finding_line, summary_text

    summary = RunSummary()
    for result in run.results("fix"):
        summary.add(result)
        if result.failed:
            run.echo(error_line(result))
        if not run.quiet:
            if result.written:
                fixed = sum(1 for r in result.reports if r.applied)
                run.echo(f"Fixed {result.path} ({fixed} {'fix' if fixed == 1 else 'fixes'})")
            for report in result.reports:
                if not report.applied:
                    run.echo(finding_line(result.path, report))
    if not run.quiet:
        click.echo(summary_text(summary, "fix"), err=True)
    sys.exit(2 if summary.errors else 1 if summary.remaining else 0)


def _rule_infos():
    from migrate_tpu.codemod.rule import all_rules
    from migrate_tpu.engine.report import RuleInfo

    infos = []
    for rule in all_rules():
        try:
            docs = rule.docs()
        except Exception:  # a rule with broken docs must not break the report
            docs = ""
        safety = getattr(rule.safety, "value", str(rule.safety))
        infos.append(RuleInfo(rule.id, rule.name, rule.title, docs, safety, getattr(rule, "since", "")))
    return infos


@main.command()
@click.argument("paths", nargs=-1)
@shared_options
@click.option("--format", "output_format", type=click.Choice(REPORT_FORMATS), default="text", help="Report format: text, json, github (workflow annotations), sarif (2.1.0) or markdown (summary and diff).")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False, writable=True), default=None, help="Write the report here instead of stdout.")
def check(paths, output_format, output_file, **options) -> None:
    """List findings (fixable and manual) with rule id, file, line and column."""
    _no_paths(paths)
    run = Run(paths, want_edits=output_format in ("json", "sarif"), **options)
    if paths == ("-",) and output_format == "text":
        sys.exit(_stdin(run, "check"))
    if "-" in paths:
        _fail("`-` (stdin) works with --format text only; name files instead")
    from migrate_tpu.engine import report as reporting

    summary = reporting.RunSummary()
    results = []
    # The markdown report shows the diff too: the same run, with diffs kept.
    mode = "diff" if output_format == "markdown" else "check"
    for result in run.results(mode):
        summary.add(result)
        if result.failed:
            run.echo(reporting.error_line(result))
        # Keep only what the report needs, not every clean file.
        if result.reports or result.failed or result.diff:
            results.append(result)
    buffer = io.StringIO()
    if output_format == "json":
        buffer.write(reporting.json_report(results, summary))
    elif output_format == "github":
        buffer.write(reporting.github_report(results))
    elif output_format == "sarif":
        buffer.write(reporting.sarif_report(results, _rule_infos(), __version__))
    elif output_format == "markdown":
        buffer.write(reporting.markdown_report(results, summary, _rule_infos()))
    else:
        reporting.write_text_findings(results, buffer)
    text = buffer.getvalue()
    if output_file:
        try:
            Path(output_file).write_text(text, encoding="utf-8")
        except OSError as error:
            _fail(f"cannot write {output_file}: {error.strerror or error}")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    if not run.quiet:
        click.echo(reporting.summary_text(summary, "check"), err=True)
    sys.exit(2 if summary.errors else 1 if summary.by_rule else 0)


@main.command(name="rules")
@click.option("--target", type=click.Choice(TARGETS), default=None, help="Only rules for this target.")
def list_rules(target: Optional[str]) -> None:
    """The rule catalogue: id, fix safety, TF version of the new form, title."""
    from migrate_tpu.codemod.rule import all_rules

    for rule in all_rules():
        if target and target not in rule.targets:
            continue
        click.echo(f"{rule.id}  {rule.safety.value:<6}  TF {rule.since:<4}  {rule.name}: {rule.title}")


@main.command()
@click.argument("rule_id")
def explain(rule_id: str) -> None:
    """One rule's documentation with its before/after example."""
    from migrate_tpu.codemod.rule import get_rule

    rule = get_rule(rule_id)
    if rule is None:
        raise click.BadParameter(f"no rule {rule_id!r} (see `migrate-tpu rules`)", param_hint="RULE_ID")
    click.echo(rule.docs())


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--replicas", type=click.IntRange(min=1), default=None, help="Emulated TPU replicas (default 8).")
@click.option("--tf-api", type=click.Choice(["2.1", "2.4"]), default=None, help="API surface to provide (2.1: before migration).")
@click.option("--python", "python", default=None, metavar="PATH|ENV", help="Interpreter to run in: a path, or an env made by scripts/tf-envs (tf2.1, tf2.4, tf2.21).")
@click.option("--no-emulation", is_flag=True, help="Use the real TPU; emulate nothing.")
@click.option("--hosts", type=click.IntRange(min=1), default=None,
              help="Emulate a pod of this many hosts: one worker process each, joined by TF_CONFIG (--replicas then counts all hosts' cores; default 8 per host).")
@click.option("--tpu-env", type=click.Choice(["colab", "none"]), default=None,
              help="Machine the emulated TPU is attached to: colab (TPU_NAME announces it; default) or none (TPUClusterResolver(tpu='') fails as on TF >= 2.2 without TPU_NAME).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Stop every process after this long (exit status 124).")
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(replicas, tf_api, python, no_emulation, hosts, tpu_env, timeout, script, args) -> None:
    """Execute a script or notebook under the runtime's TPU emulation."""
    from migrate_tpu.runtime.launch import launch

    sys.exit(launch(script, list(args), replicas=replicas, tf_api=tf_api, python=python,
                    emulation=not no_emulation, hosts=hosts, timeout=timeout, tpu_env=tpu_env))


if __name__ == "__main__":  # pragma: no cover
    main()
