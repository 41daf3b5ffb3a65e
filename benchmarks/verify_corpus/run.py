"""Runs `migrate-tpu verify` on the corpus of real programs, on each interpreter, and reports.

For each program of manifest.json (built by fetch.py into the corpus folder) and each
configuration:

    tf2.4         --python tf2.4                       (one interpreter: exact)
    tf2.21        --python tf2.21                      (one interpreter: exact)
    tf2.1-tf2.4   --before-python tf2.1 --python tf2.4  (two releases: the control run)

it verifies, one at a time (never in parallel: each run is a TensorFlow program):

    fix       the program, migrated by verify itself (what `migrate-tpu fix` makes)
    human     --after the repository's own migration, where it made one
    planted   --after each planted mistake (a migration with one wrong change)

with `--format json --steps N` (N from the manifest) and the program's own options and
arguments. Each verify runs under a small wrapper process that reports the peak resident
memory of its largest process (getrusage RUSAGE_CHILDREN: verify, its TensorFlow runs and
their children). Each case is judged against what it should give: a right migration
`same` (anything else is a false alarm, unless the manifest says why it should differ),
a planted mistake `diverged` or `retraced` (anything else is a miss), at the step the
manifest names when it names one.

Writes <out>/results.json (every case, with the verify report's key fields; re-running
with --resume skips the cases already there), <out>/reports/*.json (verify's own JSON),
and <out>/results.md (the tables of docs/real-code-verify.md). Exit status 1 when a case
is a false alarm, a miss or a crash of verify. Usage:

    python benchmarks/verify_corpus/run.py [--configs tf2.4,tf2.1-tf2.4,tf2.21]
        [--only ID,...] [--cases fix,human,planted] [--out DIR] [--resume] [--timeout S]
        [--no-blame]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
from fetch import DEFAULT_CORPUS, MANIFEST  # noqa: E402

CONFIGS = {
    "tf2.4": ["--python", "tf2.4"],
    "tf2.1-tf2.4": ["--before-python", "tf2.1", "--python", "tf2.4"],
    "tf2.21": ["--python", "tf2.21"],
}
DEFAULT_OUT = Path(os.environ.get("MIGRATE_TPU_VERIFY_CORPUS_OUT",
                                  Path.home() / ".cache" / "migrate-tpu" / "verify-corpus-results"))

# Runs the command given after it and prints, as its last line of stderr, the JSON of the
# peak RSS of its largest descendant (ru_maxrss of RUSAGE_CHILDREN, KiB on Linux) and the
# seconds it took. A process of its own, so that the figure is this command's alone.
WRAPPER = r"""
import json, resource, subprocess, sys, time
started = time.monotonic()
done = subprocess.run(sys.argv[1:])
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stderr.write("\n" + json.dumps({"returncode": done.returncode, "seconds": time.monotonic() - started,
                                    "maxrss_kib": usage.ru_maxrss, "cpu_seconds": usage.ru_utime + usage.ru_stime}) + "\n")
