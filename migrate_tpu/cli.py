"""Command line: parse options and dispatch; ``compose.py`` wires the rest.

Exit status: ``diff`` 0 nothing to change, 1 changes due, 2 errors; ``fix`` 0
all done, 1 manual work remains, 2 errors; ``check`` 0 clean, 1 findings, 2
errors. Heavy modules (LibCST, the rules) load only once a file must be parsed.

Settings come from ``[tool.migrate-tpu]`` in the nearest ``pyproject.toml``;
options given here win over it.
"""

from __future__ import annotations

import io
import os
import shlex
import sys
from pathlib import Path
from typing import List, Optional, Tuple

import click

from migrate_tpu import __version__
from migrate_tpu.compose import NOTEBOOK_DIFF_STYLES, TARGETS
from migrate_tpu.cli_options import exit_zero_option, fail, installed_refused, paths_to_work_on, refuse_installed, shared_options

REPORT_FORMATS = ("text", "json", "github", "sarif", "markdown")


def _start(
    paths,
    *,
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
    stdin_filename=None,
    quiet=False,
    installed=None,
    **run_options,
):
    """Settings resolved (``compose.settings_for``), then the run set up; bad settings end with status 2.
    ``installed`` (``check --installed``: names, python, include_tensorflow): the run is over
    an interpreter's distributions (settings from the current folder); returns (run, inventory)."""
    from migrate_tpu.compose import Run, settings_for
    from migrate_tpu.installed_check import installed_run
    from migrate_tpu.settings import CommandLine, SettingsError

    typed = CommandLine(
        select=tuple(select),
        ignore=tuple(ignore),
        exclude=tuple(exclude),
        force_exclude=force_exclude,
        target=target,
        unsafe_fixes=unsafe_fixes,
        jobs=jobs,
        no_gitignore=no_gitignore,
    )
    try:
        settings, note = settings_for(paths if installed is None else (".",), typed, config_file=config_file, isolated=isolated, stdin_filename=stdin_filename)
        if installed is not None:
            names, python, include_tensorflow = installed
            run, inventory = installed_run(names, python, include_tensorflow, settings, quiet=quiet, **run_options)
    except SettingsError as error:
        fail(str(error))
    if note and not quiet:
        click.echo(f"migrate-tpu: --target auto: {note}", err=True)
    if installed is not None:
        if not quiet:
            click.echo(inventory.describe(), err=True)
        return run, inventory
    return Run(paths, settings, quiet=quiet, stdin_filename=stdin_filename, **run_options)


def exit_status(errors: bool, work_left: bool, exit_zero: bool) -> int:
    """The exit status of ``diff``, ``fix`` and ``check``: 2 when a file failed, else 1 when
    work is left (``diff``: changes due; ``fix``: findings it did not fix; ``check``: any
    finding), unless ``--exit-zero``; else 0."""
    if errors:
        return 2
    return 1 if work_left and not exit_zero else 0


def _stdin(run, mode: str, exit_zero: bool = False) -> int:
    """``-`` as the only path: source from stdin, result to stdout; the exit status.

    The source goes through a worker process like any file, so that a parser
    crash or a time-out is reported instead of taking the command down.
    """
    failed, work_left = _stdin_outcome(run, mode)
    return exit_status(failed, work_left, exit_zero)


def _stdin_outcome(run, mode: str) -> Tuple[bool, bool]:
    """(whether the source failed, whether work is left), as :func:`exit_status` takes them."""
    from migrate_tpu.engine.report import error_line, finding_line, patch_bytes

    name = run.choices.stdin_filename or "<stdin>"
    data = sys.stdin.buffer.read()
    result, new_data = run.migrate_source(data, mode)
    if result.failed:
        click.echo(error_line(result), err=True)
        if mode == "fix":
            _write_stdout(data)
        return True, False
    reports = result.reports
    if mode == "fix":
        _write_stdout(new_data if new_data is not None else data)
        for report in reports:
            if not report.applied and not run.choices.quiet:
                click.echo(finding_line(name, report), err=True)
        return False, any(not r.applied for r in reports)
    if mode == "diff":
        _write_stdout(patch_bytes(result))
        return False, bool(result.changed)
    for report in reports:
        click.echo(finding_line(name, report))
    return False, bool(reports)


