"""Benchmarks for migrate-tpu: ratios against baselines, measured in one run.

Targets (see benchmarks/README.md):
- no-TPU tree (CPython's stdlib): `migrate-tpu diff` within 3x a plain read+regex loop;
- all-TF tree (generated TF 2.1 files): `migrate-tpu diff` within 1.0x one process doing
  a bare `libcst.parse_module(...).code` over the same files;
- startup: `migrate-tpu --version` under 0.2 s;
- memory: peak RSS of any process under 300 MB on the all-TF tree;
- warm re-run with the cache near the no-TPU floor (when the cache exists);
- tf_upgrade_v2 on the all-TF tree, for comparison (when TF 2.21's env exists).

Usage: python benchmarks/run.py [--files N] [--keep DIR]
Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate import tf21_tree  # noqa: E402


def timed(command, cwd=None, env=None):
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    return elapsed, result


def peak_child_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0


def baseline_regex(root: Path) -> float:
    code = (
        "import re, sys, pathlib\n"
        "pattern = re.compile(rb'experimental_run_v2')\n"
        "hits = 0\n"
        "for p in pathlib.Path(sys.argv[1]).rglob('*.py'):\n"
        "    hits += pattern.search(p.read_bytes()) is not None\n"
    )
    return timed([sys.executable, "-c", code, str(root)])[0]


def baseline_parse(root: Path) -> float:
    code = (
        "import sys, pathlib, libcst\n"
        "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.py')):\n"
        "    libcst.parse_module(p.read_bytes()).code\n"
    )
    return timed([sys.executable, "-c", code, str(root)])[0]


def stdlib_copy(target: Path) -> Path:
    source = Path(sysconfig.get_paths()["stdlib"])
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("site-packages", "__pycache__", "*.pyc"), symlinks=True)
    return target


def tool(args, cwd):
    return timed([sys.executable, "-m", "migrate_tpu", *args], cwd=cwd)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--keep", type=Path, default=None)
    options = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="migrate-tpu-bench-")) if options.keep is None else options.keep
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    failures = []

    def record(name, value, unit, target=None, ok=None):
        rows.append((name, value, unit, target))
        if ok is False:
            failures.append(name)

    # Startup.
    startups = [tool(["--version"], work)[0] for _ in range(5)]
    startup = min(startups)
    record("startup `--version` (best of 5)", startup, "s", "< 0.2 s", startup < 0.2)

    # No-TPU tree.
    stdlib = work / "stdlib"
    if not stdlib.exists():
        stdlib_copy(stdlib)
    files = sum(1 for _ in stdlib.rglob("*.py"))
    floor = min(baseline_regex(stdlib) for _ in range(3))
    no_cache = ["--no-cache"] if b"--no-cache" in tool(["diff", "--help"], work)[1].stdout else []
    cold, result = tool(["diff", "stdlib", "--no-gitignore", *no_cache], work)
    if result.returncode == 2:
        print(result.stderr.decode()[-2000:])
    ratio = cold / floor
    record(f"no-TPU tree ({files} files): read+regex loop", floor, "s")
    record("no-TPU tree: migrate-tpu diff", cold, "s")
    record("no-TPU tree: ratio", ratio, "x", "<= 3.0", ratio <= 3.0)

    # All-TF tree.
    tftree = work / "tf21"
    if not tftree.exists():
        tf21_tree(tftree, files=options.files)
    bare = baseline_parse(tftree)
    before = peak_child_rss_mb()
    full, result = tool(["diff", "tf21", *no_cache], work)
    rss = peak_child_rss_mb()
    assert result.returncode == 1, result.stderr.decode()[-2000:]
    changed = result.stdout.count(b"\n+++ b/") + result.stdout.startswith(b"+++ b/")
    ratio_tf = full / bare
    record(f"all-TF tree ({options.files} files): bare libcst parse+code, 1 process", bare, "s")
    record("all-TF tree: migrate-tpu diff (default jobs)", full, "s")
    record("all-TF tree: ratio", ratio_tf, "x", "<= 1.0", ratio_tf <= 1.0)
    record("all-TF tree: files shown changed", changed, "files")
    record("peak RSS of any process", rss, "MB", "< 300 MB", rss < 300)

    # Scaling within one file: 4x the code should take about 4x the time.
    unit = (
        "import tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy(resolver)\n"
        "step = tf.function(lambda v: v * 2)\nout = strategy.experimental_run_v2(step, args=(x,))\n"
    )
    code = (
        "import sys, time\nfrom migrate_tpu.codemod.api import migrate\n"
        "source = sys.stdin.read()\nstart = time.perf_counter(); migrate(source); print(time.perf_counter() - start)\n"
    )
    small = float(subprocess.run([sys.executable, "-c", code], input=(unit * 250).encode(), capture_output=True, check=True).stdout)
    large = float(subprocess.run([sys.executable, "-c", code], input=(unit * 1000).encode(), capture_output=True, check=True).stdout)
    growth = large / small
    record("one file: 4x the code (1,000 vs 250 blocks), time ratio", growth, "x", "<= 6 (linear: 4)", growth <= 6.0)

    # Warm re-run through the cache, when the tool has one.
    if no_cache:
        tool(["diff", "tf21"], work)
        warm, _ = tool(["diff", "tf21"], work)
        record("all-TF tree: warm re-run (cache)", warm, "s")
        record("warm re-run / no-TPU floor per file", (warm / options.files) / (floor / files), "x")

    # tf_upgrade_v2 on the same tree, when TF 2.21's environment exists.
    envs = Path(os.environ.get("MIGRATE_TPU_ENVS", Path.home() / ".cache/migrate-tpu/envs"))
    upgrader = envs / "tf2.21" / "bin" / "tf_upgrade_v2"
    if upgrader.exists():
        out = work / "tf21-upgraded"
        shutil.rmtree(out, ignore_errors=True)
        upgrade, result = timed([str(upgrader), "--intree", str(tftree), "--outtree", str(out), "--reportfile", str(work / "report.txt")])
        record("tf_upgrade_v2 on the all-TF tree", upgrade, "s")
        record("tf_upgrade_v2 / migrate-tpu diff", upgrade / full, "x")
    else:
        record("tf_upgrade_v2", float("nan"), "(TF 2.21 env absent: run scripts/tf-envs)")

    width = max(len(r[0]) for r in rows)
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    for name, value, unit, target in rows:
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        print(f"{name:<{width}}  {shown:>9} {unit:<6} {('target ' + target) if target else ''}")
    if failures:
        print("MISSED:", ", ".join(failures))
        return 1
    print("all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
