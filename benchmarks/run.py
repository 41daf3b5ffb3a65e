"""Benchmarks for migrate-tpu on real and generated trees, every ratio measured in one run.

Trees (each skipped, with the reason printed, when it cannot be had):
- models:     the Python files of tf-models-official 2.2.2 (TensorFlow's official models,
              a 2020 release: TF 2.1/2.2-era code, some of it TPU code), from
              `pip download --no-deps`, cached outside the repository; `models-2.4.0`
              (any `models-<version>`) is another release of it;
- tensorflow: the Python files of an installed `tensorflow` package (TF 2.21 from
              `scripts/tf-envs` by default): thousands of files and no TF 2.1 API, a test
              of scale and of over-reach;
- stdlib:     CPython's standard library: no TensorFlow at all;
- alltf:      generated TF 2.1 TPU modules (benchmarks/generate.py): every file needs work;
- pypi:<package>==<version>: the Python files of any release on PyPI (its wheel, or its
              source archive), for real repositories held out from tuning.

Per tree: the read+regex floor (one process), a bare `libcst.parse_module(...).code` over
every file at the same process count as the tool, `migrate-tpu diff` cold (no cache) and
warm (second run through the cache), `migrate-tpu check` cold with the files it parsed
versus the files with findings (the prefilter's precision), and the peak RSS of the
tool's process tree. The LibCST limit of a tree is the floor plus a bare parse + code of
just the files with findings (one process): `check -j 1` is compared with it. Then a scaling table (speed-up and efficiency by process count).

Usage:
    python benchmarks/run.py [--trees models,models-2.6.0,pypi:dm-sonnet==2.0.0,tensorflow,stdlib,alltf] [--jobs N]
                             [--scaling 1,2,4,8,16] [--files 300] [--keep DIR]
                             [--tensorflow DIR] [--tf-upgrade]

The cache of downloaded trees is $MIGRATE_TPU_BENCH_CACHE (default
~/.cache/migrate-tpu/bench). Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate import tf21_tree  # noqa: E402

MODELS_RELEASE = "tf-models-official==2.2.2"
ENVS = Path(os.environ.get("MIGRATE_TPU_ENVS", Path.home() / ".cache/migrate-tpu/envs"))
CACHE = Path(os.environ.get("MIGRATE_TPU_BENCH_CACHE", Path.home() / ".cache/migrate-tpu/bench"))


class Run:
    def __init__(self, elapsed: float, cpu: float, returncode: int, stdout: bytes, stderr: bytes, peak_mb: float) -> None:
        self.elapsed = elapsed
        self.cpu = cpu
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.peak_mb = peak_mb


def measure(command: List[str], cwd: Optional[Path] = None) -> Run:
    """Wall time, CPU time and the peak RSS of the command's whole process tree.

    ``wait4`` reports the CPU time of the child and every descendant it waited
    for, and the largest resident set among them (Linux), so worker processes
    are counted. CPU time is the steadier number on a shared machine.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=err, env=_BYTECODE_ENV)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        return Run(elapsed, cpu, process.returncode, out.read(), err.read(), usage.ru_maxrss / 1024.0)


# Every command runs with Python's bytecode cache on, as an installed tool runs: pip compiles
# an installed package's modules, and an editable install writes them on its first import.
# A machine that sets PYTHONDONTWRITEBYTECODE (this project's does) would otherwise charge the
# tool, and not LibCST (compiled by pip), for compiling its 80 modules on every run: 0.1 s CPU
# a run, measured on one file (0.33 s against 0.23 s). ``main`` compiles them first.
_BYTECODE_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def best(command: List[str], repeat: int, cwd: Optional[Path] = None) -> Run:
    runs = [measure(command, cwd) for _ in range(max(1, repeat))]
    return min(runs, key=lambda run: run.elapsed)