class _Group(click.Group):
    """Exit status 2, not Python's 1 (which means "findings"), when something breaks."""

    def invoke(self, ctx):
        from migrate_tpu.invocation import stop_signals

        try:
            with stop_signals():
                return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit, KeyboardInterrupt):
            raise
        except BrokenPipeError:
            # The reader of stdout went away (`migrate-tpu check | head`): stop quietly with
            # the status of a tool ended by SIGPIPE; stdout goes to /dev/null so that the
            # interpreter's last flush does not complain either. Files already written stay.
            import os

            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except OSError:
                pass
            sys.exit(141)
        except Exception:  # pragma: no cover - a bug; the traceback is for the report
            import traceback

            traceback.print_exc()
            click.echo("migrate-tpu: internal error (a bug: please report it with the traceback above)", err=True)
            sys.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="migrate-tpu")
def main() -> None:
    """Migrate TensorFlow 2.1 TPU code to TensorFlow 2.4 form."""


def _rule_names():
    from migrate_tpu.rule_lookup import rule_infos

    return {info.id: info.name for info in rule_infos()}


def _write_output(output_file: Optional[str], data: bytes) -> None:
    """``data`` to ``output_file``, or to stdout without one."""
    if output_file:
        try:
            Path(output_file).write_bytes(data)
        except OSError as error:
            fail(f"cannot write {output_file}: {error.strerror or error}")
    else:
        _write_stdout(data)


def _write_stdout(data: bytes) -> None:
    """All of ``data`` to stdout, or BrokenPipeError.

    A write into a pipe whose reader goes away mid-write returns short instead of
    raising (CPython hands back what the kernel took), and the rest would be lost in
    silence (`check | head` went on to its summary and exit status 1): write the rest
    until every byte is out, and the next write raises.
    """
    out = sys.stdout.buffer
    view = memoryview(data)
    while view:
        written = out.write(view)
        view = view[len(view) if written is None else written :]
    out.flush()


@main.command()
@click.argument("paths", nargs=-1)
@shared_options
@exit_zero_option
@click.option("--output-file", "-o", type=click.Path(dir_okay=False, writable=True), default=None, help="Write the patch here instead of stdout.")
@click.option("--notebook-diff", type=click.Choice(NOTEBOOK_DIFF_STYLES), default="json", show_default=True,
              help="json: a notebook's change as a patch of its file; cells: cell by cell, for reading (not a patch).")
@installed_refused
def diff(paths, exit_zero, output_file, notebook_diff, installed, installed_python, installed_tensorflow, **options) -> None:
    """Print the changes `fix` would make as a patch; write nothing. PATHS default to `.`.

    `git apply` and `patch -p1` take the output, notebooks included, run in
    the repository's top folder (else the current folder). A
    `# migrate-tpu: ID, ...` line before each file names the rules behind
    its change; both tools skip it."""
    if installed or installed_python or installed_tensorflow:
        refuse_installed("diff")
    paths = paths_to_work_on(paths, default=".")
    run = _start(paths, notebook_diff=notebook_diff, **options)
    if paths == ("-",):
        sys.exit(_stdin(run, "diff", exit_zero))
    from migrate_tpu.invocation import patch_root
    from migrate_tpu.engine.report import RunSummary, error_line, patch_bytes, summary_text, write_text_findings

    root = patch_root(paths)
    if root != Path.cwd().resolve() and not run.choices.quiet:
        run.echo(f"migrate-tpu: paths in the patch are relative to {root}: apply it there")
    summary = RunSummary()
    remaining = []
    patch = []
    for result in run.results("diff"):
        summary.add(result)
        if result.failed:
            run.echo(error_line(result))
        if result.diff:
            if output_file:
                patch.append(patch_bytes(result, str(root)))
            else:
                run.progress.clear()
                _write_output(None, patch_bytes(result, str(root)))
        if any(not r.applied for r in result.reports):
            remaining.append(result)
    if output_file:
        _write_output(output_file, b"".join(patch))
    if not run.choices.quiet:
        write_text_findings(remaining, sys.stderr, only_remaining=True)
        click.echo(summary_text(summary, "diff"), err=True)
    sys.exit(exit_status(bool(summary.errors), bool(summary.changed), exit_zero))


