"""Findings and errors for people and machines: text, JSON, GitHub workflow
annotations, SARIF 2.1.0 and a Markdown summary.

Findings are the engine's :class:`~migrate_tpu.engine.file_finding.FileFinding`
records (notebook findings carry their cell and their place in the JSON text). What the rules are (ids, titles, docs) comes in as plain data
(:class:`RuleInfo`), so this module knows nothing of the codemod.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, IO, Iterable, List, Match, Optional, Tuple, cast

from migrate_tpu.engine.file_finding import FileFinding
from migrate_tpu.engine.one_file import FileResult


@dataclass
class RunSummary:
    files: int = 0
    parsed: int = 0
    skipped: int = 0
    changed: int = 0
    errors: int = 0
    by_rule: Counter[str] = field(default_factory=Counter)
    applied: int = 0
    remaining: int = 0
    unsafe_hidden: int = 0
    # Files with a finding `fix` would fix: "would change" in check mode,
    # where no new code is generated.
    fixable_files: int = 0
    # Findings no fix deals with, per rule: a person must, or mark them kept.
    manual_by_rule: Counter[str] = field(default_factory=Counter)

    def add(self, result: FileResult) -> None:
        self.files += int(result.scanned)
        self.parsed += int(result.parsed)
        self.skipped += int(result.skipped)
        self.changed += int(result.changed)
        self.errors += int(result.failed)
        self.fixable_files += int(result.changed or any(report.applied for report in result.reports))
        for report in result.reports:
            self.by_rule[report.rule] += 1
            if report.applied:
                self.applied += 1
            else:
                self.remaining += 1
                if report.safety == "unsafe":
                    self.unsafe_hidden += 1
                elif report.safety == "manual":
                    self.manual_by_rule[report.rule] += 1

    def to_dict(self) -> Dict[str, object]:
        return {
            "files": self.files,
            "parsed": self.parsed,
            "skipped": self.skipped,
            # Files `fix` changes (changed, or would change: the JSON report comes from `check`,
            # which generates no new code, so `changed` alone was always 0 there).
            "changed": max(self.changed, self.fixable_files),
            "errors": self.errors,
            "findings": sum(self.by_rule.values()),
            "fixed": self.applied,
            "remaining": self.remaining,
            "by_rule": dict(sorted(self.by_rule.items())),
        }


def location(path: str, report: FileFinding) -> str:
    cell = report.cell
    where = f"{path}:cell {cell}:" if cell else f"{path}:"
    return f"{where}{report.line}:{report.column}"


_CELL_ERROR = re.compile(r"^cell (\d+): ")


def split_error(result: FileResult) -> Tuple[Optional[int], str]:
    """``(cell, message)``: a notebook error's cell travels as a ``cell N: `` prefix."""
    error = result.error or ""
    match = _CELL_ERROR.match(error)
    if match:
        return int(match.group(1)), error[match.end() :]
    return None, error


def error_line(result: FileResult) -> str:
    """``path[:cell N][:line]: error: message``."""
    cell, message = split_error(result)
    where = result.path + (f":cell {cell}" if cell else "") + (f":{result.error_line}" if result.error_line else "")
    return f"{where}: error: {message}"


def finding_line(path: str, report: FileFinding) -> str:
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


def count(number: int, word: str, plural: Optional[str] = None) -> str:
    """``1 file``, ``2 files``."""
    return f"{number} {word if number == 1 else (plural or word + 's')}"


def summary_text(summary: RunSummary, mode: str) -> str:
    """The closing summary: files scanned and changed, findings by rule, errors."""
    lines = []
    total = sum(summary.by_rule.values())
    # Files without any TensorFlow name are never parsed: say how many were,
    # and how many the prefilter skipped (files that failed are the errors).
    scanned = count(summary.files, "file") + f" scanned ({summary.parsed} parsed, {summary.skipped} skipped by the prefilter)"
    errors = count(summary.errors, "error")
    if mode == "fix":
        lines.append(f"{scanned}, {summary.changed} changed, {count(summary.applied, 'fix', 'fixes')} applied, "
                     f"{count(summary.remaining, 'finding')} remaining, {errors}.")
    elif mode == "diff":
        lines.append(f"{scanned}, {summary.changed} would change, {count(summary.remaining, 'finding')} not fixable automatically, {errors}.")
    else:
        lines.append(f"{scanned}, {summary.fixable_files} would change, {count(total, 'finding')} "
                     f"({summary.applied} fixable with `migrate-tpu fix` [*]), {errors}.")
    if summary.by_rule:
        lines.append("By rule: " + ", ".join(f"{rule} {number}" for rule, number in sorted(summary.by_rule.items())))
    if summary.unsafe_hidden:
        lines.append(f"{count(summary.unsafe_hidden, 'unsafe fix', 'unsafe fixes')} available with --unsafe-fixes.")
    if summary.manual_by_rule:
        lines.append(manual_work_hint(summary.manual_by_rule))
    return "\n".join(lines)


