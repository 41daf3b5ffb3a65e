"""An interpreter's installed distributions, for ``migrate-tpu check --installed`` (read only).

Which folders hold the distributions is asked of the interpreter itself (``sysconfig``'s
``purelib`` and ``platlib``, ``site``'s folders and the user's, in ``sys.path`` order);
which files belong to which distribution is read from the metadata pip and setuptools
leave beside them: a ``*.dist-info`` folder's ``RECORD`` (every installed file), an
``*.egg-info`` folder's ``installed-files.txt``, else its ``top_level.txt``. Only the
``.py`` files inside those folders are checked; scripts pip writes elsewhere, and an
editable install's source (it lives in the user's own tree: check it by its path), are not.

Nothing here writes: the files are handed to ``check`` as they are, and this module's
reports only add the distribution each finding's file belongs to. Which distributions
a run leaves out (the ones that define the APIs the rules look for) is the caller's word;
the engine names none.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, IO, Iterable, List, Optional, Sequence, Tuple

from migrate_tpu.engine.config import path_matches
from migrate_tpu.engine.one_file import FileResult, display_path
from migrate_tpu.engine.report import count, write_text_findings


class InstalledError(Exception):
    """The interpreter cannot be asked, or a distribution named is not installed: a one-line reason."""




@dataclass(frozen=True)
class Interpreter:
    """What an interpreter said of itself: its path, its version and its folders of distributions
    (asked by :func:`migrate_tpu.installed_check.ask_interpreter`, the wiring of ``check --installed``:
    the engine runs no process)."""

    python: str
    version: str
    folders: Tuple[str, ...]


def normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares them: ``TF_Keras`` and ``tf-keras`` are one."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Distribution:
    """One installed distribution: its name and version as its metadata says, where that
    metadata is, the ``.py`` files it installed (absolute, sorted), and the folders each a
    project of its own (its top-level packages) that hold them. ``editable``: where an
    editable install's source is (its files are not listed)."""

    name: str
    version: str
    metadata: str
    files: Tuple[str, ...]
    tops: Tuple[str, ...]
    editable: Optional[str] = None

    @property
    def key(self) -> str:
        return normalized(self.name)

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


def _headers(path: str) -> Dict[str, str]:
    """The first ``Name:`` and ``Version:`` of a METADATA/PKG-INFO file (its header block)."""
    found: Dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                key = key.strip().lower()
                if key in ("name", "version") and key not in found:
                    found[key] = value.strip()
                if len(found) == 2:
                    break
    except OSError:
        pass
    return found


def _read_lines(path: str) -> Optional[List[str]]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()
    except OSError:
        return None


def _record_files(info: str, site: str) -> Optional[List[str]]:
    """The files a ``*.dist-info`` folder's RECORD lists (absolute), or None without one."""
    lines = _read_lines(os.path.join(info, "RECORD"))
    if lines is None:
        return None
    files = []
    for row in csv.reader(io.StringIO("\n".join(lines))):
        if row and row[0]:
            files.append(os.path.normpath(os.path.join(site, row[0])))
    return files


def _egg_files(info: str, site: str) -> Optional[List[str]]:
    """The files of an ``*.egg-info`` folder: its ``installed-files.txt`` (relative to the
    folder itself), else what its ``top_level.txt`` names in the site folder."""
    lines = _read_lines(os.path.join(info, "installed-files.txt"))
    if lines is not None:
        return [os.path.normpath(os.path.join(info, line.strip())) for line in lines if line.strip()]
    names = _read_lines(os.path.join(info, "top_level.txt"))
    if names is None:
        return None
    files = []
    for name in (name.strip() for name in names):
        if not name:
            continue
        module = os.path.join(site, name + ".py")
        if os.path.isfile(module):
            files.append(module)
        folder = os.path.join(site, name)
        if os.path.isdir(folder):
            for where, folders, names_here in os.walk(folder):
                folders[:] = sorted(f for f in folders if f != "__pycache__")
                files += [os.path.join(where, n) for n in names_here]
    return files


def _editable_source(info: str) -> Optional[str]:
    """Where an editable install's source is (``direct_url.json``), or None."""
    try:
        with open(os.path.join(info, "direct_url.json"), encoding="utf-8") as handle:
            direct = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(direct, dict) or not (direct.get("dir_info") or {}).get("editable"):
        return None
    url = str(direct.get("url", ""))
    return url[len("file://"):] if url.startswith("file://") else url or "?"


def _top_of(path: str, site: str) -> str:
    """The project a file of ``site`` belongs to: the top-level package holding it (one level
    deeper under a namespace package such as ``google``); a module right in ``site``: ``site``."""
    parts = os.path.relpath(path, site).split(os.sep)
    if len(parts) == 1:
        return site
    top = os.path.join(site, parts[0])
    if len(parts) > 2 and not os.path.exists(os.path.join(top, "__init__.py")):
        top = os.path.join(top, parts[1])
    return top


