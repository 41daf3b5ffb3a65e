"""The run-time record of moved APIs on the verify corpus: what it costs, and whether it agrees
with the codemod.

For each program of the verify corpus (benchmarks/verify_corpus: fetch.py builds it), in a fresh
copy of its folder each time, as verify's runs run it (recorded, seeded, stopped after the
manifest's steps):

* **agreement**: its original under ``--tf-api 2.1+2.4`` (every old name there, none hidden) and
  its migration (``fixed``) under ``--tf-api 2.4``, each with ``--api-record``; every place the
  record names must be a place where ``migrate-tpu check`` reports that rule (the call's rule or
  its catalogue entry's), else it is a false finding.  The migration's record lists only what
  fix left to a person.
* **cost** (``--rounds R``): the original's run with the record on and off
  (``MIGRATE_TPU_MOVED_CALLS=0``), in turn, R times each; the fastest and the median of each,
  and their ratio.  Warm runs (the fork server), so that TensorFlow's start-up does not drown it.

    python benchmarks/moved_calls.py [--python tf2.4] [--only ID,...] [--rounds 3] [--no-cost]

Exit status 1 when a recorded place has no finding (a false finding), or the median run with
the record costs more than 5% over the one without it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE / "verify_corpus"))
from fetch import DEFAULT_CORPUS, MANIFEST  # noqa: E402

# Pods run several processes (each with its record): left out of the timing, as of the agreement.
SKIPPED = {"tfdocs-tpu-guide-pod", "tftpu-autoencoder-embeddings-pod"}
LIMIT = 1.05


def cli():
    return [sys.executable, "-m", "migrate_tpu"]


def copy_of(variant_path: str, record: dict, folder: Path) -> tuple[Path, Path]:
    """A fresh copy of a variant's folder; returns (the program in it, the folder)."""
    source = Path(variant_path)
    root = source if record["folder"] else source.parent
    target = folder / root.name
    shutil.copytree(root, target, symlinks=True)
    program = target / record["entry"] if record["folder"] else target / source.name
    return program, target


def run(program: Path, root: Path, manifest_entry: dict, record: dict, python: str, api: str, moved: bool, out: Path) -> dict:
    """One recorded run, stopped after the manifest's steps; its seconds and its record of moved APIs."""
    env = dict(os.environ, MIGRATE_TPU_RECORD=str(out / "record.json"), MIGRATE_TPU_RECORD_STEPS=str(manifest_entry["steps"]),
               MIGRATE_TPU_SEED="0", PYTHONHASHSEED="0", MIGRATE_TPU_MOVED_CALLS="1" if moved else "0", MPLBACKEND="Agg")
    cwd = root if manifest_entry.get("cwd") or record["folder"] else program.parent
    for key, value in manifest_entry.get("env", {}).items():  # a relative folder is the run's (PYTHONPATH=.)
        env[key] = os.pathsep.join(v for v in (os.path.join(str(cwd), value), os.environ.get(key)) if v)
    argv = cli() + ["run", "--python", python, "--tf-api", api, "--api-record", str(out / "moved.json")]
    argv += [a for a in manifest_entry.get("verify_args", []) if a != "--no-blame"]
    argv += [str(program)] + manifest_entry.get("args", [])
    started = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - started
    moved_record = json.loads((out / "moved.json").read_text()) if (out / "moved.json").exists() else None
    return {"seconds": seconds, "status": done.returncode, "moved": moved_record, "stderr": done.stderr[-2000:]}


def findings(root: Path) -> dict:
    """(file, cell, line) -> the rules `check` reports there."""
    done = subprocess.run(cli() + ["check", "--format", "json", "--no-cache", str(root)], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    found: dict = {}
    for finding in json.loads(done.stdout)["findings"]:
        key = (os.path.realpath(os.path.join(str(root.parent), finding["path"])
                                if not os.path.isabs(finding["path"]) else finding["path"]), finding.get("cell"), finding["line"])
        found.setdefault(key, set()).add(finding["rule"])
    return found


def disagreements(moved: dict, found: dict) -> list:
    """The recorded places without the rule's finding there."""
    wrong = []
    for call in (moved or {}).get("calls", []):
        file, _, cell = call["file"].partition(".ipynb:cell")
        key = (os.path.realpath(file + ".ipynb" if cell else file), int(cell) if cell else None, call["line"])
        if not {call["rule"], call["catalogue_rule"]} & found.get(key, set()):
            wrong.append(f"{call['file']}:{call['line']} {call['rule']} {call['old']} (check there: {sorted(found.get(key, ()))})")
    return wrong


def agreement(entry: dict, record: dict, python: str, work: Path) -> dict:
    result = {}
    for variant, api in (("before", "2.1+2.4"), ("fixed", "2.4")):
        folder = Path(tempfile.mkdtemp(dir=work))
        program, root = copy_of(record["variants"][variant], record, folder)
        found = findings(root)  # before the run, which may write files there
        ran = run(program, root, entry, record, python, api, True, folder)
        calls = (ran["moved"] or {}).get("calls", [])
        result[variant] = {"status": ran["status"], "places": len(calls), "rules": sorted({c["rule"] for c in calls}),
                           "findings": sum(len(v) for v in found.values()), "false": disagreements(ran["moved"], found),
                           "failed": [f"{c['file']}:{c['line']} {c['error']}" for c in calls if c["failed"]]}
    return result


def cost(entry: dict, record: dict, python: str, rounds: int, work: Path) -> dict:
    times = {"on": [], "off": []}
    for _ in range(rounds):
        for arm in ("off", "on"):
            folder = Path(tempfile.mkdtemp(dir=work))
            program, root = copy_of(record["variants"]["before"], record, folder)
            times[arm].append(run(program, root, entry, record, python, "2.1+2.4", arm == "on", folder)["seconds"])
    return {arm: {"fastest": round(min(v), 2), "median": round(statistics.median(v), 2), "all": [round(x, 2) for x in v]}
            for arm, v in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default="tf2.4")
    parser.add_argument("--only", default="")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-cost", action="store_true")
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    options = parser.parse_args()
    manifest = json.loads(MANIFEST.read_text())["programs"]
    index = json.loads((Path(options.corpus) / "index.json").read_text())
    only = {name for name in options.only.split(",") if name}
    work = Path(tempfile.mkdtemp(prefix="migrate-tpu-moved-calls-"))
    failures, on, off = 0, [], []
    try:
        for entry in manifest:
            if entry["id"] in SKIPPED or (only and entry["id"] not in only) or entry["id"] not in index:
                continue
            record = index[entry["id"]]
            agreed = agreement(entry, record, options.python, work)
            line = {"program": entry["id"], **agreed}
            if not options.no_cost:
                line["cost"] = cost(entry, record, options.python, options.rounds, work)
                on.append(line["cost"]["on"]["median"])
                off.append(line["cost"]["off"]["median"])
            failures += sum(len(agreed[v]["false"]) for v in agreed)
            print(json.dumps(line), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if on:
        ratio = sum(on) / sum(off)
        print(f"all programs: record on {sum(on):.1f} s, off {sum(off):.1f} s (sums of medians): {ratio:.3f}x (limit {LIMIT}x)")
        failures += ratio > LIMIT
    print(f"false findings: {failures if not on else failures - (sum(on) / sum(off) > LIMIT)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