def manual_work_hint(manual_by_rule: Counter[str]) -> str:
    """What to do about findings no fix deals with (they fail a pre-commit hook until then)."""
    rules = sorted(manual_by_rule)
    first = rules[0]
    total = sum(manual_by_rule.values())
    return (
        f"{count(total, 'finding')} {'needs' if total == 1 else 'need'} a person ({', '.join(rules)}): "
        f"`migrate-tpu explain {first}` says what to write instead; to keep a line as it is, end it with "
        f"`# migrate-tpu: ignore[{first}]`; for a whole file, list the rule under "
        f"[tool.migrate-tpu.per-file-ignores] in pyproject.toml."
    )


def statistics_text(results: List[FileResult], names: Dict[str, str]) -> str:
    """Findings counted per rule, most first (``check --statistics``, as ruff prints it):
    ``count<TAB>ID<TAB>[*] name``, ``[*]`` when ``fix`` fixes them with these settings."""
    counts: Counter[str] = Counter()
    fixable = set()
    for result in results:
        for report in result.reports:
            counts[report.rule] += 1
            if report.applied:
                fixable.add(report.rule)
    if not counts:
        return ""
    width = len(str(max(counts.values())))
    id_width = max(len(rule) for rule in counts)
    lines = [
        f"{number:>{width}}\t{rule:<{id_width}}\t{'[*]' if rule in fixable else '[ ]'} {names.get(rule, rule)}"
        for rule, number in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]
    return "\n".join(lines) + "\n"


def fixes_text(results: List[FileResult], names: Dict[str, str], heading: str) -> str:
    """The fixes per file and rule (``--show-fixes``): ``heading`` and N, then
    ``- path:`` and ``    N × ID (name)`` lines; empty when there is none."""
    by_file = []
    total = 0
    for result in results:
        applied = Counter(report.rule for report in result.reports if report.applied)
        if applied and not result.failed:
            by_file.append((result.path, applied))
            total += sum(applied.values())
    if not total:
        return ""
    lines = [f"{heading} {count(total, 'finding')}:"]
    for path, applied in by_file:
        lines.append(f"- {path}:")
        lines += [f"    {number} \u00d7 {rule} ({names.get(rule, rule)})" for rule, number in sorted(applied.items())]
    return "\n".join(lines) + "\n"


# -- patches ----------------------------------------------------------------------

RULES_LINE_PREFIX = "# migrate-tpu: "


def patch_path(path: str, root: str) -> str:
    """``path`` (as shown, relative to the current folder) relative to ``root``, with ``/``."""
    return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")


def patch_bytes(result: FileResult, root: Optional[str] = None) -> bytes:
    """One file's diff as part of a patch.

    A ``# migrate-tpu: ID, ...`` line first names the rules behind it: both
    ``git apply`` and ``patch`` skip lines before a file's ``---`` header. Each
    hunk names its own after the ``@@ ... @@`` line's closing marks, where
    both tools skip a section heading.
    With ``root``, the ``a/`` ``b/`` paths are made relative to it (the
    folder the patch is applied in), so that no path needs ``..``. The
    cell-by-cell view of a notebook (``name:cell N`` headers) is not a patch
    and keeps its headers.
    """
    diff = result.diff
    if not diff:
        return b""
    applied = [report for report in result.reports if report.applied]
    rules = sorted({report.rule for report in applied})
    head = (RULES_LINE_PREFIX + ", ".join(rules) + "\n").encode("utf-8") if rules else b""
    cell_view = re.search(rb":cell \d+$", diff.split(b"\n", 1)[0]) is not None
    if cell_view:
        return head + diff
    if diff.startswith(b"--- a/") and diff.count(b"\n") >= 2:
        first, second, rest = diff.split(b"\n", 2)
        if second.startswith(b"+++ b/"):
            name = patch_path(result.path, root).encode("utf-8") if root is not None else first[len(b"--- a/") :]
            diff = b"--- " + _header_name(b"a/" + name) + b"\n+++ " + _header_name(b"b/" + name) + b"\n" + rest
    if rules:
        diff = _name_hunks(diff, applied)
    return head + diff