@main.command()
@click.argument("paths", nargs=-1)
@shared_options
@exit_zero_option
@click.option("--show-fixes", is_flag=True, help="List the fixes made, per file and rule.")
@installed_refused
def fix(paths, exit_zero, show_fixes, installed, installed_python, installed_tensorflow, **options) -> None:
    """Rewrite files in place (atomically); `fix -` reads stdin and writes stdout. Name the PATHS: `fix` writes."""
    if installed or installed_python or installed_tensorflow:
        refuse_installed("fix")
    paths = paths_to_work_on(paths)
    run = _start(paths, **options)
    if paths == ("-",):
        sys.exit(_stdin(run, "fix", exit_zero))
    from migrate_tpu.engine.report import RunSummary, error_line, finding_line, fixes_text, summary_text

    summary = RunSummary()
    written = []
    for result in run.results("fix"):
        summary.add(result)
        if result.failed:
            run.echo(error_line(result))
        if result.written and show_fixes:
            written.append(result)
        if not run.choices.quiet:
            if result.written:
                fixed = sum(1 for r in result.reports if r.applied)
                run.echo(f"Fixed {result.path} ({fixed} {'fix' if fixed == 1 else 'fixes'})")
            for report in result.reports:
                if not report.applied:
                    run.echo(finding_line(result.path, report))
    if show_fixes:
        click.echo(fixes_text(written, _rule_names(), "Fixed"), nl=False, err=True)
    if not run.choices.quiet:
        click.echo(summary_text(summary, "fix"), err=True)
    sys.exit(exit_status(bool(summary.errors), bool(summary.remaining), exit_zero))


@main.command()
@click.argument("paths", nargs=-1)
@shared_options
@exit_zero_option
@click.option("--format", "output_format", type=click.Choice(REPORT_FORMATS), default="text",
              help="Report format: text, json, github (workflow annotations), sarif (2.1.0) or markdown (summary and diff).")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False, writable=True), default=None, help="Write the report here instead of stdout.")
@click.option("--statistics", is_flag=True, help="Count findings per rule instead of listing them (text format).")
@click.option("--show-fixes", is_flag=True, help="Also list, per file and rule, the fixes `fix` would make.")
@click.option("--installed", is_flag=True, help="Check the distributions installed for an interpreter (read only), grouped by distribution; "
                                                "PATHS then name distributions (default: all but TensorFlow's own).")
@click.option("--python", "python", default=None, metavar="PATH|ENV", help="With --installed: the interpreter, its virtualenv's folder, or an env of "
                                                                          "`migrate-tpu envs` (tf2.4, ...); default: the active virtualenv's, else this one.")
@click.option("--include-tensorflow", is_flag=True, help="With --installed: also check TensorFlow's own distributions (tensorflow, keras, tf-keras, "
                                                         "tensorflow-estimator, tensorboard), which define the APIs rather than call them.")
def check(paths, exit_zero, output_format, output_file, statistics, show_fixes, installed, python, include_tensorflow, **options) -> None:
    """List findings (fixable and manual) with rule id, file, line and column. PATHS default to `.`."""
    if statistics and output_format != "text":
        fail("--statistics works with --format text only")
    run, inventory, paths = _check_run(paths, output_format, installed, python, include_tensorflow, options)
    if paths == ("-",) and output_format == "text" and not statistics and not show_fixes:
        sys.exit(_stdin(run, "check", exit_zero))
    if "-" in paths:
        fail("`-` (stdin) works with --format text only; name files instead")
    import migrate_tpu.engine.report as reporting

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
    report = _check_report(results, summary, output_format, statistics, inventory)
    _write_output(output_file, report.encode("utf-8"))
    if show_fixes:
        click.echo(reporting.fixes_text(results, _rule_names(), "`migrate-tpu fix` would fix"), nl=False, err=True)
    if not run.choices.quiet:
        click.echo(reporting.summary_text(summary, "check"), err=True)
        if inventory is not None and summary.by_rule:
            from migrate_tpu.installed_check import installed_summary

            click.echo(installed_summary(results, inventory), err=True)
    sys.exit(exit_status(bool(summary.errors), bool(summary.by_rule), exit_zero))


def _check_run(paths, output_format: str, installed: bool, python, include_tensorflow: bool, options):
    """``check``'s run, the inventory of ``--installed`` (else None) and the paths it works on
    (none with ``--installed``: the run is over the interpreter's distributions)."""
    if installed:
        if "-" in paths:
            fail("--installed reads an interpreter's packages: name distributions, not `-`")
        # The markdown report shows notebooks' diffs cell by cell: it is read, not applied.
        run, inventory = _start((), want_edits=output_format in ("json", "sarif"), notebook_diff="cells",
                                installed=(paths, python, include_tensorflow), **options)
        return run, inventory, ()
    if python or include_tensorflow:
        fail("--python and --include-tensorflow go with --installed")
    paths = paths_to_work_on(paths, default=".")
    return _start(paths, want_edits=output_format in ("json", "sarif"), notebook_diff="cells", **options), None, paths