def alternated(commands: List[List[str]], repeat: int, cwd: Optional[Path] = None) -> List[List[Run]]:
    """The commands run one after the other, that round ``repeat`` times (at least 3): the
    runs of each command, round by round, so that a ratio taken round by round charges the
    machine's drift to every command alike (``paired``)."""
    runs: List[List[Run]] = [[] for _ in commands]
    for _ in range(max(3, repeat)):
        for command, kept in zip(commands, runs):
            kept.append(measure(command, cwd))
    return runs


def paired(first: List[str], second: List[str], repeat: int, cwd: Optional[Path] = None, extra_cpu: float = 0.0, extra_wall: float = 0.0):
    """The two commands run alternately ``repeat`` times (at least 3): the best run of each,
    and the median over the pairs of first / (second + extra), in wall and CPU seconds.

    This machine's speed drifts by 10-15% from one minute to the next (two best-of-3
    measurements of the same work, taken a minute apart, differ that much); a ratio of
    runs taken side by side, pair by pair, charges both sides alike.
    """
    runs_a, runs_b = alternated([first, second], repeat, cwd)
    wall = statistics.median(a.elapsed / (b.elapsed + extra_wall) for a, b in zip(runs_a, runs_b))
    cpu = statistics.median(a.cpu / (b.cpu + extra_cpu) for a, b in zip(runs_a, runs_b))
    return min(runs_a, key=lambda run: run.elapsed), min(runs_b, key=lambda run: run.elapsed), wall, cpu


_FLOOR = (
    "import re, sys, pathlib\n"
    "pattern = re.compile(rb'experimental_run_v2')\n"
    "hits = 0\n"
    "for p in pathlib.Path(sys.argv[1]).rglob('*.py'):\n"
    "    hits += pattern.search(p.read_bytes()) is not None\n"
)

# A bare LibCST round trip of every file, at a given process count (1: no pool);
# workers are forked, as the tool's are.
_BARE = r"""
import multiprocessing, pathlib, sys
import libcst

def one(path):
    try:
        return int(libcst.parse_module(pathlib.Path(path).read_bytes()).code is not None)
    except Exception:
        return 0

if __name__ == "__main__":
    sys.setrecursionlimit(6000)
    if sys.argv[1].startswith("@"):  # a file listing the paths, one a line
        paths = pathlib.Path(sys.argv[1][1:]).read_text().splitlines()
    else:
        paths = sorted(str(p) for p in pathlib.Path(sys.argv[1]).rglob("*.py"))
    jobs = int(sys.argv[2])
    if jobs == 1:
        done = sum(map(one, paths))
    else:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            done = sum(pool.imap_unordered(one, paths, chunksize=4))
    print(done, len(paths))
"""


def floor(root: Path, repeat: int) -> Run:
    return best([sys.executable, "-c", _FLOOR, str(root)], repeat)


def bare_command(root: Path, jobs: int) -> List[str]:
    return [sys.executable, "-c", _BARE, str(root), str(jobs)]


def bare(root: Path, jobs: int, repeat: int = 1) -> Run:
    return best(bare_command(root, jobs), repeat)


def bare_of_command(paths: List[Path], work: Path) -> List[str]:
    """A bare LibCST parse + code of just ``paths``, in one process."""
    listing = work / ".bare-paths"
    listing.write_text("".join(f"{p}\n" for p in paths))
    return [sys.executable, "-c", _BARE, f"@{listing}", "1"]


def tool_command(args: List[str]) -> List[str]:
    return [sys.executable, "-m", "migrate_tpu", *args]


def tool(args: List[str], cwd: Path, repeat: int = 1) -> Run:
    return best(tool_command(args), repeat, cwd)


# ---------------------------------------------------------------------------- trees


def copy_python_files(source: Path, target: Path) -> int:
    count = 0
    for path in source.rglob("*.py"):
        if "__pycache__" in path.parts or "site-packages" in path.relative_to(source).parts:
            continue
        if not path.is_file():
            continue
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
        count += 1
    return count