_HUNK_HEADER = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$", re.MULTILINE)


def _name_hunks(diff: bytes, applied: Iterable[FileFinding]) -> bytes:
    """Each hunk header followed by the rules whose fixes edit the lines it replaces
    (``change_lines``, in the old file's lines); a hunk that touches none of them
    adds or drops imports, and names the rules whose fixes did."""

    def heading(match: Match[bytes]) -> bytes:
        start, count = int(match.group(1)), int(match.group(2) if match.group(2) is not None else 1)
        first, last = start, start + max(count, 1) - 1
        rules = {r.rule for r in applied for a, b in r.change_lines if a <= last and b >= first}
        if not rules:
            rules = {r.rule for r in applied if r.edits_imports}
        return match.group(0) + (b" " + ", ".join(sorted(rules)).encode("utf-8") if rules else b"")

    return _HUNK_HEADER.sub(heading, diff)


_C_ESCAPES = {ord("\\"): b"\\\\", ord('"'): b'\\"', ord("\t"): b"\\t", ord("\n"): b"\\n", ord("\r"): b"\\r"}


def _header_name(name: bytes) -> bytes:
    """A path as git writes it on a ``---``/``+++`` line, so that ``git apply`` and
    ``patch -p1`` read the same name: C-quoted when it holds a quote, a backslash
    or a control character; followed by a tab when it holds a space (without it,
    ``patch`` takes the name to end at the first space)."""
    if any(byte < 0x20 or byte == 0x7F or byte in b'"\\' for byte in name):
        quoted = b"".join(_C_ESCAPES.get(byte) or (b"\\%03o" % byte if byte < 0x20 or byte == 0x7F else bytes([byte])) for byte in name)
        return b'"' + quoted + b'"'
    return name + b"\t" if b" " in name else name


# -- JSON -------------------------------------------------------------------------

_INTERNAL_FIELDS = ("file_line", "file_column", "change_lines", "edits_imports", "as_read", "file_as_read")


def finding_record(path: str, report: FileFinding) -> Dict[str, object]:
    """One finding as JSON-ready data: path, cell (notebooks), then the report's fields."""
    fields = report.to_dict()
    record: Dict[str, object] = {"path": path}
    if report.cell is not None:
        record["cell"] = report.cell
    for key, value in fields.items():
        if key not in record and key not in _INTERNAL_FIELDS and key != "cell":
            record[key] = value
    return record


def json_report(results: List[FileResult], summary: RunSummary) -> str:
    findings = [finding_record(result.path, report) for result in results for report in result.reports]
    errors = []
    for result in results:
        if result.failed:
            cell, message = split_error(result)
            error = {"path": result.path, "line": result.error_line, "message": message}
            if cell:
                error["cell"] = cell
            errors.append(error)
    return json.dumps({"version": 1, "findings": findings, "errors": errors, "summary": summary.to_dict()}, indent=2, ensure_ascii=False) + "\n"


# -- GitHub workflow commands ---------------------------------------------------------


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def file_position(report: FileFinding) -> Tuple[int, int]:
    """Line and column in the file itself (for notebooks: in the JSON text)."""
    if report.cell is not None and report.file_line:
        return report.file_line, report.file_column or 1
    return report.line, report.column


def _fix_note(report: FileFinding) -> str:
    if report.applied:
        return " (fixable: migrate-tpu fix)"
    if report.safety == "unsafe":
        return " (fixable: migrate-tpu fix --unsafe-fixes)"
    return " (manual)"


def github_report(results: List[FileResult]) -> str:
    """``::warning file=...,line=...,col=...,title=ID::message`` per finding,
    ``::error`` per file that could not be processed."""
    lines = []
    for result in results:
        for report in result.reports:
            line, column = file_position(report)
            cell = report.cell
            where = f"cell {cell}, line {report.line}, col {report.column}: " if cell is not None else ""
            message = f"{where}{report.message}{_fix_note(report)}"
            lines.append(
                f"::warning file={_escape_property(result.path)},line={line},col={column},"
                f"title={_escape_property(report.rule)}::{_escape_data(message)}"
            )
        if result.failed:
            cell, message = split_error(result)
            position = f",line={result.error_line}" if result.error_line and not cell else ""
            where = f"cell {cell}, line {result.error_line}: " if cell else ""
            lines.append(
                f"::error file={_escape_property(result.path)}{position},title=migrate-tpu::{_escape_data(where + message)}"
            )
    return "".join(line + "\n" for line in lines)