def _check_report(results, summary, output_format: str, statistics: bool, inventory) -> str:
    """``check``'s report of ``results`` in ``output_format`` (or the statistics), as text."""
    from migrate_tpu.rule_lookup import rule_infos
    import migrate_tpu.engine.report as reporting

    buffer = io.StringIO()
    if statistics:
        buffer.write(reporting.statistics_text(results, _rule_names()))
    elif output_format == "json":
        buffer.write(reporting.json_report(results, summary))
    elif output_format == "github":
        buffer.write(reporting.github_report(results))
    elif output_format == "sarif":
        buffer.write(reporting.sarif_report(results, rule_infos(), __version__))
    elif output_format == "markdown":
        buffer.write(reporting.markdown_report(results, summary, rule_infos()))
    elif inventory is None:
        reporting.write_text_findings(results, buffer)
    report = buffer.getvalue()
    if inventory is not None and not statistics and output_format != "github":
        from migrate_tpu.installed_check import installed_report

        report = installed_report(output_format, report, results, inventory)
    return report


@main.command(name="rules")
@click.option("--target", type=click.Choice(TARGETS), default=None, help="Only rules for this target.")
def list_rules(target: Optional[str]) -> None:
    """The rule catalogue: id, fix safety, TF version of the new form, name and title."""
    from migrate_tpu.rule_lookup import rule_rows

    for rule_id, safety, since, name, title in rule_rows(target):
        click.echo(f"{rule_id}  {safety:<6}  TF {since:<4}  {name}: {title}")


@main.command()
@click.argument("rule")
def explain(rule: str) -> None:
    """One rule's documentation with its before/after example; RULE is its id (TPU101) or name (experimental-run-v2)."""
    from migrate_tpu.rule_lookup import find_rule

    found = find_rule(rule)
    if found is None:
        raise click.BadParameter(f"no rule {rule!r} (see `migrate-tpu rules`)", param_hint="RULE")
    click.echo(found.docs())


@main.command(context_settings={"allow_interspersed_args": False})
@click.option("--replicas", type=click.IntRange(min=1), default=None, help="Emulated TPU replicas (default 8).")
@click.option("--tf-api", type=click.Choice(["2.1", "2.2", "2.3", "2.4", "2.1+2.4", "native"]), default=None,
              help="API surface to provide (2.1, 2.2, 2.3: that release's, before migration; 2.1+2.4: both 2.1's and 2.4's names, for partly migrated code; "
                   "native: the interpreter's own, nothing restored or hidden, for `fix --target latest` output).")
@click.option("--python", "python", default=None, metavar="PATH|ENV",
              help="Interpreter to run in: a path, or an env made by `migrate-tpu envs` (tf2.1, tf2.2, tf2.3, tf2.4, tf2.21).")
@click.option("--no-emulation", is_flag=True, help="Use the real TPU; emulate nothing.")
@click.option("--hosts", type=click.IntRange(min=1), default=None,
              help="Emulate a TPU pod of this many hosts, in one program as a pod's client runs it (one input pipeline per host; "
                   "--replicas then counts all hosts' cores; default 8 per host). A script that builds MultiWorkerMirroredStrategy "
                   "itself runs as that many workers on a localhost cluster.")
@click.option("--tpu-env", type=click.Choice(["colab", "node", "none", "vm"]), default=None,
              help="Machine the emulated TPU is attached to: a TPU Node of 2020, where files must be on gs:// and the TPU worker runs no Python: "
                   "colab (TPU_NAME announces it; default), node (TPU_NAME names it) or none (TPUClusterResolver(tpu='') fails as on TF >= 2.2 "
                   "without TPU_NAME); or vm, a TPU VM (local files and Python input work). Also $MIGRATE_TPU_ENVIRONMENT.")
