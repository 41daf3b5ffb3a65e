"""Which files a run looks at: paths and directories, excludes, ``.gitignore``.

Directories are walked in sorted order; version-control folders, virtual
environments, ``site-packages`` and what ``.gitignore`` ignores are skipped.
Files named explicitly on the command line are always taken. Symbolic links
are not followed while walking (see :func:`discover` for what is reported).
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Generator, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

if TYPE_CHECKING:  # pathspec is imported when a .gitignore is met, not at start-up
    from pathspec import GitIgnoreSpec

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
        self._specs: Dict[Path, Optional[GitIgnoreSpec]] = {}
        self._chains: Dict[Tuple[Path, Path], List[Tuple[Path, GitIgnoreSpec]]] = {}

    def _spec(self, directory: Path) -> Optional[GitIgnoreSpec]:
        if directory not in self._specs:
            spec: Optional[GitIgnoreSpec] = None
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

    def _chain(self, directory: Path, top: Path) -> List[Tuple[Path, GitIgnoreSpec]]:
        """``(folder, spec)`` for each ``.gitignore`` from ``directory`` up to ``top`` (or the repository root)."""
        key = (directory, top)
        chain = self._chains.get(key)
        if chain is None:
            chain = []
            folder = directory
            while True:
                spec = self._spec(folder)
                if spec is not None:
                    chain.append((folder, spec))
                if folder == top or folder.parent == folder or (folder / ".git").exists():
                    break
                folder = folder.parent
            self._chains[key] = chain
        return chain

    def ignored(self, path: Path, is_dir: bool, top: Path) -> bool:
        """Whether a ``.gitignore`` between ``path`` and the walk's root ``top`` ignores it."""
        for folder, spec in self._chain(path.parent, top):
            relative = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            if spec.match_file(relative):
                return True
        return False


def is_excluded(path: Path, patterns: Sequence[str], base: Path) -> bool:
    """Whether ``path`` matches one of the ``exclude`` patterns (its name, or its path relative
    to ``base``, or a folder above it)."""
    return _excluded(path, patterns, base)


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
    follow_symlinks: bool = False,
) -> Iterator[Found]:
    """Files to process, in a stable order, and the paths skipped or failed on the way.

    Symbolic links met while walking are not followed by default: each one
    named like a source file, or pointing to a folder, or looping, is
    reported as a skip note (``is_error`` false) and left alone. A path named
    here is always followed; if it cannot be, that is an error. With
    ``follow_symlinks``, links are followed, folders already walked are not
    walked again (a note), and links that cannot be followed are errors.
    A file reached twice is processed once.
    """
    base = base or Path.cwd()
    ignores = _IgnoreRules()
    seen: Set[str] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_symlink() and not path.exists():
            yield Found(path, _broken_link_reason(path), is_error=True)
            continue
        if not path.exists():
            yield Found(path, "no such file or directory", is_error=True)
            continue
        if not path.is_dir():  # files, and FIFOs or devices (the reader names those)
            key = os.path.realpath(path)
            if key not in seen:
                seen.add(key)
                yield Found(path)
            continue
        real = os.path.realpath(path)
        walked: Set[Optional[_Identity]] = {_identity(real)} if follow_symlinks else set()
        yield from _Walk(path, exclude, respect_gitignore, ignores, base, follow_symlinks, seen, walked).folder(path, real)


# A file's identity on disk, (device, inode): the same folder reached by two paths.
_Identity = Tuple[int, int]


def _identity(path: str) -> Optional[_Identity]:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return (status.st_dev, status.st_ino)


@dataclass
class _Walk:
    """The walk of one folder named on the command line: what stays the same in every
    folder below it (``seen`` and ``walked`` grow as it goes)."""

    root: Path
    exclude: Sequence[str]
    respect_gitignore: bool
    ignores: _IgnoreRules
    base: Path
    follow: bool
    seen: Set[str]  # the real paths of the files found, across the run's paths
    walked: Set[Optional[_Identity]]  # the folders walked, when links are followed

    def folder(self, top: Path, real: str) -> Iterator[Found]:
        try:
            entries = sorted(os.scandir(top), key=lambda e: e.name)
        except OSError as error:
            yield Found(top, f"cannot list directory: {(error.strerror or str(error)).lower()}", is_error=True)
            return
        for entry in entries:
            path = Path(entry.path)
            entry_real = os.path.join(real, entry.name)
            if entry.is_symlink():
                if not self.follow:
                    reason = _symlink_note(path, entry.name, self.root)
                    if reason is not None:
                        yield Found(path, reason)
                    continue
                is_dir, entry_real = yield from self._followed_link(entry, path)
                if is_dir is None:
                    continue
            else:
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    continue
            if is_dir:
                # (no generator between a folder and the next: a deep tree's walk nests one a level)
                if self._enters(entry, path):
                    yield from self.folder(path, entry_real)
            elif entry.name.endswith(SOURCE_SUFFIXES):
                if _excluded(path, self.exclude, self.base):
                    continue
                if self.respect_gitignore and self.ignores.ignored(path, False, self.root):
                    continue
                if entry_real in self.seen:
                    continue
                self.seen.add(entry_real)
                yield Found(path)

    def _followed_link(self, entry: "os.DirEntry[str]", path: Path) -> Generator[Found, None, Tuple[Optional[bool], str]]:
        """A link met while following links: whether it leads to a folder (None: left alone,
        reported where worth a word) and its real path."""
        try:
            status = os.stat(entry.path)
        except OSError:
            if entry.name.endswith(SOURCE_SUFFIXES) or _is_loop(path):
                yield Found(path, _broken_link_reason(path), is_error=True)
            return None, ""
        entry_real = os.path.realpath(entry.path)
        is_dir = stat.S_ISDIR(status.st_mode)
        if is_dir:
            identity = (status.st_dev, status.st_ino)
            if identity in self.walked:
                if entry.name not in SKIPPED_DIRECTORIES:
                    yield Found(path, "skipped: symbolic link to a folder already walked (a loop)")
                return None, ""
        return is_dir, entry_real

    def _enters(self, entry: "os.DirEntry[str]", path: Path) -> bool:
        """Whether the walk goes into the folder ``path`` (noted as walked when links are followed)."""
        if entry.name in SKIPPED_DIRECTORIES or _is_virtualenv(path):
            return False
        if _excluded(path, self.exclude, self.base):
            return False
        if self.respect_gitignore and self.ignores.ignored(path, True, self.root):
            return False
        if self.follow:
            folder_identity = _identity(entry.path)
            if folder_identity in self.walked:
                return False
            self.walked.add(folder_identity)
        return True


