"""Per-file cost in one process: migrate-tpu against a bare LibCST parse + code, interleaved.

For each file, a bare ``libcst.parse_module(source).code`` and ``api.migrate(source)`` run one
after the other, best of R per file, in CPU seconds (``time.process_time``), summed over the
tree; a change of the machine's load during the run hits both sides alike.

Usage: python benchmarks/per_file.py TREE [R] [diff|check|fix]
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

import libcst

from migrate_tpu.codemod.migration.api import migrate
from migrate_tpu.codemod.foundation.options import Options


def main() -> None:
    root = Path(sys.argv[1])
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    options = replace(Options(), mode=sys.argv[3]) if len(sys.argv) > 3 else Options()
    sources = [path.read_text(encoding="utf-8") for path in sorted(root.rglob("*.py"))]
    for source in sources[:3]:  # imports, the catalogue and the rules load outside the timing
        migrate(source, options)
        _ = libcst.parse_module(source).code
    clock = time.process_time
    bare = tool = 0.0
    for source in sources:
        bare_best = tool_best = float("inf")
        for _ in range(repeat):
            start = clock()
            _ = libcst.parse_module(source).code
            bare_best = min(bare_best, clock() - start)
            start = clock()
            migrate(source, options)
            tool_best = min(tool_best, clock() - start)
        bare += bare_best
        tool += tool_best
    print(f"{len(sources)} files: bare parse + code {bare:.3f} s, migrate ({options.mode}) {tool:.3f} s CPU: {tool / bare:.3f}x")


if __name__ == "__main__":
    main()