sys.exit(done.returncode)
"""


def cases_of(program, record, wanted):
    """(case name, --after path or None, what it should give) of one program."""
    expect = program.get("expect", {})
    if "fix" in wanted:
        yield "fix", None, {"verdict": expect.get("fix", "same"), "why": expect.get("fix_why")}
    human = program.get("human")
    if human and "human" in wanted:
        yield "human", record["variants"]["human"], {"verdict": human.get("expect", "same"), "why": human.get("expect_why")}
    if "planted" in wanted:
        for planted in program.get("planted", []):
            yield f"planted:{planted['id']}", record["variants"][f"planted-{planted['id']}"], dict(planted["expect"], planted=True)


def command(cli, program, record, config, after, options):
    argv = list(cli) + ["verify", "--format", "json", "--steps", str(program["steps"])] + CONFIGS[config]
    argv += program.get("verify_args", [])
    timeout = program.get("timeout", options.timeout)
    if timeout:
        argv += ["--timeout", str(timeout)]
    if options.no_blame:
        argv += ["--no-blame"]
    if after:
        argv += ["--after", after]
    before = record["variants"]["before"]
    if record["folder"]:
        argv += ["--entry", record["entry"], before]
    else:
        argv += [before]
    if program.get("args"):
        argv += ["--"] + program["args"]
    return argv


def judge(expect, config, report, program):
    """How a case came out, with why:

    ok             the verdict expected (a right migration `same`, a planted mistake caught at its step)
    false alarm    a right migration `diverged` or `retraced`
    miss           a planted mistake verified `same` or `not exercised`, or caught as something else
    wrong step     a planted mistake caught at another step than the one where it shows
    not exercised  a right migration none of whose changes ran in the compared steps
    error          verify could not verify a program it should (verdict `error`)
    n/a            verdict `error` where the original cannot run at all (expect_by_config: a
                   program of TF 2.2/2.3 against real TF 2.1.0)
    crash          verify printed no JSON
    """
    if report is None:
        return "crash", "verify printed no JSON"
    verdict = report.get("verdict")
    cannot_run = program.get("expect_by_config", {}).get(config)
    if cannot_run and cannot_run.get("verdict") == "error":
        if verdict == "error":
            return "n/a", cannot_run.get("why", "")
        return "unexpected", f"expected error ({cannot_run.get('why', '')}), got {verdict}"
    if expect.get("planted"):
        if verdict in ("diverged", "retraced"):
            if expect["verdict"] != verdict:
                return "miss", f"expected {expect['verdict']}, got {verdict}"
            step = expect.get("step")
            found = (report.get("first_divergence") or {}).get("step")
            if step is not None and verdict == "diverged" and found != step:
                return "wrong step", f"expected step {step}, got {found}"
            return "ok", ""
        if verdict == "error":
            return "error", (report.get("error") or "")[:300]
        return "miss", f"planted mistake verified {verdict}"
    if verdict == expect["verdict"]:
        return "ok", expect.get("why") or ""
    if verdict == "not exercised":
        return "not exercised", "none of the migration's changes ran in the compared steps"
    if verdict == "error":
        return "error", (report.get("error") or "")[:300]
    if expect["verdict"] == "same":
        return "false alarm", f"expected same, got {verdict}"
    return "miss", f"expected {expect['verdict']} ({expect.get('why') or ''}), got {verdict}"


def summary(report):
    """The fields of a verify JSON report that the results keep."""
    if report is None:
        return {}
    keep = {key: report.get(key) for key in ("verdict", "steps", "first_divergence", "retraced", "notes", "error", "advice",
                                            "before_api", "before_api_reason",
                                            "variables_compared", "variables_only_in", "replicas", "hosts", "coverage")}
    for side in ("before", "after", "control"):
        if isinstance(report.get(side), dict):
            keep[side] = {k: report[side].get(k) for k in ("exit_status", "seconds", "steps", "tensorflow", "exception")}
    if report.get("blame"):
        keep["blame"] = {k: report["blame"].get(k) for k in ("changes", "rules", "runs", "seconds")}
    if report.get("release_drift"):
        keep["release_drift"] = report["release_drift"]
    return keep


def report_name(program_id, case, config):
    return f"{program_id}--{case.replace(':', '-')}--{config}"


def rejudge(results, programs, index, reports_dir):
    """The results judged again against the manifest as it is now (its expectations may have
    been corrected since a case ran); cases of programs or plants no longer there are dropped."""
    by_id = {p["id"]: p for p in programs}
    kept = []
    for result in results:
        program = by_id.get(result["program"])
        record = index.get(result["program"])
        if program is None or record is None:
            continue
        expects = {case: expect for case, _, expect in cases_of(program, record, {"fix", "human", "planted"})}
        if result["case"] not in expects:
            continue
        path = reports_dir / (report_name(result["program"], result["case"], result["config"]) + ".json")
        try:
            report = json.loads(path.read_text())
            report = report if "verdict" in report else None
        except (OSError, ValueError):
            report = None
        result["expected"] = expects[result["case"]]
        result["judged"], result["why"] = judge(result["expected"], result["config"], report, program)
        kept.append(result)
    return kept


def run_case(argv, cwd, env, reports_dir, name):
    wrapped = [sys.executable, "-c", WRAPPER] + argv
    started = time.monotonic()
    done = subprocess.run(wrapped, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - started
    usage = {}
    for line in reversed(done.stderr.strip().splitlines()):
        if line.startswith("{") and "maxrss_kib" in line:
            usage = json.loads(line)
            break
    report = None
    try:
        report = json.loads(done.stdout)
    except ValueError:
        pass
    (reports_dir / f"{name}.json").write_text(done.stdout if report is not None else json.dumps({"stdout": done.stdout}))
    (reports_dir / f"{name}.stderr").write_text(done.stderr[-20000:])
    return report, {"exit": done.returncode, "seconds": round(usage.get("seconds", seconds), 1),
                    "peak_rss_mb": round(usage.get("maxrss_kib", 0) / 1024), "cpu_seconds": round(usage.get("cpu_seconds", 0), 1)}


def markdown(results, programs):
    order = [p["id"] for p in programs]
    configs = [c for c in CONFIGS if any(r["config"] == c for r in results)]
    by = {(r["program"], r["case"], r["config"]): r for r in results}
    lines = ["| program | case | " + " | ".join(configs) + " |", "| --- | --- | " + " | ".join("---" for _ in configs) + " |"]
    for ident in order:
        cases = []
        for r in results:
            if r["program"] == ident and r["case"] not in cases:
                cases.append(r["case"])
        for case in cases:
            cells = []
            for config in configs:
                r = by.get((ident, case, config))
                if r is None:
                    cells.append("")
                    continue
                verdict = r.get("verdict") or "?"
                step = (r.get("report") or {}).get("first_divergence") or {}
                if verdict == "diverged" and step.get("step") is not None:
                    verdict += f" @{step['step']}"
                mark = "" if r["judged"] == "ok" else f" **{r['judged']}**"
                cells.append(f"{verdict}{mark}, {r['seconds']:.0f} s, {r['peak_rss_mb']} MB")
            lines.append(f"| {ident} | {case} | " + " | ".join(cells) + " |")
    totals = {}
    for r in results:
        totals.setdefault(r["config"], [0, 0.0, 0])
        totals[r["config"]][0] += 1
        totals[r["config"]][1] += r["seconds"]
        totals[r["config"]][2] = max(totals[r["config"]][2], r["peak_rss_mb"])
    lines.append("")
    lines.append("| configuration | cases | seconds | largest peak RSS | ok | false alarms | misses | other |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for config in configs:
        mine = [r for r in results if r["config"] == config]
        count = {j: sum(1 for r in mine if r["judged"] == j) for j in ("ok", "false alarm", "miss")}
        other = sorted({r["judged"] for r in mine} - {"ok", "false alarm", "miss"})
        other_text = ", ".join(f"{sum(1 for r in mine if r['judged'] == o)} {o}" for o in other)
        n, seconds, peak = totals[config]
        lines.append(f"| {config} | {n} | {seconds:.0f} | {peak} MB | {count['ok']} | {count['false alarm']} | {count['miss']} | {other_text} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="tf2.4,tf2.1-tf2.4,tf2.21")
    parser.add_argument("--only", help="comma-separated program ids")
    parser.add_argument("--cases", default="fix,human,planted")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--resume", action="store_true", help="keep the cases already in results.json")
    parser.add_argument("--timeout", type=float, default=600, help="verify's --timeout for each run (seconds)")
    parser.add_argument("--no-blame", action="store_true", help="pass --no-blame (faster; no change to blame)")
    parser.add_argument("--cli", default=str(REPO / ".venv" / "bin" / "migrate-tpu"),
                        help="the migrate-tpu command (a shell-quoted command line, e.g. 'python -m migrate_tpu')")
    options = parser.parse_args()
    programs = json.loads(MANIFEST.read_text())["programs"]
    index_path = options.corpus / "index.json"
    if not index_path.exists():
        sys.exit(f"no corpus in {options.corpus}: run benchmarks/verify_corpus/fetch.py first")
    index = json.loads(index_path.read_text())
    if options.only:
        wanted_ids = set(options.only.split(","))
        programs_run = [p for p in programs if p["id"] in wanted_ids]
    else:
        programs_run = programs
    reports_dir = options.out / "reports"
    reports_dir.mkdir(parents=True, exist_ok=True)
    results_path = options.out / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else []
    results = rejudge(results, programs, index, reports_dir)
    wanted_cases = set(options.cases.split(","))
    configs = options.configs.split(",")
    started = time.monotonic()
    for config in configs:
        for program in programs_run:
            record = index.get(program["id"])
            if record is None:
                print(f"{program['id']}: not in the corpus (fetch.py)", file=sys.stderr)
                continue
            for case, after, expect in cases_of(program, record, wanted_cases):
                key = (program["id"], case, config)
                done_before = [r for r in results if (r["program"], r["case"], r["config"]) == key]
                if options.resume and done_before:
                    continue
                results = [r for r in results if (r["program"], r["case"], r["config"]) != key]
                argv = command(shlex.split(options.cli), program, record, config, after, options)
                folder = Path(record["variants"]["before"])
                # The program's own folder when it names one (verify's runs then start in its copy), else
                # the program's corpus folder, outside what verify copies: the runs start beside the script.
                cwd = str(folder) if program.get("cwd") else str(folder.parent if record["folder"] else folder.parent.parent)
                env = dict(os.environ)
                for key, value in program.get("env", {}).items():  # prepended to what the environment has
                    env[key] = os.pathsep.join(v for v in (value, os.environ.get(key)) if v)
                if program.get("gcs"):  # the program's gs:// paths, on a folder of this corpus run
                    env["MIGRATE_TPU_GCS"] = str((options.out / "gcs" / program["id"]).resolve())
                name = report_name(program["id"], case, config)
                report, usage = run_case(argv, cwd, env, reports_dir, name)
                judged, why = judge(expect, config, report, program)
                result = {"program": program["id"], "case": case, "config": config, "judged": judged, "why": why,
                          "verdict": (report or {}).get("verdict"), "expected": expect,
                          "command": " ".join(argv), "cwd": cwd, "env": program.get("env", {}),
                          "report": summary(report), **usage}
                results.append(result)
                results_path.write_text(json.dumps(results, indent=1) + "\n")
                print(f"{config:12} {program['id']:36} {case:32} {str(result['verdict']):14} {judged:14} "
                      f"{usage['seconds']:6.0f} s {usage['peak_rss_mb']:6} MB {why}", flush=True)
    (options.out / "results.md").write_text(markdown(results, programs))
    seconds = time.monotonic() - started
    log = {"cli": options.cli, "PYTHONPATH": os.environ.get("PYTHONPATH"), "configs": configs, "cases": sorted(wanted_cases),
           "programs": [p["id"] for p in programs_run], "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "seconds": round(seconds)}
    with open(options.out / "runs.jsonl", "a") as runs:
        runs.write(json.dumps(log) + "\n")
    print(f"{seconds:.0f} s; results in {options.out}")
    bad = [r for r in results if r["judged"] not in ("ok", "n/a")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
