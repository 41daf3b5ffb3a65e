"""Where settings come from: the ``[tool.migrate-tpu]`` table, path patterns, requirements.

Settings come from ``[tool.migrate-tpu]`` in the nearest ``pyproject.toml``
(searched from the first path given, upwards), then from the command line,
which wins. Path patterns in the file (``exclude``, ``per-file-ignores``) are
relative to the folder of that ``pyproject.toml``.

:func:`find_requirement` reads a package's requirement from the nearest
``pyproject.toml`` (PEP 621 dependencies and extras, Poetry) or
``requirements*.txt``; which package, and what its version means, the caller
says (``--target auto``: the codemod's ``targets`` module).
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - Python < 3.11
    import tomli as _toml

SECTION = "migrate-tpu"


class ConfigError(Exception):
    """A settings file that cannot be used; the message names the file and key."""


# -- the file ---------------------------------------------------------------------

_KEYS = {
    "select": "list",
    "ignore": "list",
    "exclude": "list",
    "target": "str",
    "unsafe-fixes": "bool",
    "jobs": "int",
    "respect-gitignore": "bool",
    "force-exclude": "bool",
    "per-file-ignores": "table",
}


def _read_toml(path: Path) -> Dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            document: Dict[str, Any] = _toml.load(handle)
            return document
    except _toml.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}")


def _section(document: Dict[str, Any]) -> Optional[object]:
    tool = document.get("tool")
    if isinstance(tool, dict) and SECTION in tool:
        section: object = tool[SECTION]
        return section
    return None


def find_config(start: Path) -> Optional[Path]:
    """The nearest ``pyproject.toml`` at or above ``start`` with ``[tool.migrate-tpu]``."""
    folder = start if start.is_dir() else start.parent
    folder = Path(os.path.abspath(folder))
    for candidate in [folder, *folder.parents]:
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file():
            try:
                text = pyproject.read_text("utf-8", errors="replace")
            except OSError:
                continue
            if SECTION in text and _section(_read_toml(pyproject)) is not None:
                return pyproject
    return None


def _ids(value: object, where: str) -> Tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where} must be a list of rule ids")
    parts: List[str] = []
    for item in value:
        parts += [p.strip().upper() for p in item.split(",") if p.strip()]
    return tuple(parts)


def load_config(path: Path) -> Dict[str, object]:
    """The ``[tool.migrate-tpu]`` table of ``path``, checked; keys as in :data:`_KEYS`."""
    table = _section(_read_toml(path))
    if table is None:
        raise ConfigError(f"{path}: no [tool.{SECTION}] table")
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{SECTION}] must be a table")
    values: Dict[str, object] = {}
    for raw_key, value in table.items():
        key = raw_key.replace("_", "-")
        where = f"{path}: [tool.{SECTION}] {raw_key}"
        kind = _KEYS.get(key)
        if kind is None:
            known = ", ".join(sorted(_KEYS))
            raise ConfigError(f"{where}: unknown setting (known: {known})")
        if kind == "list":
            values[key] = _ids(value, where) if key != "exclude" else _strings(value, where)
        elif kind == "bool":
            if not isinstance(value, bool):
                raise ConfigError(f"{where} must be true or false")
            values[key] = value
        elif kind == "int":
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"{where} must be a whole number (0: one per core)")
            values[key] = value
        elif kind == "str":
            if not isinstance(value, str):
                raise ConfigError(f"{where} must be a string")
            values[key] = value
        else:
            if not isinstance(value, dict):
                raise ConfigError(f'{where} must be a table of "glob" = ["ID", ...]')
            values[key] = tuple((glob, _ids(ids, f"{where}.{glob!r}")) for glob, ids in value.items())
    return values


def _strings(value: object, where: str) -> Tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where} must be a list of glob patterns")
    return tuple(value)


# -- matching paths ----------------------------------------------------------------


def relative_to_base(path: str, base: Optional[str]) -> str:
    absolute = Path(os.path.abspath(path))
    if base:
        try:
            return absolute.relative_to(Path(os.path.abspath(base))).as_posix()
        except ValueError:
            pass
    return Path(path).as_posix()


def path_matches(path: str, pattern: str, base: Optional[str]) -> bool:
    """``pattern`` (a glob) matches the file's name, or its path relative to ``base``."""
    relative = relative_to_base(path, base)
    pattern = pattern.rstrip("/")
    if pattern.startswith("./"):
        pattern = pattern[2:]
    name = relative.rsplit("/", 1)[-1]
    return (
        fnmatch.fnmatchcase(name, pattern)
        or fnmatch.fnmatchcase(relative, pattern)
        or fnmatch.fnmatchcase(relative, pattern + "/*")
    )