@click.option("--gcs", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Read and write gs://BUCKET/PATH as DIR/BUCKET/PATH (also $MIGRATE_TPU_GCS).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Stop every process after this long (exit status 124).")
@click.option("--verbose", is_flag=True,
              help="Show TensorFlow's start-up logs and the emulation's own frames in tracebacks, and every moved API the run called.")
@click.option("--api-record", type=click.Path(dir_okay=False, writable=True), default=None, metavar="FILE",
              help="Write the record of the moved APIs the run called (each place, its rule, count and owner) to FILE as JSON.")
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(replicas, tf_api, python, no_emulation, hosts, tpu_env, gcs, timeout, verbose, api_record, script, args) -> None:
    """Execute a script or notebook under the runtime's TPU emulation.

    run's own options go before SCRIPT; everything after it is the script's, as with
    `python SCRIPT ARGS...`.
    """
    from migrate_tpu.runtime.process.launch import launch

    if gcs:  # the run's processes read it (runtime/tpu/tpu_machine.py), however launch starts them
        os.environ["MIGRATE_TPU_GCS"] = os.path.abspath(gcs)
    status = launch(script, list(args), replicas=replicas, tf_api=tf_api, python=python, emulation=not no_emulation, hosts=hosts,
                    timeout=timeout, tpu_env=tpu_env, verbose=verbose, api_record=os.path.abspath(api_record) if api_record else None)
    moved, rest = _run_options_in(list(args), click.get_current_context().command)
    if status != 0 and moved:
        # The script got them; most likely they were meant for run (`run train.py --python tf2.4`).
        names = [token for token in moved if token.startswith("-")]
        click.echo(
            f"migrate-tpu run: note: {', '.join(name.split('=', 1)[0] for name in names)} came after the script, "
            f"so the script got {'it' if len(names) == 1 else 'them'}; run's own options go before the script: "
            f"migrate-tpu run {' '.join(shlex.quote(token) for token in [*moved, script, *rest])}",
            err=True,
        )
    sys.exit(status)


def _run_options_in(args: List[str], command: click.Command) -> Tuple[List[str], List[str]]:
    """``args`` split into the options of ``command`` among them (with their values) and the rest."""
    options = {name: parameter for parameter in command.params if isinstance(parameter, click.Option) for name in parameter.opts}
    moved: List[str] = []
    rest: List[str] = []
    tokens = iter(args)
    for token in tokens:
        name, has_value, _ = token.partition("=")
        option = options.get(name)
        if option is None:
            rest.append(token)
            continue
        moved.append(token)
        if not option.is_flag and not has_value:
            value = next(tokens, None)
            if value is not None:
                moved.append(value)
    return moved, rest


@main.command(context_settings={"allow_interspersed_args": False})
@click.option("--after", "after", type=click.Path(exists=True), default=None, metavar="FILE",
              help="Compare against this version (migrated by hand or by an earlier fix) instead of fix's.")
@click.option("--entry", default=None, metavar="FILE", help="TARGET is a folder: migrate the whole tree (in a copy) and run this entry point of it.")
@click.option("--steps", type=click.IntRange(min=1), default=None, metavar="N",
              help="Stop both runs after step N (a step: one outermost run call, or tf.function containing one, or Keras execution).")
@click.option("--python", "python", default=None, metavar="PATH|ENV", help="Interpreter of the migrated program (and of the original without --before-python).")
@click.option("--before-python", default=None, metavar="PATH|ENV", help="Interpreter of the original (e.g. tf2.1).")
@click.option("--before-api", type=click.Choice(["2.1", "2.2", "2.3", "auto"]), default="auto", show_default=True,
              help="The API surface the original was written for; auto: the oldest one under which it does not stop for a missing name.")
@click.option("--after-api", type=click.Choice(["2.4", "native"]), default="2.4", show_default=True,
              help="The API surface the migration runs under; native: the interpreter's own, as it is (a `--target latest` migration on TF 2.21).")
@click.option("--rtol", type=click.FloatRange(min=0), default=None, help=f"Relative tolerance (default 0 with one interpreter, {1e-5:g} with two).")
@click.option("--atol", type=click.FloatRange(min=0), default=None, help=f"Absolute tolerance (default 0 with one interpreter, {1e-6:g} with two).")
@click.option("--replicas", type=click.IntRange(min=1), default=None, help="Emulated TPU replicas (default 8).")
@click.option("--hosts", type=click.IntRange(min=1), default=None, help="Emulate a pod of this many hosts (as for run).")
@click.option("--tpu-env", type=click.Choice(["colab", "node", "none", "vm"]), default=None, help="Machine the emulated TPU is attached to (as for run).")
@click.option("--gcs", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Read gs://BUCKET/PATH as DIR/BUCKET/PATH (as for run; also $MIGRATE_TPU_GCS); each run works in a copy of DIR of its own.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS", help="Stop each run after this long (verdict error).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of Python random, NumPy and TensorFlow in both runs.")
@click.option("--no-blame", is_flag=True, help="On a divergence or retrace, do not look for the change to blame (a few short runs).")
@click.option("--power", is_flag=True,
              help="Also measure what an exact `same` could have caught: one more run, with every learning rate scaled by 1.1, must diverge "
                   "(a `same` within a tolerance always measures it).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, metavar="N",
              help="Runs at once: 2 (the default where two CPUs and 4 GiB of memory are free) runs the original beside its migration, "
                   "and blame's first two runs together; 1 runs each after the other. The verdict is the same either way.")
@click.option("--format", "output_format", type=click.Choice(["text", "json", "markdown", "github"]), default="text", help="Report format.")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False, writable=True), default=None, help="Write the report here instead of stdout.")
@click.option("--target", type=click.Choice(TARGETS), default=None, help="As for fix.")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None, help="As for fix.")
@click.option("--select", multiple=True, metavar="IDS", help="As for fix.")
@click.option("--ignore", multiple=True, metavar="IDS", help="As for fix.")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None, help="As for fix.")
@click.option("--isolated", is_flag=True, help="As for fix.")
@click.argument("target_path", metavar="SCRIPT|NOTEBOOK|FOLDER", type=click.Path(exists=True))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def verify(after, entry, steps, python, before_python, before_api, after_api, rtol, atol, replicas, hosts, tpu_env, gcs, timeout, seed, no_blame, power,
           jobs, output_format, output_file, target, unsafe_fixes, select, ignore, config_file, isolated, target_path, args) -> None:
    """Run the original (TF 2.1 surface) and its migration (TF 2.4 surface) and compare what they compute, step by step.

    The migrated version is what `fix` makes, written to a temporary copy: your files are
    never written. Exit status: 0 same, 1 diverged or retraced, 2 error, 3 inconclusive (the
    values agree, but the comparison could not have caught a mistake). Arguments after
    the script (or after --) are the script's. See docs/verify.md.
    """
    from migrate_tpu import verify as verifying

    args = list(args)
    if args[:1] == ["--"]:
        args = args[1:]
    if gcs:  # each run's bucket is a copy of it (verify/runs/running.py), as for run however it is started
        os.environ["MIGRATE_TPU_GCS"] = os.path.abspath(gcs)
    fix_options = {"target": target, "unsafe_fixes": unsafe_fixes, "select": _split_ids(select), "ignore": _split_ids(ignore),
                   "config_file": config_file, "isolated": isolated}
    label = os.path.join(target_path, entry) if entry else target_path
    try:
        options = verifying.VerifyOptions(entry=entry, after=after, steps=steps, python=python, before_python=before_python, rtol=rtol,
                                          atol=atol, replicas=replicas, hosts=hosts, tpu_env=tpu_env, timeout=timeout, seed=seed,
                                          fix_options=fix_options, find_blame=not no_blame, before_api=before_api,
                                          after_api=after_api, power=power, jobs=jobs)
        verdict = verifying.verify(target_path, args, options)
    except verifying.VerifyError as error:
        if output_format != "json":
            fail(str(error))
        verdict = verifying.Verdict(verifying.ERROR, error=str(error))  # JSON is always JSON
    except KeyboardInterrupt:
        # both runs are stopped by then (each run's launcher stops its processes); one line, no traceback
        click.echo("migrate-tpu verify: interrupted; both runs stopped", err=True)
        sys.exit(130)
    _write_output(output_file, verifying.report(verdict, output_format, label).encode("utf-8"))
    sys.exit(verdict.exit_status)


def _split_ids(values) -> Tuple[str, ...]:
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
def envs(arguments) -> None:
    """Build (once) the TensorFlow interpreters for `run --python`: tf2.1, tf2.2, tf2.3, tf2.4, tf2.21.

    ARGUMENTS: env names (default: all three), `--check` to only report what exists,
    `--strict` to fail when one cannot be built, `--help` for the builder's own help.
    They take about 3.6 GB under ~/.cache/migrate-tpu/envs (MIGRATE_TPU_ENVS moves them).
    """
    import migrate_tpu.runtime.process.envs as tf_envs

    sys.exit(tf_envs.build(arguments))


if __name__ == "__main__":  # pragma: no cover
    main()
