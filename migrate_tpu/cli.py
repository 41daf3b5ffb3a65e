"""Command line: parse options, call the engine, pick a reporter.

Exit status: ``diff`` 0 nothing to change, 1 changes due, 2 errors; ``fix`` 0
all done, 1 manual work remains, 2 errors; ``check`` 0 clean, 1 findings, 2
errors. Heavy modules (LibCST, the rules) load only once a file must be parsed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import click

from migrate_tpu import __version__

TARGETS = ("2.4", "latest")


def _split(values: Sequence[str]) -> Tuple[str, ...]:
    items: List[str] = []
    for value in values:
        items += [part.strip() for part in value.split(",") if part.strip()]
    return tuple(items)


def shared_options(function):
    options = [
        click.option("--select", multiple=True, metavar="IDS", help="Only these rules (ids or prefixes, comma-separated)."),
        click.option("--ignore", multiple=True, metavar="IDS", help="Skip these rules (ids or prefixes, comma-separated)."),
        click.option("--exclude", multiple=True, metavar="GLOB", help="Skip paths matching GLOB (on top of .gitignore)."),
        click.option("--target", type=click.Choice(TARGETS), default=None, help="TensorFlow version to migrate to (default 2.4)."),
        click.option("--unsafe-fixes", is_flag=True, default=None, help="Also apply fixes that may change behaviour."),
        click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: one per core)."),
        click.option("--no-gitignore", is_flag=True, help="Do not skip what .gitignore ignores."),
        click.option("--quiet", "-q", is_flag=True, help="Print only errors and the essential output."),
        click.option("--stdin-filename", default=None, help="Name to show for source read from stdin."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


class Run:
    """Everything one invocation decided, shared by the subcommands."""

    def __init__(self, paths, select, ignore, exclude, target, unsafe_fixes, jobs, no_gitignore, quiet, stdin_filename, want_edits=False):
        from migrate_tpu.engine.config import Settings

        self.paths = paths
        self.quiet = quiet
        self.stdin_filename = stdin_filename
        self.settings = Settings(
            select=_split(select),
            ignore=_split(ignore),
            exclude=_split(exclude),
            target=target or "2.4",
            unsafe_fixes=bool(unsafe_fixes),
            jobs=jobs or 0,
            respect_gitignore=not no_gitignore,
        )
        self.want_edits = want_edits
        self._check_rule_ids()

    def _check_rule_ids(self) -> None:
        patterns = self.settings.select + self.settings.ignore
        if not patterns:
            return
        from migrate_tpu.codemod.rule import all_rules

        ids = [rule.id for rule in all_rules()]
        for pattern in patterns:
            if pattern.upper() != "ALL" and not any(rule_id.startswith(pattern.upper()) for rule_id in ids):
                raise click.BadParameter(f"no rule matches {pattern!r} (see `migrate-tpu rules`)", param_hint="--select/--ignore")

    def migrator(self):
        from migrate_tpu.codemod.api import Options
        from migrate_tpu.codemod.migrator import TPUMigrator

        options = Options(
            select=self.settings.select,
            ignore=self.settings.ignore,
            target=self.settings.target,
            unsafe_fixes=self.settings.unsafe_fixes,
            want_edits=self.want_edits,
        )
        roots = tuple(str(Path(p).resolve()) for p in self.paths if p != "-" and Path(p).is_dir())
        return TPUMigrator(options, roots)

    def results(self, mode: str):
        """Every file's result, in path order; problems found while walking first."""
        from migrate_tpu.engine.discover import discover
        from migrate_tpu.engine.pipeline import FileResult, run

        files = []
        notes = []
        for found in discover(self.paths, self.settings.exclude, self.settings.respect_gitignore):
            if found.problem is None:
                files.append(found.path)
            elif found.is_error:
                notes.append(FileResult(found.path.as_posix(), error=found.problem))
            elif not self.quiet:
                click.echo(f"{found.path.as_posix()}: {found.problem}", err=True)
        yield from notes
        yield from run(files, self.migrator(), mode, self.settings.jobs or None)