def get_models(target: Path, release: str = MODELS_RELEASE) -> str:
    """tf-models-official's Python files, from a wheel cached outside the repository."""
    return get_release(target, release)


def get_release(target: Path, release: str) -> str:
    """The Python files of a package release on PyPI (``name==version``), from its wheel, or
    else its source archive, cached outside the repository; '' or why it could not be had."""
    if target.exists():
        return ""
    CACHE.mkdir(parents=True, exist_ok=True)
    name, _, number = release.partition("==")
    stems = {name.replace("-", "_").lower(), name.replace("_", "-").lower(), name.lower()}

    def archives() -> List[Path]:
        return sorted(
            p for p in CACHE.iterdir()
            if any(p.name.lower().startswith(f"{stem}-{number}") for stem in stems) and p.name.endswith((".whl", ".tar.gz", ".zip"))
        )

    if not archives():
        download = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-build-isolation", release, "-d", str(CACHE)],
            capture_output=True,
        )
        if download.returncode != 0 or not archives():
            return f"`pip download {release}` failed: {download.stderr.decode(errors='replace').strip()[-300:]}"
    archive = archives()[0]
    if archive.name.endswith(".tar.gz"):
        with tarfile.open(archive) as sources:
            for member in sources.getmembers():
                if member.isfile() and member.name.endswith(".py"):
                    data = sources.extractfile(member)
                    destination = target / member.name
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    destination.write_bytes(data.read() if data else b"")
        return ""
    with zipfile.ZipFile(archive) as wheel:
        for member in wheel.namelist():
            if member.endswith(".py"):
                wheel.extract(member, target)
    return ""


def find_tensorflow(explicit: Optional[Path]) -> Optional[Path]:
    if explicit is not None:
        return explicit if explicit.is_dir() else None
    preferred = ENVS / "tf2.21" / "lib" / "python3.11" / "site-packages" / "tensorflow"
    if preferred.is_dir():
        return preferred
    for candidate in sorted(glob.glob(str(ENVS / "*" / "lib" / "python*" / "site-packages" / "tensorflow")), reverse=True):
        return Path(candidate)
    import importlib.util

    spec = importlib.util.find_spec("tensorflow")  # located, never imported
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    return None


def _folder(name: str) -> str:
    """The work folder of a tree: a ``pypi:package==version`` tree is kept as ``package-version``."""
    return name[len("pypi:"):].replace("==", "-") if name.startswith("pypi:") else name


def get_tree(name: str, work: Path, options) -> str:
    """Make ``work/name``; return why it could not be made, or ''."""
    target = work / name
    if name == "models":
        return get_models(target)
    if name.startswith("models-"):  # another release of tf-models-official: models-2.4.0
        return get_models(target, f"tf-models-official=={name[len('models-'):]}")
    if name.startswith("pypi:"):  # any package release: pypi:dm-sonnet==2.0.0
        if "==" not in name:
            return f"{name}: name a release, as pypi:package==version"
        return get_release(work / _folder(name), name[len("pypi:"):])
    if target.exists():
        return ""
    if name == "tensorflow":
        source = find_tensorflow(options.tensorflow)
        if source is None:
            return "no installed tensorflow package (run scripts/tf-envs, or pass --tensorflow DIR)"
        copy_python_files(source, target)
        return ""
    if name == "stdlib":
        copy_python_files(Path(sysconfig.get_paths()["stdlib"]), target)
        return ""
    if name == "alltf":
        tf21_tree(target, files=options.files)
        return ""
    return f"unknown tree {name!r}"


# ---------------------------------------------------------------------------- measurements


def findings_files(run: Run) -> Dict[str, object]:
    report = json.loads(run.stdout)
    with_findings = {entry["path"] for entry in report["findings"]}
    summary = report["summary"]
    return {
        "files": summary["files"],
        "parsed": summary["parsed"],
        "with_findings": len(with_findings),
        "paths_with_findings": sorted(with_findings),
        "findings": summary["findings"],
        "errors": summary["errors"],
        "by_rule": summary["by_rule"],
    }


