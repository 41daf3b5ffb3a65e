"""What a run printed, as verify reads it: the lines and the print calls that wrote them, the
numbers in each line with its words as the line's shape, and the TensorFlow versions a program
may print (which differ between the surfaces by design, and are no number of the computation).
Printed lines are the last and least signal of the comparison (``judge/compare``) and of the A/A
spread (``judge/spread``).  Pure: no TensorFlow, no files."""

from __future__ import annotations

import difflib
import re
from typing import List, Optional, Sequence, Tuple

from migrate_tpu.verify.values.verdict import SURFACE_VERSIONS

# A number in a printed line (the lowest-priority signal).
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
# A printed line about time or speed differs from run to run: never compared.
_TIMING = re.compile(r"(?i)(\btime|\btook\b|elapsed|\bsec|\bseconds?\b|\d\s*m?s\b|/s\b|/sec\b|per second|\bETA\b)")

_VERSION_MARK = "<tensorflow version>"


def version_strings(*records: dict) -> List[str]:
    """The TensorFlow versions a program may print: each run's interpreter's, and the releases
    the API surfaces stand for (a program reads its surface's version)."""
    found = {v for v in SURFACE_VERSIONS.values()}
    found.update(str(record["tensorflow"]) for record in records if record.get("tensorflow"))
    return sorted(found, key=len, reverse=True)


def _without_versions(line: str, versions: Sequence[str]) -> str:
    for version in versions:
        line = re.sub(r"(?<![\w.])" + re.escape(version) + r"(?![\w.])", _VERSION_MARK, line)
    return line


def release_numbers(versions: Sequence[str]) -> frozenset:
    """The releases' ``major.minor`` as numbers (2.1, 2.4, 2.21): what a program that parses
    ``tf.__version__`` prints of it, which differs between the surfaces by design."""
    found = set()
    for version in versions:
        match = re.match(r"(\d+\.\d+)", version)
        if match:
            found.add(float(match.group(1)))
    return frozenset(found)


def pair_printed(b_numbered: List[Tuple[int, str, List[float]]], a_numbered: List[Tuple[int, str, List[float]]]) -> List[tuple]:
    """Two runs' numbered lines paired in order by their words (:func:`_numbered`)."""
    matcher = difflib.SequenceMatcher(None, [shape for _, shape, _ in b_numbered], [shape for _, shape, _ in a_numbered], autojunk=False)
    return [(b_numbered[block.a + k], a_numbered[block.b + k]) for block in matcher.get_matching_blocks() for k in range(block.size)]


def printed_lines(record: dict, stdout: str) -> List[Tuple[str, Optional[dict]]]:
    """Each printed line and the print call that wrote it (``None`` where the record has no
    print calls: the lines of stdout)."""
    if "printed" not in record:
        return [(line, None) for line in stdout.splitlines()]
    lines: List[Tuple[str, Optional[dict]]] = []
    for event in record["printed"]:
        lines.extend((line, event) for line in (event["text"].splitlines() or [""]))
    return lines


def numbered(lines: List[Tuple[str, Optional[dict]]], versions: Sequence[str]) -> List[Tuple[int, str, List[float]]]:
    """``(index, words, numbers)`` of the lines that hold numbers and speak of no time."""
    found = []
    for index, (line, _) in enumerate(lines):
        line = _without_versions(line, versions)
        numbers = _NUMBER.findall(line)
        if numbers and not _TIMING.search(line):
            found.append((index, _NUMBER.sub("#", line), [float(x) for x in numbers]))
    return found
