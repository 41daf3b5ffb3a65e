"""Runs the corpus of real Cloud TPU programs under `migrate-tpu run`, with a control for each failure.

For each program built by fetch.py (index.json of the corpus folder) and each configuration

    tf2.4    migrate-tpu run --python tf2.4
    tf2.21   migrate-tpu run --python tf2.21
    tf2.1    migrate-tpu run --python tf2.1 --tf-api 2.1      (only programs of era "2.1")

it runs, one at a time, `migrate-tpu run --timeout T [--gcs DIR] CONFIG PROGRAM` in a fresh
work folder (a copy of the built program, and of its synthetic bucket folder, so that what
a run writes is its own) and records the exit status, the seconds and the last lines of the
output. A program's "tf_api" is added to its tf2.4 run; its "timeout" replaces --timeout.

For each run that fails, it runs a CONTROL: the same program on the same interpreter with no
emulation at all, the interpreter's own TensorFlow with its CPU split into 8 logical devices
and the program's TPU set-up given a plain `tf.distribute.MirroredStrategy` on them (the
prelude control/sitecustomize.py, first on PYTHONPATH); gs:// paths in the program's text
and arguments are rewritten to the copy of its bucket folder, a notebook's code cells are run as a script
(IPython magics and shell lines left out). Each run is judged:

    runs            exit status 0
    interpreter's   a failure that the control gives too, the same exception (the
                    interpreter, or the program on it, cannot do it: not the emulation's doing)
    false refusal   a failure that the control does not give (it runs, or fails otherwise)
    hang            the run stopped at its timeout (exit status 124)
    real TPU's      a failure that the program's "tpu_failures" names (its `match` is in the
                    last lines): a real Cloud TPU fails so too, as the entry's `url` shows;
                    no control is run

Writes <out>/results.json (the runs of a later call replace the same program's and
configuration's, the others are kept; --resume skips the runs already there, --fresh starts anew) and
<out>/results.md (a table of programs x configurations, then each failure's last lines).
Exit status 1 when a run is a false refusal or a hang (or a failure whose control did not finish). Usage:

    python benchmarks/tpu_corpus/run.py [--configs tf2.4,tf2.21,tf2.1] [--only ID,...]
        [--out DIR] [--corpus DIR] [--timeout S] [--resume | --fresh] [--no-control]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
from fetch import DEFAULT_CORPUS, load_programs  # noqa: E402

CONFIGS = {
    "tf2.4": ["--python", "tf2.4"],
    "tf2.21": ["--python", "tf2.21"],
    "tf2.1": ["--python", "tf2.1", "--tf-api", "2.1"],
}
ENV_OF = {"tf2.4": "tf2.4", "tf2.21": "tf2.21", "tf2.1": "tf2.1"}
DEFAULT_OUT = Path(os.environ.get("MIGRATE_TPU_TPU_CORPUS_OUT",
                                  Path.home() / ".cache" / "migrate-tpu" / "tpu-corpus-results"))
CONTROL_PRELUDE = HERE / "control"
TAIL_LINES = 15
VERDICTS = ["runs", "false refusal", "interpreter's", "real TPU's", "hang"]
HANG = 124


def applies(program, config):
    return config != "tf2.1" or program.get("era") == "2.1"


def interpreter(name):
    sys.path.insert(0, str(REPO))
    try:
        from migrate_tpu.runtime.process import envs
        return envs.interpreter(name)
    finally:
        sys.path.remove(str(REPO))


def run_process(argv, cwd, env, timeout):
    """(exit status, seconds, output): the command in its own process group, stopped (124)
    after `timeout` seconds."""
    started = time.monotonic()
    process = subprocess.Popen(argv, cwd=str(cwd), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        status = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        status = HANG
    return status, time.monotonic() - started, output.decode("utf-8", "replace")


def tail(output, lines=TAIL_LINES):
    # a progress bar rewrites its line with \r: keep what the terminal would show last
    shown = [line.rsplit("\r", 1)[-1] for line in output.splitlines()]
    return [line[:400] for line in shown if line.strip()][-lines:]


def without_notes(lines):
    """The lines without the notes `migrate-tpu run` prints at the end (`migrate-tpu run: ...`
    and the indented lines under it)."""
    lines = list(lines)
    while True:
        notes = [i for i, line in enumerate(lines) if line.startswith("migrate-tpu run: ")
                 and all(rest.startswith(" ") for rest in lines[i + 1:])]
        if not notes:
            return lines
        lines = lines[:notes[-1]]


ERROR_LINE = re.compile(r"^\s*(?:[\w.]+\.)?(\w+(?:Error|Exception|Exit|Interrupt))\b")
STATUS_LINE = re.compile(r"^\s*(?:\(\d+\)\s+)?([A-Z][A-Z_]+):\s")  # "(7) INVALID_ARGUMENT: ..." of a TF status


def last_error(lines):
    """The line that names the error: the last one that looks like `SomethingError: ...`."""
    lines = without_notes(lines)
    for line in reversed(lines):
        if ERROR_LINE.match(line) or re.match(r"^migrate-tpu run: .*(?:refus|cannot)", line):
            return line.strip()
    for line in reversed(lines):
        if STATUS_LINE.match(line):
            return line.strip()
    return lines[-1].strip() if lines else ""


def workdir(out, record, program, config, kind):
    """A fresh copy of the built program (and of its bucket folder) to run in."""
    folder = out / "work" / program["id"] / f"{config}-{kind}"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(record["program_dir"], folder / "program")
    gcs = None
    if record.get("gcs"):
        gcs = folder / "gcs"
        shutil.copytree(record["gcs"], gcs)
    entry = folder / "program" / Path(record["entry"]).relative_to(record["program_dir"])
    return folder, entry, gcs


def emulated(cli, program, record, config, options):
    timeout = program.get("timeout", options.timeout)
    folder, entry, gcs = workdir(options.out, record, program, config, "emulated")
    argv = list(cli) + ["run", "--timeout", str(timeout)] + CONFIGS[config]
    if config == "tf2.4" and program.get("tf_api"):
        argv += ["--tf-api", program["tf_api"]]
    if gcs:
        argv += ["--gcs", str(gcs)]
    argv += program.get("run_args", []) + [str(entry)] + program.get("args", [])
    status, seconds, output = run_process(argv, entry.parent, dict(os.environ), timeout + 120)
    return {"status": status, "seconds": round(seconds, 1), "tail": tail(output), "error": last_error(tail(output, 10 ** 6)),
            "command": " ".join(shlex.quote(a) for a in argv)}


#: A line that captures a shell command's or magic's output (`x = !cmd`, `x = %magic`).
SHELL_CAPTURE = re.compile(r"^(\s*[\w.]+(?:\s*,\s*[\w.]+)*)\s*=\s*[!%]")


def notebook_as_script(path: Path) -> str:
    """The code cells of a notebook as one script, magics and shell lines made `pass`."""
    document = json.loads(path.read_text())
    cells = []
    for cell in document.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        lines = []
        for line in source.splitlines():
            stripped = line.lstrip()
            captured = SHELL_CAPTURE.match(line)
            if stripped.startswith(("!", "%")):
                lines.append(line[:len(line) - len(stripped)] + "pass  # tpu-corpus control: " + stripped[:60])
            elif captured:  # `files = !ls ...`: IPython's list of output lines, empty here
                lines.append(captured.group(1) + " = []  # tpu-corpus control: " + stripped[:60])
            else:
                lines.append(line)
        cells.append("\n".join(lines))
    return "\n\n".join(cells) + "\n"


def control(program, record, config, options):
    """The program on the same interpreter, no emulation: MirroredStrategy on 8 logical CPUs."""
    timeout = program.get("timeout", options.timeout)
    python = interpreter(ENV_OF[config])
    if python is None:
        return {"status": None, "seconds": 0, "tail": [f"no interpreter {ENV_OF[config]}"]}
    folder, entry, gcs = workdir(options.out, record, program, config, "control")
    scripts = [entry] if not record.get("folder") else \
        [p for p in (folder / "program").rglob("*") if p.suffix in (".py", ".ipynb")]
    for script in scripts:
        text = notebook_as_script(script) if script.suffix == ".ipynb" else script.read_text()
        if gcs:
            text = text.replace("gs://", str(gcs) + "/")
        target = script.with_suffix(".py")
        target.write_text(text)
    entry = entry.with_suffix(".py")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env.update(PYTHONPATH=str(CONTROL_PRELUDE), TPU_CORPUS_CONTROL="1", MPLBACKEND="Agg")
    args = program.get("args", [])
    if gcs:
        args = [arg.replace("gs://", str(gcs) + "/") for arg in args]
        env["TPU_CORPUS_CONTROL_BUCKET"] = str(gcs)  # a write there makes its folders, as in a bucket
    argv = [python, str(entry)] + args
    status, seconds, output = run_process(argv, entry.parent, env, timeout)
    return {"status": status, "seconds": round(seconds, 1), "tail": tail(output), "error": last_error(tail(output, 10 ** 6)),
            "command": "PYTHONPATH=control TPU_CORPUS_CONTROL=1 " + " ".join(shlex.quote(a) for a in argv)}


def error_kind(result):
    """The exception class of a run's error (`InvalidArgumentError`; a TF status code such as
    `(7) INVALID_ARGUMENT:` counts as its class), else its last line."""
    line = result.get("error") or last_error(result["tail"])
    found = ERROR_LINE.match(line)
    if found:
        return found.group(1)
    found = STATUS_LINE.match(line)
    if found:
        return "".join(word.capitalize() for word in found.group(1).split("_")) + "Error"
    return line


def known_tpu_failure(program, result):
    """The program's `tpu_failures` entry whose `match` is in the run's last lines: a failure
    that a real Cloud TPU gives too (an op XLA cannot compile for the TPU, ...), else None."""
    text = "\n".join(result["tail"])
    for known in program.get("tpu_failures", []):
        if known["match"] in text:
            return known
    return None


def judge(program, result):
    """runs, hang, real TPU's (a failure the program's `tpu_failures` names: a real TPU fails
    so too), interpreter's (the control fails with the same exception class), false refusal
    (the control runs, or fails otherwise: it does not give this failure)."""
    if result["status"] == 0:
        return "runs"
    if result["status"] == HANG:
        return "hang"
    if known_tpu_failure(program, result):
        return "real TPU's"
    checked = result.get("control")
    if checked is None or checked["status"] is None:
        return "fails (no control)"
    if checked["status"] == HANG:
        return "fails (control did not finish)"
    if checked["status"] != 0 and error_kind(checked) == error_kind(result):
        return "interpreter's"
    return "false refusal"


def markdown(results, programs, configs):
    lines = ["# TPU corpus: `migrate-tpu run` on real Cloud TPU programs", "",
             "Each cell: the verdict, the seconds of the emulated run; for a failure, the last line of its error.", "",
             "| program | " + " | ".join(configs) + " |", "| --- |" + " --- |" * len(configs)]
    details = []
    counts = {}
    for program in programs:
        row = []
        for config in configs:
            result = results.get(program["id"], {}).get(config)
            if result is None:
                row.append("n/a" if not applies(program, config) else "not run")
                continue
            verdict = result["verdict"]
            counts[(config, verdict)] = counts.get((config, verdict), 0) + 1
            cell = f"{verdict} ({result['seconds']:.0f} s)"
            if verdict != "runs":
                cell += ": `" + (result.get("error") or last_error(result["tail"])).replace("|", "\\|").replace("`", "'")[:160] + "`"
                details.append((program["id"], config, result))
            row.append(cell)
        lines.append(f"| {program['id']} | " + " | ".join(row) + " |")
    lines += ["", "| configuration | " + " | ".join(VERDICTS + ["other"]) + " |",
              "| --- |" + " ---: |" * (len(VERDICTS) + 1)]
    for config in configs:
        known = [counts.get((config, v), 0) for v in VERDICTS]
        other = sum(n for (c, v), n in counts.items() if c == config) - sum(known)
        lines.append(f"| {config} | " + " | ".join(str(n) for n in known + [other]) + " |")
    for ident, config, result in details:
        lines += ["", f"## {ident} on {config}: {result['verdict']}", "", "```", *result["tail"], "```"]
        checked = result.get("control")
        if checked:
            lines += ["", f"control (no emulation, MirroredStrategy on 8 CPUs): exit {checked['status']}, "
                          f"{checked['seconds']:.0f} s", "", "```", *checked["tail"][-6:], "```"]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="tf2.4,tf2.21,tf2.1")
    parser.add_argument("--only", help="comma-separated program ids")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--timeout", type=int, default=300, help="seconds per run (a program's own 'timeout' wins)")
    parser.add_argument("--resume", action="store_true", help="skip the runs already in results.json")
    parser.add_argument("--fresh", action="store_true", help="start a new results.json")
    parser.add_argument("--no-control", action="store_true", help="run no control for a failure")
    parser.add_argument("--cli", default=str(REPO / ".venv" / "bin" / "migrate-tpu"),
                        help="the migrate-tpu command (a shell-quoted command line)")
    options = parser.parse_args()
    configs = [c for c in options.configs.split(",") if c]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown configuration: {', '.join(unknown)} (known: {', '.join(CONFIGS)})")
    programs = load_programs(set(options.only.split(",")) if options.only else None)
    index_path = options.corpus / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    options.out.mkdir(parents=True, exist_ok=True)
    results_path = options.out / "results.json"
    if options.fresh and results_path.exists():
        results_path.unlink()
    # the runs of other programs and configurations are kept: --only reruns just those it names
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    cli = shlex.split(options.cli)
    for program in programs:
        record = index.get(program["id"])
        if record is None:
            print(f"{program['id']}: not built (run fetch.py)", file=sys.stderr)
            continue
        for config in configs:
            if not applies(program, config) or (options.resume and config in results.get(program["id"], {})):
                continue
            result = emulated(cli, program, record, config, options)
            if result["status"] not in (0, HANG) and not options.no_control and not known_tpu_failure(program, result):
                result["control"] = control(program, record, config, options)
            result["verdict"] = judge(program, result)
            results.setdefault(program["id"], {})[config] = result
            results_path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
            error = "" if result["verdict"] == "runs" else ": " + (result.get("error") or last_error(result["tail"]))
            print(f"{program['id']} {config}: {result['verdict']} ({result['seconds']:.0f} s){error}", flush=True)
    ran = [p for p in load_programs() if p["id"] in results]
    for program in ran:  # judged again with the programs' current `tpu_failures`
        for result in results[program["id"]].values():
            result["verdict"] = judge(program, result)
    results_path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    all_configs = [c for c in CONFIGS if any(c in results[p["id"]] for p in ran)]
    (options.out / "results.md").write_text(markdown(results, ran, all_configs))
    bad = [(i, c) for i, by in results.items() for c, r in by.items()
           if r["verdict"] in ("false refusal", "hang", "fails (control did not finish)")]
    print(f"{sum(len(by) for by in results.values())} runs, {len(bad)} false refusals or hangs; {options.out / 'results.md'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