# -- SARIF 2.1.0 --------------------------------------------------------------------

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


@dataclass(frozen=True)
class RuleInfo:
    """What a report needs to know of a rule, as plain data.

    ``properties`` are shown as they are (SARIF rule properties): what the
    rule is about is the caller's business.
    """

    id: str
    name: str
    title: str
    docs: str = ""
    safety: str = "safe"
    properties: Dict[str, str] = field(default_factory=dict, hash=False, compare=False)


def _sarif_region(line: int, column: int, end_line: int = 0, end_column: int = 0) -> Dict[str, int]:
    region = {"startLine": max(1, int(line or 1))}
    if column:
        region["startColumn"] = max(1, int(column))
    if end_line:
        region["endLine"] = max(region["startLine"], int(end_line))
        if end_column:
            region["endColumn"] = max(1, int(end_column))
    return region


def _edit_region(edit: Dict[str, object]) -> Dict[str, int]:
    """The span an edit replaces; its places are whole numbers (the JSON format's "edits")."""
    return _sarif_region(cast(int, edit["line"]), cast(int, edit["column"]), cast(int, edit["end_line"]), cast(int, edit["end_column"]))


def _sarif_fix(path: str, report: FileFinding) -> Optional[Dict[str, object]]:
    edits = list(report.edits)
    if not edits or report.cell is not None:
        return None  # notebook edits are in cell coordinates, not the file's
    if any("line" not in edit for edit in edits):
        return None  # an import to add has no fixed place in the file
    replacements = [
        {
            "deletedRegion": _edit_region(edit),
            "insertedContent": {"text": edit["content"]},
        }
        for edit in edits
    ]
    title = report.fix_title or f"Fix {report.rule}"
    if report.safety == "unsafe":
        title += " (unsafe: may change behaviour)"
    return {
        "description": {"text": title},
        "artifactChanges": [{"artifactLocation": {"uri": path, "uriBaseId": "%SRCROOT%"}, "replacements": replacements}],
    }


def _sarif_result(path: str, report: FileFinding, rule_index: int) -> Dict[str, object]:
    """A finding as a SARIF result: a notebook's is placed in the file, its place in its cell told in its message and properties."""
    cell = report.cell
    if cell is not None:
        line, column = file_position(report)
        region = _sarif_region(line, column)
        text = f"cell {cell}, line {report.line}, col {report.column}: {report.message}"
    else:
        region = _sarif_region(report.line, report.column, report.end_line, report.end_column)
        text = report.message
    properties: Dict[str, object] = {"safety": report.safety, "fixable": bool(report.applied)}
    if cell is not None:
        properties.update({"cell": cell, "cellLine": report.line, "cellColumn": report.column})
    item: Dict[str, object] = {
        "ruleId": report.rule,
        "ruleIndex": rule_index,
        "level": "warning",
        "message": {"text": text + _fix_note(report)},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": path, "uriBaseId": "%SRCROOT%"}, "region": region}}],
        "properties": properties,
    }
    fix = _sarif_fix(path, report)
    if fix:
        item["fixes"] = [fix]
    return item


def _sarif_notifications(results: List[FileResult]) -> List[Dict[str, object]]:
    """An error notification for each file that failed, at its error's line where it has one."""
    notifications: List[Dict[str, object]] = []
    for result in results:
        if result.failed:
            cell, message = split_error(result)
            physical: Dict[str, object] = {"artifactLocation": {"uri": result.path, "uriBaseId": "%SRCROOT%"}}
            if result.error_line and not cell:
                physical["region"] = _sarif_region(result.error_line, 0)
            location = {"physicalLocation": physical}
            notifications.append(
                {
                    "level": "error",
                    "message": {"text": (f"cell {cell}, line {result.error_line}: " if cell else "") + message},
                    "locations": [location],
                }
            )
    return notifications