# -- a package's requirement ---------------------------------------------------------

_CLAUSE = re.compile(r"(===|==|~=|>=|<=|!=|>|<)\s*v?(\d+)(?:\.(\d+|\*))?")


@dataclass(frozen=True)
class Requirement:
    """One requirement line naming a package: as written, the file it is in, its lowest (major, minor)."""

    requirement: str
    source: str
    lower: Optional[Tuple[int, int]]


def _lower_bound(spec: str) -> Optional[Tuple[int, int]]:
    lower: Optional[Tuple[int, int]] = None
    for operator, major, minor in _CLAUSE.findall(spec):
        if operator in ("==", "===", "~=", ">=", ">"):
            version = (int(major), int(minor) if minor and minor != "*" else 0)
            lower = version if lower is None else max(lower, version)
    return lower


def requirement_in_line(line: str, source: str, packages: str) -> Optional[Requirement]:
    """The requirement ``line`` states for a package whose name matches ``packages`` (a regular expression), if any."""
    match = re.match(rf"^\s*({packages})\s*(\[[^\]]*\])?\s*(?P<spec>[^;#]*)", line, re.IGNORECASE)
    if not match:
        return None
    rest = line[match.end(1) :]
    if rest[:1] and not (rest[:1].isspace() or rest[:1] in "[=<>~!;#"):
        return None  # a longer name that starts the same (``name-datasets`` for ``name``)
    spec = match.group("spec").strip()
    return Requirement(line.strip(), source, _lower_bound(spec))


def _requirements_in_pyproject(path: Path, packages: str) -> Iterable[Requirement]:
    try:
        document = _read_toml(path)
    except ConfigError:
        return
    project = document.get("project") or {}
    requirements = list(project.get("dependencies") or [])
    for extra in (project.get("optional-dependencies") or {}).values():
        requirements += list(extra or [])
    for requirement in requirements:
        if isinstance(requirement, str):
            found = requirement_in_line(requirement, str(path), packages)
            if found:
                yield found
    poetry = ((document.get("tool") or {}).get("poetry") or {}).get("dependencies") or {}
    for name, value in poetry.items():
        if re.fullmatch(packages, name, re.IGNORECASE):
            spec = value.get("version", "") if isinstance(value, dict) else str(value)
            spec = re.sub(r"^\^(\d+(?:\.\d+)?)", r">=\1", spec.strip())
            spec = re.sub(r"^(\d)", r"==\1", spec)
            yield Requirement(f"{name} {value}", str(path), _lower_bound(spec))


def _requirements_in_file(path: Path, packages: str) -> Iterable[Requirement]:
    try:
        lines = path.read_text("utf-8", errors="replace").splitlines()
    except OSError:
        return
    for line in lines:
        found = requirement_in_line(line, str(path), packages)
        if found:
            yield found


def find_requirement(start: Path, packages: str) -> Optional[Requirement]:
    """The requirement on ``packages`` nearest to ``start``: pyproject first, then requirements files.

    The search goes up from ``start`` and stops at the repository root (a
    folder holding ``.git``). A requirement with a lower bound wins over one
    without in the same folder.
    """
    folder = Path(os.path.abspath(start if start.is_dir() else start.parent))
    for candidate in [folder, *folder.parents]:
        found: List[Requirement] = []
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file():
            found += list(_requirements_in_pyproject(pyproject, packages))
        for requirements in sorted(candidate.glob("requirements*.txt")):
            found += list(_requirements_in_file(requirements, packages))
        if found:
            with_bound = [item for item in found if item.lower is not None]
            return with_bound[0] if with_bound else found[0]
        if (candidate / ".git").exists():
            break
    return None