def _stdin(run: Run, mode: str) -> int:
    """``-`` as the only path: source from stdin, result to stdout."""
    from migrate_tpu.engine.pipeline import FileError, unified_diff
    from migrate_tpu.engine.report import finding_line
    from migrate_tpu.engine.source import SourceError, decode

    name = run.stdin_filename or "<stdin>"
    data = sys.stdin.buffer.read()
    migrator = run.migrator()
    try:
        decoded = decode(data)
        outcome = migrator.migrate(decoded.text, "<stdin>") if migrator.needs_work(data) else None
    except (SourceError, FileError) as error:
        where = f"{name}:{error.line}" if error.line else name
        click.echo(f"{where}: error: {error.message}", err=True)
        if mode == "fix":
            sys.stdout.buffer.write(data)
        return 2
    code = outcome.code if outcome else decoded.text
    reports = outcome.reports if outcome else []
    if mode == "fix":
        sys.stdout.buffer.write(decoded.encode(code))
        sys.stdout.buffer.flush()
        for report in reports:
            if not report.applied and not run.quiet:
                click.echo(finding_line(name, report), err=True)
        return 1 if any(not r.applied for r in reports) else 0
    if mode == "diff":
        display = name if name != "<stdin>" else "stdin"
        sys.stdout.buffer.write(unified_diff(decoded.text, code, display).encode("utf-8"))
        return 1 if code != decoded.text else 0
    for report in reports:
        click.echo(finding_line(name, report))
    return 1 if reports else 0


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="migrate-tpu")
def main() -> None:
    """Migrate TensorFlow 2.1 TPU code to TensorFlow 2.4 form."""


@main.command()
@click.argument("paths", nargs=-1, required=True)
@shared_options
def diff(paths, **options) -> None:
    """Print the changes `fix` would make, as a unified diff; write nothing."""
    run = Run(paths, **options)
    if paths == ("-",):
        sys.exit(_stdin(run, "diff"))
    from migrate_tpu.engine.report import RunSummary, error_line, write_text_findings

    summary = RunSummary()
    remaining = []
    out = sys.stdout.buffer
    for result in run.results("diff"):
        summary.add(result)
        if result.failed:
            click.echo(error_line(result), err=True)
        if result.diff:
            out.write(result.diff)
            out.flush()
        if any(not r.applied for r in result.reports):
            remaining.append(result)
    if not run.quiet:
        from migrate_tpu.engine.report import summary_text

        write_text_findings(remaining, sys.stderr, only_remaining=True)
        click.echo(summary_text(summary, "diff"), err=True)
    sys.exit(2 if summary.errors else 1 if summary.changed else 0)


@main.command()
@click.argument("paths", nargs=-1, required=True)
@shared_options
def fix(paths, **options) -> None:
    """Rewrite files in place (atomically); `fix -` reads stdin and writes stdout."""
    run = Run(paths, **options)
    if paths == ("-",):
        sys.exit(_stdin(run, "fix"))
    from migrate_tpu.engine.report import RunSummary, error_line, finding_line, summary_text

    summary = RunSummary()
    for result in run.results("fix"):
        summary.add(result)
        if result.failed:
            click.echo(error_line(result), err=True)
        if not run.quiet:
            if result.written:
                fixed = sum(1 for r in result.reports if r.applied)
                click.echo(f"Fixed {result.path} ({fixed} {'fix' if fixed == 1 else 'fixes'})", err=True)
            for report in result.reports:
                if not report.applied:
                    click.echo(finding_line(result.path, report), err=True)
    if not run.quiet:
        click.echo(summary_text(summary, "fix"), err=True)
    sys.exit(2 if summary.errors else 1 if summary.remaining else 0)


@main.command()
@click.argument("paths", nargs=-1, required=True)
@shared_options
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", help="Report format.")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False, writable=True), default=None, help="Write the report here instead of stdout.")
def check(paths, output_format, output_file, **options) -> None:
    """List findings (fixable and manual) with rule id, file, line and column."""
    run = Run(paths, want_edits=output_format == "json", **options)
    if paths == ("-",):
        sys.exit(_stdin(run, "check"))
    from migrate_tpu.engine.report import RunSummary, error_line, json_report, summary_text, write_text_findings
    import io

    summary = RunSummary()
    results = []
    for result in run.results("check"):
        summary.add(result)
        if result.failed:
            click.echo(error_line(result), err=True)
        # Keep only what the report needs, not every clean file.
        if result.reports or result.failed:
            results.append(result)
    buffer = io.StringIO()
    if output_format == "json":
        buffer.write(json_report(results, summary))
    else:
        write_text_findings(results, buffer)
    text = buffer.getvalue()
    if output_file:
        Path(output_file).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    if output_format == "text" and not run.quiet:
        click.echo(summary_text(summary, "check"), err=True)
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
@click.option("--python", "python", type=click.Path(exists=True, dir_okay=False), default=None, help="Interpreter to run in (e.g. a TF 2.1 venv).")
@click.option("--no-emulation", is_flag=True, help="Use the real TPU; emulate nothing.")
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(replicas, tf_api, python, no_emulation, script, args) -> None:
    """Execute a script or notebook under the runtime's TPU emulation."""
    from migrate_tpu.runtime.launch import launch

    sys.exit(launch(script, list(args), replicas=replicas, tf_api=tf_api, python=python, emulation=not no_emulation))


if __name__ == "__main__":  # pragma: no cover
    main()
