"""Which of the migration's changes is to blame for a divergence or a retrace: delta
debugging (Zeller's ddmin) over the changes as hunks.

Each test applies a subset of the hunks to a fresh copy of the original and runs it, up to
the step where the divergence showed, under the surface that offers both releases' names
(``--tf-api 2.1+2.4``: a partly migrated program mixes them); it fails when its record,
compared with the original's run the same way, shows the same kind of verdict.  ddmin keeps
halving the set that still fails until no single hunk can be left out.  :func:`ddmin` is
pure; :func:`blame` runs the tests.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Callable, Dict, FrozenSet, List, Sequence, TypeVar

from migrate_tpu.verify.values.changes import Hunk, apply
from migrate_tpu.verify.runs.plan import Copy, copy_tree

T = TypeVar("T")

#: Runs blame may make, the baseline's included: ddmin needs about 2 log2(n) on a single culprit.
MOST_RUNS = 16


class OutOfRuns(Exception):
    """The budget of runs is spent; ddmin returns what it has."""


def ddmin(changes: Sequence[T], fails: Callable[[List[T]], bool]) -> List[T]:
    """A smallest subset of ``changes`` (in their order) for which ``fails`` holds, given that
    it holds for all of them: no single change can be taken out of the result (1-minimal).
    ``fails`` is asked at most once per subset; an :class:`OutOfRuns` it raises ends the
    search with the smallest failing subset found so far."""
    current = list(changes)
    asked: Dict[FrozenSet[int], bool] = {}
    position = {id(change): index for index, change in enumerate(changes)}

    def test(subset: List[T]) -> bool:
        key = frozenset(position[id(change)] for change in subset)
        if key not in asked:
            asked[key] = fails(subset)
        return asked[key]

    granularity = 2
    try:
        while len(current) >= 2:
            size = len(current)
            chunks = [current[size * k // granularity: size * (k + 1) // granularity] for k in range(granularity)]
            chunks = [chunk for chunk in chunks if chunk]
            reduced = False
            for chunk in chunks:  # one part alone fails: keep it
                if test(chunk):
                    current, granularity, reduced = chunk, 2, True
                    break
            if not reduced and granularity > 2:
                for chunk in chunks:  # all but one part fails: drop that part
                    rest = [change for change in current if change not in chunk]
                    if test(rest):
                        current, granularity, reduced = rest, max(granularity - 1, 2), True
                        break
            if not reduced:
                if granularity >= len(current):
                    break
                granularity = min(len(current), granularity * 2)
    except OutOfRuns:
        pass
    return current


def partial_copy(original: Copy, hunks: Sequence[Hunk], target: Path) -> Copy:
    """A copy of the original's folder at ``target`` with ``hunks`` applied to its files."""
    copy_tree(original.root, target)
    for file in sorted({hunk.file for hunk in hunks}):
        path = target / file
        path.write_text(apply(file, (original.root / file).read_text("utf-8"), hunks), "utf-8")
    relative = original.program.relative_to(original.root)
    cwd = target / original.cwd.relative_to(original.root)
    return Copy(target, original.shown_root, target / relative, cwd, original.shown_program)


def blame(hunks: Sequence[Hunk], original: Copy, workdir: Path, reproduces: Callable[[Copy], bool], shown: Callable[[Hunk], str],
          neutral: Callable[[Hunk], bool] = lambda hunk: False) -> dict:
    """Delta debugging over ``hunks``: ``reproduces(copy)`` runs a partly migrated copy and
    says whether it shows the failure; ``neutral(hunk)``: whether a hunk is unlikely to be the
    culprit (suspects.likely_neutral), which only orders the search.  Returns ``{"changes":
    [labels], "rules", "runs", "seconds"}`` or, where nothing can be blamed, ``{"changes": [],
    "message", ...}``."""
    started = time.monotonic()
    runs = [0]

    def fails(subset: List[Hunk]) -> bool:
        if runs[0] >= MOST_RUNS:
            raise OutOfRuns()
        runs[0] += 1
        target = workdir / f"blame-{runs[0]}"
        try:
            return bool(reproduces(partial_copy(original, subset, target)))
        finally:
            shutil.rmtree(target, ignore_errors=True)

    found = list(hunks) if len(hunks) == 1 else _among_suspects_first(list(hunks), neutral, fails)
    if len(found) == len(hunks) > 1:
        # nothing smaller fails: the whole set must, or the failure does not show this way
        try:
            whole = fails(found)
        except OutOfRuns:
            whole = True
        if not whole:
            return {"changes": [], "runs": runs[0], "seconds": round(time.monotonic() - started, 2),
                    "message": "the divergence does not show when the changes are applied to the original one by one "
                               "and run under both surfaces' names (--tf-api 2.1+2.4)"}
    seconds = round(time.monotonic() - started, 2)
    labels = [shown(hunk) for hunk in found]
    return {"changes": labels, "rules": sorted({rule for hunk in found for rule in hunk.rules}), "runs": runs[0], "seconds": seconds}


def _among_suspects_first(hunks: List[Hunk], neutral: Callable[[Hunk], bool], fails: Callable[[List[Hunk]], bool]) -> List[Hunk]:
    """ddmin among the hunks that are not neutral where they alone show the failure (one run
    to see it), else among all: a 1-minimal failing subset either way, found in fewer runs
    where the culprit is a suspect (a rename and a docstring beside a SUM -> MEAN: 1 run, not 4)."""
    suspects = [hunk for hunk in hunks if not neutral(hunk)]
    if 0 < len(suspects) < len(hunks):
        try:
            if fails(suspects):
                return ddmin(suspects, fails)  # (one suspect: itself, with no run)
        except OutOfRuns:
            return hunks
    return ddmin(hunks, fails)