def bench_tree(name: str, work: Path, jobs: int, repeat: int) -> Dict[str, object]:
    folder = _folder(name)  # the tree's folder in ``work`` (``name`` labels it)
    root = work / folder
    files = sum(1 for _ in root.rglob("*.py"))
    size = sum(p.stat().st_size for p in root.rglob("*.py"))
    cache = work / f".cache-{folder}"
    shutil.rmtree(cache, ignore_errors=True)
    row: Dict[str, object] = {"tree": name, "files": files, "mb": size / 1e6}
    row["floor"] = floor(root, max(3, repeat))
    row["bare"] = bare(root, jobs, repeat)
    common = ["--no-gitignore", "--no-progress", "-j", str(jobs)]
    cold = tool(["diff", folder, *common, "--no-cache"], work, repeat)
    # Exit 2 with a summary is a finished run with per-file errors (the stdlib holds deliberately
    # undecodable test files): those are counted below, not a failed benchmark.
    if cold.returncode not in (0, 1, 2) or b"files scanned" not in cold.stderr:
        raise SystemExit(f"{name}: migrate-tpu diff failed ({cold.returncode}):\n{cold.stderr.decode()[-2000:]}")
    row["cold"] = cold
    row["diff_bytes"] = len(cold.stdout)
    tool(["diff", folder, *common, "--cache-dir", str(cache)], work)  # fills the cache
    row["warm"] = tool(["diff", folder, *common, "--cache-dir", str(cache)], work, repeat)
    check = tool(["check", folder, *common, "--no-cache", "--format", "json"], work, repeat)
    row["check"] = check
    row.update(findings_files(check))
    # The LibCST limit of a tree: a LibCST tool must at least read every file (the floor)
    # and parse and write back the files it changes; against it, check with one worker.
    row["check_one"], row["bare_findings"], row["limit_ratio_wall"], row["limit_ratio_cpu"] = paired(
        tool_command(["check", folder, "--no-gitignore", "--no-progress", "-j", "1", "--no-cache", "--format", "json"]),
        bare_of_command([work / path for path in row["paths_with_findings"]], work),
        repeat,
        work,
        extra_cpu=row["floor"].cpu,
        extra_wall=row["floor"].elapsed,
    )
    shutil.rmtree(cache, ignore_errors=True)
    return row


def scaling(name: str, work: Path, counts: List[int], repeat: int) -> List[Dict[str, Run]]:
    rows = []
    for jobs in counts:
        cold, plain, wall, cpu = paired(
            tool_command(["diff", name, "--no-gitignore", "--no-progress", "--no-cache", "-j", str(jobs)]), bare_command(work / name, jobs), repeat, work
        )
        rows.append({"jobs": jobs, "tool": cold, "bare": plain, "ratio_wall": wall, "ratio_cpu": cpu})
    return rows


def growth_in_one_file() -> float:
    """4x the code in one file should take about 4x the time (no quadratic step)."""
    unit = (
        "import tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy(resolver)\n"
        "step = tf.function(lambda v: v * 2)\nout = strategy.experimental_run_v2(step, args=(x,))\n"
    )
    code = (
        "import sys, time\nfrom migrate_tpu.codemod.migration.api import migrate\n"
        "source = sys.stdin.read()\nstart = time.perf_counter(); migrate(source); print(time.perf_counter() - start)\n"
    )

    def seconds(blocks: int) -> float:
        done = subprocess.run([sys.executable, "-c", code], input=(unit * blocks).encode(), capture_output=True, check=True)
        return float(done.stdout)

    return seconds(1000) / seconds(250)