def sarif_report(results: List[FileResult], rules: List[RuleInfo], tool_version: str, information_uri: Optional[str] = None) -> str:
    known = {rule.id: index for index, rule in enumerate(rules)}
    rule_list = list(rules)
    sarif_results = []
    for result in results:
        for report in result.reports:
            if report.rule not in known:
                # A finding of a rule the caller did not list: listed under its id.
                known[report.rule] = len(rule_list)
                rule_list.append(RuleInfo(report.rule, report.rule, report.message))
            sarif_results.append(_sarif_result(result.path, report, known[report.rule]))
    notifications = _sarif_notifications(results)
    driver: Dict[str, object] = {
        "name": "migrate-tpu",
        "version": tool_version,
        "semanticVersion": tool_version,
        "rules": [_sarif_rule(rule) for rule in rule_list],
    }
    if information_uri:
        driver["informationUri"] = information_uri
    run = {
        "tool": {"driver": driver},
        "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "The folder migrate-tpu ran in."}}},
        "columnKind": "unicodeCodePoints",
        "invocations": [{"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}],
        "results": sarif_results,
    }
    document = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _sarif_rule(rule: RuleInfo) -> Dict[str, object]:
    properties = {"safety": rule.safety}
    properties.update(rule.properties)
    entry: Dict[str, object] = {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": _plain(rule.docs) or rule.title},
        "defaultConfiguration": {"level": "warning"},
        "properties": properties,
    }
    if rule.docs:
        entry["help"] = {"text": rule.docs, "markdown": rule.docs}
    return entry


def _plain(docs: str) -> str:
    """The 'What it does' and 'Why' paragraphs of a rule's Markdown docs."""
    keep, sections = [], {"## What it does", "## Why"}
    current = None
    for line in docs.splitlines():
        if line.startswith("#"):
            current = line.strip()
            continue
        if current in sections and line.strip():
            keep.append(line.strip())
    return " ".join(keep)


# -- Markdown -----------------------------------------------------------------------

MARKDOWN_DIFF_LIMIT = 60_000  # GitHub comments stop at 65,536 characters


def _cell(text: object) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown_report(results: List[FileResult], summary: RunSummary, rules: List[RuleInfo], diff_limit: int = MARKDOWN_DIFF_LIMIT) -> str:
    """A summary table and the diff, for ``$GITHUB_STEP_SUMMARY`` or a PR comment."""
    titles = {rule.id: rule.title for rule in rules}
    total = sum(summary.by_rule.values())
    out = ["## migrate-tpu", ""]
    if not total and not summary.errors:
        out += [f"Nothing to migrate: {count(summary.files, 'file')} scanned.", ""]
        return "\n".join(out)
    out.append(
        f"**{count(summary.files, 'file')}** scanned, **{summary.changed}** would change, **{count(total, 'finding')}** "
        f"({summary.applied} fixable with `migrate-tpu fix`, {summary.unsafe_hidden} with `migrate-tpu fix --unsafe-fixes`, "
        f"{summary.remaining - summary.unsafe_hidden} for manual work), **{count(summary.errors, 'error')}**."
    )
    out.append("")
    fixable = Counter(r.rule for result in results for r in result.reports if r.applied)
    if summary.by_rule:
        out += ["| Rule | What | Findings | Fixable |", "| --- | --- | ---: | ---: |"]
        for rule, number in sorted(summary.by_rule.items()):
            out.append(f"| `{rule}` | {_cell(titles.get(rule, ''))} | {number} | {fixable.get(rule, 0)} |")
        out.append("")
    # Not fixed with these settings: an unsafe fix is one flag away, the rest is manual work.
    remaining = [(result.path, r) for result in results for r in result.reports if not r.applied]
    unsafe = [(path, report) for path, report in remaining if report.safety == "unsafe"]
    manual = [(path, report) for path, report in remaining if report.safety != "unsafe"]
    for title, group in ((f"Fixable with `--unsafe-fixes` ({len(unsafe)})", unsafe), (f"Manual work ({len(manual)})", manual)):
        if group:
            out += [f"<details><summary>{title}</summary>", "", "| Where | Rule | Message |", "| --- | --- | --- |"]
            for path, report in group:
                out.append(f"| `{_cell(location(path, report))}` | `{report.rule}` | {_cell(report.message)} |")
            out += ["", "</details>", ""]
    failed = [result for result in results if result.failed]
    if failed:
        out += ["### Errors", ""]
        out += [f"- `{_cell(error_line(result))}`" for result in failed]
        out.append("")
    diff = "".join(result.diff.decode("utf-8", "replace") for result in results if result.diff)
    if diff:
        truncated = len(diff) > diff_limit
        if truncated:
            diff = diff[:diff_limit].rsplit("\n", 1)[0] + "\n"
        fence = "```"
        while fence in diff:
            fence += "`"
        out += ["### Diff", "", "<details open><summary>`migrate-tpu fix` would make these changes</summary>", "", fence + "diff", diff.rstrip("\n"), fence, ""]
        if truncated:
            out.append("_The diff was cut short; run `migrate-tpu diff` locally for all of it._")
            out.append("")
        out += ["</details>", ""]
    return "\n".join(out)
