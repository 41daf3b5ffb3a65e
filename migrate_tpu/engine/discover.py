"""Which files a run looks at: paths and directories, excludes, ``.gitignore``.

Directories are walked in sorted order; version-control folders, virtual
environments, ``site-packages`` and what ``.gitignore`` ignores are skipped.
Files named explicitly on the command line are always taken. Symbolic links
are not followed while walking.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

SOURCE_SUFFIXES = (".py", ".ipynb")

# Folders never worth walking (the same spirit as ruff's default excludes).
SKIPPED_DIRECTORIES = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        ".tox",
        ".nox",
        ".venv",
        "venv",
        ".direnv",
        ".eggs",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ipynb_checkpoints",
        ".migrate-tpu-cache",
        "__pycache__",
        "__pypackages__",
        "node_modules",
        "site-packages",
        "dist-packages",
        "buck-out",
    }
)


@dataclass(frozen=True)
class Found:
    """A file to process, or a path that was skipped or failed (``problem`` set)."""

    path: Path
    problem: Optional[str] = None
    is_error: bool = False


def _is_virtualenv(directory: Path) -> bool:
    return (directory / "pyvenv.cfg").is_file() or (directory / "conda-meta").is_dir()


class _IgnoreRules:
    """``.gitignore`` files from the walk's roots down, each applied below its folder."""

    def __init__(self) -> None:
        self._specs: dict = {}

    def _spec(self, directory: Path):
        if directory not in self._specs:
            spec = None
            ignore_file = directory / ".gitignore"
            if ignore_file.is_file():
                try:
                    import pathspec

                    with open(ignore_file, encoding="utf-8", errors="replace") as handle:
                        spec = pathspec.GitIgnoreSpec.from_lines(handle)
                except OSError:
                    spec = None
            self._specs[directory] = spec
        return self._specs[directory]

    def ignored(self, path: Path, is_dir: bool, top: Path) -> bool:
        directory = path.parent
        chain = []
        while True:
            chain.append(directory)
            if directory == top or (directory / ".git").exists() or directory.parent == directory:
                break
            directory = directory.parent
        for folder in chain:
            spec = self._spec(folder)
            if spec is None:
                continue
            relative = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            if spec.match_file(relative):
                return True
        return False


def _excluded(path: Path, patterns: Sequence[str], base: Path) -> bool:
    if not patterns:
        return False
    try:
        relative = path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        relative = path.as_posix()
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if fnmatch.fnmatch(path.name, pattern) or fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(relative, pattern + "/*"):
            return True
    return False


def discover(
    paths: Iterable[str],
    exclude: Sequence[str] = (),
    respect_gitignore: bool = True,
    base: Optional[Path] = None,
) -> Iterator[Found]:
    base = base or Path.cwd()
    ignores = _IgnoreRules()
    for raw in paths:
        path = Path(raw)
        if path.is_symlink() and not path.exists():
            yield Found(path, "broken symbolic link", is_error=True)
            continue
        if not path.exists():
            yield Found(path, "no such file or directory", is_error=True)
            continue
        if path.is_file():
            yield Found(path)
            continue
        yield from _walk(path, exclude, respect_gitignore, ignores, base)


def _walk(top: Path, exclude, respect_gitignore: bool, ignores: _IgnoreRules, base: Path) -> Iterator[Found]:
    try:
        entries = sorted(os.scandir(top), key=lambda e: e.name)
    except OSError as error:
        yield Found(top, f"cannot list directory: {error.strerror}", is_error=True)
        return
    for entry in entries:
        path = Path(entry.path)
        if entry.is_symlink():
            if entry.name.endswith(SOURCE_SUFFIXES):
                yield Found(path, _symlink_reason(path))
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        if is_dir:
            if entry.name in SKIPPED_DIRECTORIES or _is_virtualenv(path):
                continue
            if _excluded(path, exclude, base):
                continue
            if respect_gitignore and ignores.ignored(path, True, top):
                continue
            yield from _walk(path, exclude, respect_gitignore, ignores, base)
        elif entry.name.endswith(SOURCE_SUFFIXES):
            if _excluded(path, exclude, base):
                continue
            if respect_gitignore and ignores.ignored(path, False, top):
                continue
            yield Found(path)


def _symlink_reason(path: Path) -> str:
    try:
        path.resolve(strict=True)
    except (OSError, RuntimeError):
        return "skipped: symbolic link that loops or points nowhere"
    return "skipped: symbolic link (not followed while walking; name the file to process it)"


def is_notebook(path: Path) -> bool:
    return path.suffix == ".ipynb"


def resolve_module(module: str, importing_file: str, roots: Tuple[str, ...] = ()) -> Optional[str]:
    """The file of ``module`` (``pkg.mod`` or relative ``..mod``) imported from ``importing_file``."""
    level = len(module) - len(module.lstrip("."))
    parts = [p for p in module.lstrip(".").split(".") if p]
    start = Path(importing_file).resolve().parent
    candidates_roots: List[Path] = []
    if level:
        root = start
        for _ in range(level - 1):
            root = root.parent
        candidates_roots.append(root)
    else:
        # Script-style imports (the importing file's folder on sys.path), the
        # package root above it, and the run's roots.
        folder = start
        candidates_roots.append(folder)
        while (folder / "__init__.py").exists() and folder.parent != folder:
            folder = folder.parent
            candidates_roots.append(folder)
        candidates_roots += [Path(r).resolve() for r in roots]
    for root in candidates_roots:
        target = root.joinpath(*parts) if parts else root
        for candidate in (target.with_suffix(".py") if parts else None, target / "__init__.py"):
            if candidate is not None and candidate.is_file():
                return str(candidate)
    return None