# ---------------------------------------------------------------------------- report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", default="models,tensorflow,stdlib,alltf")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="process count for the tool and the bare parse")
    parser.add_argument("--scaling", default=None, help="process counts for the scaling table (default: 1 and --jobs)")
    parser.add_argument("--scaling-tree", default="alltf")
    parser.add_argument("--files", type=int, default=300, help="files in the generated all-TF tree")
    parser.add_argument("--repeat", type=int, default=1, help="runs per measurement; the best is kept")
    parser.add_argument("--keep", type=Path, default=None, help="work folder to keep (and reuse) the trees in")
    parser.add_argument("--tensorflow", type=Path, default=None, help="an installed tensorflow package folder")
    parser.add_argument("--tf-upgrade", action="store_true", help="also time tf_upgrade_v2 on the all-TF tree")
    options = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="migrate-tpu-bench-")) if options.keep is None else options.keep.resolve()
    work.mkdir(parents=True, exist_ok=True)
    jobs = options.jobs
    failures: List[str] = []
    lines: List[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    def target(name: str, value: float, limit: float) -> str:
        ok = value <= limit
        if not ok:
            failures.append(name)
        return f"target <= {limit:g}: {'met' if ok else 'MISSED'}"

    def at_least(name: str, value: float, floor_value: float) -> str:
        ok = value >= floor_value
        if not ok:
            failures.append(name)
        return f"target >= {floor_value:g}: {'met' if ok else 'MISSED'}"

    from importlib.metadata import version

    say(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}, Python {sys.version.split()[0]}, "
        f"LibCST {version('libcst')}; tool and bare parse at {jobs} process(es)")
    import compileall

    import migrate_tpu

    compileall.compile_dir(str(Path(migrate_tpu.__file__).parent), quiet=1)  # the bytecode an install writes
    startup = tool(["--version"], work, 5).elapsed
    say(f"startup `migrate-tpu --version` (best of 5): {startup:.3f} s")
    say()

    results = {}
    for name in [t.strip() for t in options.trees.split(",") if t.strip()]:
        why = get_tree(name, work, options)
        if why:
            say(f"{name}: SKIPPED: {why}")
            continue
        row = bench_tree(name, work, jobs, options.repeat)
        results[name] = row
        fl, cold = row["floor"], row["cold"]
        say(f"{name}: {row['files']} files, {row['mb']:.1f} MB   (wall s / CPU s of the whole process tree)")
        for label, run in (
            ("read+regex floor, 1 process", fl),
            (f"bare LibCST parse+code, {jobs} proc", row["bare"]),
            ("migrate-tpu diff, cold", cold),
            ("migrate-tpu diff, warm (cache)", row["warm"]),
            ("migrate-tpu check, cold", row["check"]),
        ):
            say(f"  {label:<34} {run.elapsed:8.3f} / {run.cpu:8.3f}   {run.elapsed / fl.elapsed:7.2f}x floor"
                f"   {run.elapsed / row['bare'].elapsed:5.2f}x bare   peak {run.peak_mb:4.0f} MB")
        precision = row["with_findings"] / row["parsed"] if row["parsed"] else 1.0
        row["precision"] = precision
        say(f"  parsed {row['parsed']} of {row['files']} files; {row['with_findings']} with findings (prefilter precision {precision:.2f}); "
            f"{row['findings']} findings, {row['errors']} errors")
        one, limit_bare = row["check_one"], row["bare_findings"]
        row["limit_wall"] = fl.elapsed + limit_bare.elapsed
        row["limit_cpu"] = fl.cpu + limit_bare.cpu
        say(f"  LibCST limit: floor + bare parse+code of the {row['with_findings']} files with findings (1 process) = "
            f"{row['limit_wall']:.3f} / {row['limit_cpu']:.3f}; check -j 1: {one.elapsed:.3f} / {one.cpu:.3f} (best runs); "
            f"median of paired runs {row['limit_ratio_wall']:.2f}x wall, {row['limit_ratio_cpu']:.2f}x CPU")
        say(f"  by rule: {row['by_rule']}")
        say()

    say("targets:")
    for name, row in results.items():
        if name == "models" or name.startswith(("models-", "pypi:")):
            # A real TF repository: LibCST parses what it must and little more (issue 21).
            say(f"  {name}: prefilter precision {row['precision']:.2f}  " + at_least(f"{name} precision", row["precision"], 0.8))
            ratio = row["limit_ratio_cpu"]
            say(f"  {name}: check -j 1 / LibCST limit = {ratio:.2f}x CPU ({row['limit_ratio_wall']:.2f}x wall; median of paired runs)  "
                + target(f"{name} LibCST-limit ratio (CPU)", ratio, 1.5))
    if "stdlib" in results:
        row = results["stdlib"]
        ratio = row["cold"].elapsed / row["floor"].elapsed
        say(f"  stdlib: diff cold / floor = {ratio:.2f}x  " + target("stdlib ratio", ratio, 3.0))
    if results:
        peak = max(max(row["cold"].peak_mb, row["check"].peak_mb) for row in results.values())
        say(f"  peak RSS of the tool's process tree: {peak:.0f} MB  " + target("peak RSS", peak, 300.0))

    counts = [int(c) for c in (options.scaling or f"1,{jobs}").split(",")]
    counts = sorted(set(counts))
    if options.scaling_tree in results:
        table = scaling(options.scaling_tree, work, counts, options.repeat)
        one = next((r for r in table if r["jobs"] == 1), None)
        if one is not None:
            wall, cpu = one["ratio_wall"], one["ratio_cpu"]  # the median of paired runs
            # Both sides run in one process: CPU seconds are the fair measure on a shared machine.
            say(f"  {options.scaling_tree}: one worker, diff cold / bare parse+code in one process = {wall:.2f}x wall, {cpu:.2f}x CPU  "
                + target("one-worker ratio (CPU)", cpu, 1.0))
        say()
        say(f"scaling on {options.scaling_tree} ({os.cpu_count()} cores on this machine; wall seconds):")
        say("| processes | migrate-tpu diff (s) | CPU (s) | speed-up | efficiency | bare parse+code (s) | CPU (s) | speed-up | tool / bare |")
        say("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in table:
            up = one["tool"].elapsed / r["tool"].elapsed if one else float("nan")
            bare_up = one["bare"].elapsed / r["bare"].elapsed if one else float("nan")
            say(f"| {r['jobs']} | {r['tool'].elapsed:.2f} | {r['tool'].cpu:.2f} | {up:.2f} | {up / r['jobs']:.2f} "
                f"| {r['bare'].elapsed:.2f} | {r['bare'].cpu:.2f} | {bare_up:.2f} | {r['ratio_wall']:.2f} |")
        say("(speed-up means something only on an idle machine: CPU seconds show the work, wall seconds the contention;")
        say(" tool / bare: the median of paired runs, wall)")
        say()

    growth = growth_in_one_file()
    say(f"one file, 4x the code (1,000 vs 250 blocks): {growth:.2f}x time  " + target("linear growth", growth, 6.0))

    if options.tf_upgrade and "alltf" in results:
        upgrader = ENVS / "tf2.21" / "bin" / "tf_upgrade_v2"
        if upgrader.exists():
            out = work / "alltf-upgraded"
            shutil.rmtree(out, ignore_errors=True)
            run = measure([str(upgrader), "--intree", str(work / "alltf"), "--outtree", str(out), "--reportfile", str(work / "report.txt")])
            say(f"tf_upgrade_v2 on the all-TF tree: {run.elapsed:.2f} s ({run.elapsed / results['alltf']['cold'].elapsed:.1f}x migrate-tpu diff)")
        else:
            say("tf_upgrade_v2: SKIPPED: TF 2.21 environment absent (run scripts/tf-envs)")

    if failures:
        say("MISSED: " + ", ".join(failures))
        return 1
    say("all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
