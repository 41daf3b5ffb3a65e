"""Findings and errors as text and JSON for people and machines.

Reports are plain objects with ``rule``, ``message``, ``line``, ``column``,
``end_line``, ``end_column``, ``safety``, ``applied``, ``fix_title``,
``suggestion`` and ``edits``; the engine does not look further into them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, IO, List, Optional, Tuple

from migrate_tpu.engine.pipeline import FileResult


@dataclass
class RunSummary:
    files: int = 0
    parsed: int = 0
    changed: int = 0
    errors: int = 0
    by_rule: Counter = field(default_factory=Counter)
    applied: int = 0
    remaining: int = 0
    unsafe_hidden: int = 0

    def add(self, result: FileResult) -> None:
        self.files += 1
        self.parsed += int(result.parsed)
        self.changed += int(result.changed)
        self.errors += int(result.failed)
        for report in result.reports:
            self.by_rule[report.rule] += 1
            if report.applied:
                self.applied += 1
            else:
                self.remaining += 1
                if report.safety == "unsafe":
                    self.unsafe_hidden += 1

    def to_dict(self) -> Dict[str, object]:
        return {
            "files": self.files,
            "parsed": self.parsed,
            "changed": self.changed,
            "errors": self.errors,
            "findings": sum(self.by_rule.values()),
            "fixed": self.applied,
            "remaining": self.remaining,
            "by_rule": dict(sorted(self.by_rule.items())),
        }


def location(path: str, report) -> str:
    cell = getattr(report, "cell", None)
    where = f"{path}:cell {cell}:" if cell else f"{path}:"
    return f"{where}{report.line}:{report.column}"


_CELL_ERROR = re.compile(r"^cell (\d+): ")


def split_error(result: FileResult) -> Tuple[Optional[int], str]:
    """``(cell, message)``: a notebook error's cell travels as a ``cell N: `` prefix."""
    match = _CELL_ERROR.match(result.error or "")
    if match:
        return int(match.group(1)), result.error[match.end() :]
    return None, result.error or ""


def error_line(result: FileResult) -> str:
    """``path[:cell N][:line]: error: message``."""
    cell, message = split_error(result)
    where = result.path + (f":cell {cell}" if cell else "") + (f":{result.error_line}" if result.error_line else "")
    return f"{where}: error: {message}"


def finding_line(path: str, report) -> str:
    """``path:line:col: ID [*] message``; ``[*]`` marks what ``fix`` fixes with these settings."""
    if report.applied:
        mark = " [*]"
    elif report.safety == "unsafe":
        mark = " [unsafe fix]"
    else:
        mark = ""
    return f"{location(path, report)}: {report.rule}{mark} {report.message}"


def write_text_findings(results: List[FileResult], out: IO[str], only_remaining: bool = False) -> None:
    for result in results:
        for report in result.reports:
            if only_remaining and report.applied:
                continue
            out.write(finding_line(result.path, report) + "\n")
            if not report.applied and report.suggestion and report.safety != "safe":
                for number, text in enumerate(report.suggestion.splitlines()):
                    out.write(("  help: " if number == 0 else "        ") + text + "\n")


def summary_text(summary: RunSummary, mode: str) -> str:
    lines = []
    total = sum(summary.by_rule.values())
    if mode == "fix":
        lines.append(f"{summary.files} files scanned, {summary.changed} changed, {summary.applied} fixes applied, {summary.remaining} findings remaining, {summary.errors} errors.")
    elif mode == "diff":
        lines.append(f"{summary.files} files scanned, {summary.changed} would change, {summary.remaining} findings not fixable automatically, {summary.errors} errors.")
    else:
        lines.append(f"{summary.files} files scanned, {total} findings ({summary.applied} fixable with `migrate-tpu fix` [*]), {summary.errors} errors.")
    if summary.by_rule:
        lines.append("By rule: " + ", ".join(f"{rule} {count}" for rule, count in sorted(summary.by_rule.items())))
    if summary.unsafe_hidden:
        lines.append(f"{summary.unsafe_hidden} unsafe fixes are available with --unsafe-fixes.")
    return "\n".join(lines)


def json_report(results: List[FileResult], summary: RunSummary) -> str:
    findings = []
    for result in results:
        for report in result.reports:
            item = {"path": result.path}
            item.update(report.to_dict())
            findings.append(item)
    errors = [{"path": r.path, "line": r.error_line, "message": r.error} for r in results if r.failed]
    return json.dumps({"version": 1, "findings": findings, "errors": errors, "summary": summary.to_dict()}, indent=2) + "\n"
