"""How near the LibCST limit a perfect prefilter would bring `check -j 1` (issue 21).

The limit of a tree (`run.py`) is the read floor plus a bare LibCST parse + code of just the
files with findings. The tool also starts its CLI, reads and classifies every file, decides
which files need LibCST (the textual and `ast` stages), and runs its rules on the files that
do. This script separates the last from the rest: beside `check -j 1` it runs the same
command with the prefilter replaced by the answer, known in advance, at no cost (every file
is still read; a file without findings is settled on the spot; a file with findings goes
straight to LibCST, with no textual or `ast` test). What that run costs over the limit is
spent by no prefilter: the CLI's start, reading the files through the engine, and the rules'
own analysis of the files with findings. If it is near or above the target, no prefilter
can meet the target on that tree.

Each ratio is a median over triples of runs (the tool, the answered run, the limit, one
after the other, so that the machine's drift hits all three alike), CPU seconds of the whole
process tree, as in `run.py`; the findings of the answered run are checked to equal
the tool's.

Usage: python benchmarks/prefilter_bound.py [--trees models-2.8.0,...] [--repeat R] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import List, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import _folder, alternated, bare_of_command, findings_files, floor, get_tree, measure, tool_command  # noqa: E402

# `python -c` program: the CLI, with the prefilter answered from a list of paths (one a line,
# as the tool prints them) instead of decided. The engine's other work is untouched.
_ANSWERED = r"""
import sys
from pathlib import Path

answer = set(Path(sys.argv[1]).read_text().splitlines())
sys.argv = ["migrate-tpu", *sys.argv[2:]]

from migrate_tpu.codemod.stages import syntax_stage
from migrate_tpu.engine import pipeline

def precheck(path, data, migrator):
    name = pipeline.display_path(path)
    return None if name in answer else pipeline.FileResult(name, skipped=True)

def may_fire(source, rule_classes, lookup=None, path="", tree=None, target=None):
    return True, tree

pipeline.precheck = precheck
syntax_stage.may_fire = may_fire

from migrate_tpu.cli import main
main()
"""


def triples(tool: List[str], answered: List[str], limit: List[str], floor_cpu: float, repeat: int, work: Path) -> Tuple[float, float]:
    """The tool, the answered run and the limit run one after the other, ``repeat`` times
    (at least 3): the medians of tool / limit and answered / limit over the triples, CPU
    seconds, the limit being the bare parse plus the floor."""
    tool_runs, answered_runs, limit_runs = alternated([tool, answered, limit], repeat, work)
    limits = [run.cpu + floor_cpu for run in limit_runs]
    return (
        statistics.median(run.cpu / bound for run, bound in zip(tool_runs, limits)),
        statistics.median(run.cpu / bound for run, bound in zip(answered_runs, limits)),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", default="models,models-2.8.0")
    parser.add_argument("--repeat", type=int, default=3, help="triples of runs per ratio (at least 3)")
    parser.add_argument("--keep", type=Path, default=None, help="work folder to keep (and reuse) the trees in")
    parser.add_argument("--tensorflow", type=Path, default=None)
    parser.add_argument("--files", type=int, default=300)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="migrate-tpu-bound-")) if options.keep is None else options.keep.resolve()
    work.mkdir(parents=True, exist_ok=True)
    for name in options.trees.split(","):
        why = get_tree(name, work, options)
        if why:
            print(f"{name}: skipped ({why})")
            continue
        folder = _folder(name)
        arguments = ["check", folder, "--no-gitignore", "--no-progress", "-j", "1", "--no-cache", "--format", "json"]
        check = measure(tool_command(arguments), work)
        found = findings_files(check)
        paths = found["paths_with_findings"]
        listing = work / ".answer-paths"
        listing.write_text("".join(f"{path}\n" for path in paths))
        answered_command = [sys.executable, "-c", _ANSWERED, str(listing), *arguments]
        answered = measure(answered_command, work)
        same = json.loads(answered.stdout)["findings"] == json.loads(check.stdout)["findings"]
        base = floor(work / folder, max(3, options.repeat))
        limit = bare_of_command([work / path for path in paths], work)
        tool_ratio, answered_ratio = triples(tool_command(arguments), answered_command, limit, base.cpu, options.repeat, work)
        print(
            f"{name}: {found['files']} files, {found['with_findings']} with findings; findings of the answered run "
            f"{'identical' if same else 'DIFFERENT'}\n"
            f"  check -j 1 / LibCST limit:                           {tool_ratio:.2f}x CPU (median of triples)\n"
            f"  check -j 1 with a free, perfect prefilter / limit:   {answered_ratio:.2f}x CPU",
            flush=True,
        )
        if not same:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