def _is_loop(path: Path) -> bool:
    try:
        os.stat(path)
    except OSError as error:
        return error.errno == errno.ELOOP
    return False


def _broken_link_reason(path: Path) -> str:
    if _is_loop(path):
        return "symbolic link loop (the link leads back to itself)"
    return f"dangling symbolic link (its target {os.readlink(path)!r} does not exist)"


def _symlink_note(path: Path, name: str, root: Path) -> Optional[str]:
    """Why a link met while walking is skipped, or None for links not worth a word."""
    try:
        status = os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "skipped: symbolic link loop (links are not followed while walking)"
        if name.endswith(SOURCE_SUFFIXES):
            return f"skipped: dangling symbolic link (its target {os.readlink(path)!r} does not exist)"
        return None
    is_dir = stat.S_ISDIR(status.st_mode)
    if not is_dir and not name.endswith(SOURCE_SUFFIXES):
        return None
    kind = "folder" if is_dir else "file"
    target = os.path.realpath(path)
    inside = _is_within(target, os.path.realpath(root))
    if is_dir and inside and _is_within(os.path.realpath(os.path.dirname(os.path.abspath(path))), target):
        return "skipped: symbolic link to a folder that contains it (a loop; links are not followed while walking)"
    if not inside:
        return f"skipped: symbolic link to a {kind} outside the tree ({target}); links are not followed while walking"
    return f"skipped: symbolic link to a {kind} (links are not followed while walking; name it to process it)"


def _is_within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def is_notebook(path: Path) -> bool:
    return path.suffix == ".ipynb"


def package_roots(folder: str) -> Tuple[str, ...]:
    """``folder`` and each folder above it while the one below is a package (has ``__init__.py``):
    where a script-style or package import may start."""
    found = [folder]
    while os.path.exists(os.path.join(folder, "__init__.py")) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
        found.append(folder)
    return tuple(found)


def resolve_from(module: str, folder: str, packages: Tuple[str, ...], real_roots: Tuple[str, ...]) -> Optional[str]:
    """The file of ``module`` (``pkg.mod`` or relative ``..mod``) imported from a file in the
    real folder ``folder``, given its ``package_roots`` and the run's roots as real paths
    (the caller, asking many questions, computes those once). Written with ``os.path``:
    pathlib's objects cost several times more per question."""
    level = len(module) - len(module.lstrip("."))
    parts = [p for p in module.lstrip(".").split(".") if p]
    if level:
        root = folder
        for _ in range(level - 1):
            root = os.path.dirname(root)
        candidates_roots: Tuple[str, ...] = (root,)
    else:
        # Script-style imports (the importing file's folder on sys.path), the
        # package root above it, and the run's roots.
        candidates_roots = packages + real_roots
    for root in candidates_roots:
        target = os.path.join(root, *parts) if parts else root
        for candidate in (target + ".py" if parts else None, os.path.join(target, "__init__.py")):
            if candidate is not None and os.path.isfile(candidate):
                return candidate
    return None


def in_shard(path: Path, shard: Tuple[int, int], base: Path) -> bool:
    """Whether ``path`` belongs to shard ``k`` of ``n`` (1-based): by a stable hash of its path.

    The same tree split the same way gives the same shards on every machine,
    so N CI jobs can each take one and merge their JSON reports.
    """
    import zlib

    index, count = shard
    try:
        relative = Path(os.path.abspath(path)).relative_to(Path(os.path.abspath(base))).as_posix()
    except ValueError:
        relative = Path(path).as_posix()
    return zlib.crc32(relative.encode("utf-8", "surrogateescape")) % count == index - 1