def _inside(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def distributions(folders: Sequence[str]) -> List[Distribution]:
    """Every distribution installed in ``folders`` (the first of a name wins, as on ``sys.path``),
    sorted by name; each with the ``.py`` files it installed in its folder."""
    found: Dict[str, Distribution] = {}
    for site in folders:
        try:
            entries = sorted(os.listdir(site))
        except OSError:
            continue
        for entry in entries:
            info = os.path.join(site, entry)
            if entry.endswith(".dist-info") and os.path.isdir(info):
                meta = _headers(os.path.join(info, "METADATA"))
                listed = _record_files(info, site)
            elif entry.endswith(".egg-info"):
                if os.path.isdir(info):
                    meta = _headers(os.path.join(info, "PKG-INFO"))
                    listed = _egg_files(info, site)
                else:  # an old distutils install: the metadata file alone, no list of files
                    meta, listed = _headers(info), None
            else:
                continue
            stem = entry.rsplit(".", 1)[0]
            name = meta.get("name") or stem.split("-", 1)[0]
            version = meta.get("version") or (stem.split("-")[1] if "-" in stem else "?")
            if normalized(name) in found:
                continue
            editable = _editable_source(info) if entry.endswith(".dist-info") else None
            files: List[str] = []
            if editable is None:
                files = sorted({path for path in (listed or ()) if path.endswith(".py") and _inside(path, site) and os.path.isfile(path)})
            tops = tuple(sorted({_top_of(path, site) for path in files}))
            found[normalized(name)] = Distribution(name, version, info, tuple(files), tops, editable)
    return sorted(found.values(), key=lambda d: d.key)


@dataclass
class Inventory:
    """What ``check --installed`` reads: the interpreter, the distributions to check, the
    ones left out (and why), and which distribution each file belongs to."""

    interpreter: Interpreter
    checked: List[Distribution]
    left_out: List[Distribution] = field(default_factory=list)
    editable: List[Distribution] = field(default_factory=list)
    excluded_files: int = 0
    owners: Dict[str, Distribution] = field(default_factory=dict)

    def files(self) -> List[str]:
        """The files to check, a distribution's together, distributions by name."""
        return [path for distribution in self.checked for path in distribution.files if path in self.owners]

    def tops(self) -> Tuple[str, ...]:
        """The folders each a project of its own (``compose.ProjectFiles``): the top-level
        packages, and the folders of distributions whose modules lie right in them."""
        return tuple(sorted({top for distribution in self.checked for top in distribution.tops}))

    def flat_tops(self) -> Tuple[str, ...]:
        """The tops that are folders of distributions: their project is the modules right in them."""
        return tuple(folder for folder in self.interpreter.folders if folder in self.tops())

    def owner(self, path: str) -> Optional[Distribution]:
        """The distribution of a result's path (as shown, relative or not)."""
        return self.owners.get(os.path.abspath(path))

    def describe(self) -> str:
        """One line for stderr: what is read, where, and what is left out."""
        files = sum(1 for _ in self.files())
        text = (f"migrate-tpu: checking {count(len(self.checked), 'distribution')} ({count(files, 'file')}) installed for "
                f"{self.interpreter.python} (Python {self.interpreter.version}) in {', '.join(self.interpreter.folders) or 'no folder'}")
        if self.left_out:
            text += f"; not checked, as they define the APIs rather than call them: {', '.join(d.label for d in self.left_out)}"
        if self.editable:
            text += f"; editable installs, to check by their paths: {', '.join(f'{d.label} ({d.editable})' for d in self.editable)}"
        if self.excluded_files:
            text += f"; {count(self.excluded_files, 'file')} excluded"
        return text


def inventory(interpreter: Interpreter, names: Sequence[str] = (), leave_out: Iterable[str] = (), exclude: Sequence[str] = ()) -> Inventory:
    """The distributions of ``interpreter`` to check: those ``names`` names (all without
    names), less those in ``leave_out`` unless named; ``exclude``: globs matched against a
    file's name and its path relative to its folder of distributions. Raises
    :class:`InstalledError` for a name that is not installed."""
    every = distributions(interpreter.folders)
    by_key = {distribution.key: distribution for distribution in every}
    wanted = [normalized(name) for name in names]
    missing = [name for name, key in zip(names, wanted) if key not in by_key]
    if missing:
        raise InstalledError(f"not installed for {interpreter.python}: {', '.join(missing)} "
                             f"(installed: {', '.join(d.name for d in every) or 'nothing'})")
    skip = {normalized(name) for name in leave_out}
    result = Inventory(interpreter, [])
    for distribution in every:
        if wanted and distribution.key not in wanted:
            continue
        if distribution.editable is not None:
            result.editable.append(distribution)
        elif not wanted and distribution.key in skip:
            result.left_out.append(distribution)
        elif distribution.files:
            result.checked.append(distribution)
    for distribution in result.checked:
        site = os.path.dirname(distribution.metadata)
        for path in distribution.files:
            if exclude and any(path_matches(os.path.relpath(path, site).replace(os.sep, "/"), glob, None) for glob in exclude):
                result.excluded_files += 1
                continue
            result.owners.setdefault(path, distribution)
    return result


# -- reports ------------------------------------------------------------------------


def by_distribution(results: Sequence[FileResult], inventory: Inventory) -> List[Tuple[Optional[Distribution], List[FileResult]]]:
    """The results grouped by distribution, in the inventory's order (None: a file no
    distribution owns, which only a bug would give)."""
    groups: Dict[Optional[str], List[FileResult]] = {}
    owners: Dict[Optional[str], Optional[Distribution]] = {}
    for result in results:
        owner = inventory.owner(result.path)
        key = owner.key if owner else None
        groups.setdefault(key, []).append(result)
        owners[key] = owner
    order = [d.key for d in inventory.checked if d.key in groups] + ([None] if None in groups else [])
    return [(owners[key], groups[key]) for key in order]


def _findings(results: Iterable[FileResult]) -> int:
    return sum(len(result.reports) for result in results)


def write_text_by_distribution(results: Sequence[FileResult], inventory: Inventory, out: IO[str]) -> None:
    """The text report, a ``name version (N findings)`` line before each distribution's
    findings (``path:line:col: ID message``, as ``check`` writes them)."""
    for owner, group in by_distribution(results, inventory):
        findings = _findings(group)
        errors = sum(1 for result in group if result.failed)
        if not findings:
            continue  # its errors are on stderr, as check prints them
        label = owner.label if owner else "(no distribution)"
        out.write(f"{label} ({count(findings, 'finding')}{', ' + count(errors, 'error') if errors else ''})\n")
        write_text_findings(group, out)


def distribution_summary(results: Sequence[FileResult], inventory: Inventory) -> str:
    """``By distribution: name version N, ...`` for the closing summary; empty when clean."""
    parts = [f"{owner.label if owner else '(no distribution)'} {_findings(group)}"
             for owner, group in by_distribution(results, inventory) if _findings(group)]
    return "By distribution: " + ", ".join(parts) if parts else ""


def _where(path: str, inventory: Inventory) -> Dict[str, str]:
    owner = inventory.owner(path)
    return {"distribution": owner.name, "version": owner.version} if owner else {}


def distributions_record(results: Sequence[FileResult], inventory: Inventory) -> Dict[str, object]:
    """The ``installed`` part of the JSON report: the interpreter, and each distribution
    checked with its files and findings (the ones left out named)."""
    findings: Dict[str, int] = {}
    for owner, group in by_distribution(results, inventory):
        if owner is not None:
            findings[owner.key] = _findings(group)
    return {
        "python": inventory.interpreter.python,
        "python_version": inventory.interpreter.version,
        "folders": list(inventory.interpreter.folders),
        "distributions": [
            {"name": d.name, "version": d.version, "files": sum(1 for p in d.files if p in inventory.owners), "findings": findings.get(d.key, 0),
             "metadata": display_path(Path(d.metadata))}
            for d in inventory.checked
        ],
        "not_checked": [{"name": d.name, "version": d.version, "why": "defines the APIs"} for d in inventory.left_out]
        + [{"name": d.name, "version": d.version, "why": f"editable install of {d.editable}"} for d in inventory.editable],
    }


def with_distributions_json(report: str, results: Sequence[FileResult], inventory: Inventory) -> str:
    """The JSON report with each finding's and error's ``distribution`` and ``version``, and
    the ``installed`` record."""
    document = json.loads(report)
    for entry in document.get("findings", []) + document.get("errors", []):
        entry.update(_where(entry["path"], inventory))
    document["installed"] = distributions_record(results, inventory)
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def with_distributions_sarif(report: str, inventory: Inventory) -> str:
    """The SARIF report with each result's ``distribution`` and ``version`` among its properties."""
    document = json.loads(report)
    for run in document.get("runs", []):
        for result in run.get("results", []):
            uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            result.setdefault("properties", {}).update(_where(uri, inventory))
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def with_distributions_markdown(report: str, results: Sequence[FileResult], inventory: Inventory) -> str:
    """The Markdown summary with a table of findings by distribution after its first paragraph."""
    rows = [(owner, _findings(group)) for owner, group in by_distribution(results, inventory) if _findings(group)]
    if not rows:
        return report
    table = ["| Distribution | Version | Findings |", "| --- | --- | ---: |"]
    table += [f"| `{owner.name if owner else '?'}` | {owner.version if owner else ''} | {number} |" for owner, number in rows]
    head, marker, rest = report.partition("\n\n")
    first, marker2, rest2 = rest.partition("\n\n")
    return head + marker + first + marker2 + "\n".join(table) + "\n\n" + rest2
