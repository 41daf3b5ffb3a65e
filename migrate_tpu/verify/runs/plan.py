"""The two copies a verification runs: the original and its migration, each in a temporary
folder of its own, so that neither run writes the user's folder or sees the other's output.

A file's whole folder is copied (files beside the script are there, as under ``run``), and
each run starts in its copy of the user's current folder when that lies inside the copied
folder, else in the copy of the script's folder.  What a program writes (checkpoints, logs,
saved models) lands in its own copy.  Files up to :data:`LINK_ABOVE` bytes are copied byte
for byte; larger ones, and folders that only tools read (``.git``, virtual environments,
caches), are symbolic links to the user's: they are for reading, and :func:`changed_links`
tells afterwards whether a run wrote through one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from migrate_tpu.verify.values.changes import FixPlace
from migrate_tpu.verify.values.verdict import VerifyError

#: Files larger than this are linked, not copied (data sets, weights): 32 MiB.
LINK_ABOVE = 32 * 1024 * 1024
#: Folders linked whole: what a program reads at most, never its own output.
LINKED_FOLDERS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "env", "node_modules", ".tox", ".nox", ".mypy_cache",
                            ".pytest_cache", ".ruff_cache", ".migrate-tpu-cache", ".ipynb_checkpoints"})
SKIPPED = frozenset({"__pycache__"})


@dataclass
class Copy:
    """One run's copy of the user's folder."""

    root: Path  # the copy of the folder shown to the user as ``shown_root``
    shown_root: str
    program: Path  # the program to start, in the copy
    cwd: Path  # where the run starts
    shown_program: str  # how the user names the program (the --after file for a hand migration)
    linked: Dict[str, Tuple[int, int]] = field(default_factory=dict)  # linked file -> (size, mtime_ns) before the run


@dataclass
class Plan:
    """What runs: the two copies and, in each, the program to start."""

    workdir: Path
    before: Copy
    after: Copy
    original_label: str
    control: Optional[Copy] = None  # a second copy of the original, for the other interpreter
    fixes: List[FixPlace] = field(default_factory=list)  # the fixes the migration applied (none for --after)
    source: Optional[Path] = None  # the user's folder the original's copies come from
    whole_folder: bool = False  # the migration is the whole folder's (--entry, or an --after folder), not the program's alone


#: More files than this in the folder to copy: verify refuses (name a smaller folder).
MOST_FILES = 50_000


def _copy_tree(source: Path, target: Path, linked: Dict[str, Tuple[int, int]], workdir: Path, count: List[int]) -> None:
    """``source`` into ``target``: small files copied, large files and tool folders linked."""
    target.mkdir(parents=True, exist_ok=True)
    with os.scandir(source) as entries:
        for entry in entries:
            if entry.name in SKIPPED or os.path.abspath(entry.path) == str(workdir):
                continue
            count[0] += 1
            if count[0] > MOST_FILES:
                raise VerifyError(f"{source}: more than {MOST_FILES} files to copy; move the program into a folder of its own, "
                                  "or name a smaller one with --entry")
            destination = target / entry.name
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), destination)
            elif entry.is_dir():
                if entry.name in LINKED_FOLDERS:
                    os.symlink(os.path.abspath(entry.path), destination, target_is_directory=True)
                else:
                    _copy_tree(Path(entry.path), destination, linked, workdir, count)
            elif entry.is_file():
                status = entry.stat()
                if status.st_size > LINK_ABOVE:
                    os.symlink(os.path.abspath(entry.path), destination)
                    linked[os.path.abspath(entry.path)] = (status.st_size, status.st_mtime_ns)
                else:
                    shutil.copy2(entry.path, destination)


def copy_tree(source: Path, target: Path) -> Dict[str, Tuple[int, int]]:
    """``source`` into ``target`` as a run's copy is made; returns the files linked, not copied."""
    linked: Dict[str, Tuple[int, int]] = {}
    _copy_tree(source, target, linked, target.resolve(), [0])
    return linked


def fresh_copy(the_plan: "Plan", name: str) -> Copy:
    """Another copy of the original, made from the user's folder (not from a copy a run used)."""
    original = the_plan.before
    root = the_plan.workdir / name / original.root.name
    linked = copy_tree(the_plan.source or original.root, root)
    cwd = root / original.cwd.relative_to(original.root)
    return Copy(root, original.shown_root, root / original.program.relative_to(original.root), cwd, original.shown_program, linked)


def put_in_place(copy: Copy, made: Path) -> None:
    """``copy``'s folder replaced by the folder ``made`` (a fresh copy, or a spare made before any
    run wrote in ``copy``), so that a run again in ``copy`` starts from what the first started from."""
    shutil.rmtree(copy.root, ignore_errors=True)
    os.replace(made, copy.root)


def changed_links(copy: Copy) -> List[str]:
    """The user's files, linked into ``copy`` for reading, that the run changed."""
    changed = []
    for path, (size, mtime) in sorted(copy.linked.items()):
        try:
            status = os.stat(path)
        except OSError:
            changed.append(path)
            continue
        if (status.st_size, status.st_mtime_ns) != (size, mtime):
            changed.append(path)
    return changed


def _start_folder(folder: Path, copy_root: Path) -> Path:
    """The copy of the current folder when it lies inside ``folder``, else ``copy_root``."""
    try:
        inside = Path.cwd().resolve().relative_to(folder.resolve())
    except (ValueError, OSError):
        return copy_root
    return copy_root / inside


def plan(target: str, entry: Optional[str], after: Optional[str], fix_options: dict, control: bool = False) -> Plan:
    """Copy the program's folder twice, or three times with a ``control`` (and migrate the
    after copy), into a new temporary folder."""
    source = Path(target)
    if not source.exists():
        raise VerifyError(f"{target}: no such file or folder")
    if source.is_dir() and not entry:
        raise VerifyError(f"{target} is a folder: name its entry point with --entry (e.g. --entry train.py {target})")
    if entry and not source.is_dir():
        raise VerifyError(f"--entry {entry}: {target} is not a folder")
    if entry and not (source / entry).is_file():
        raise VerifyError(f"--entry {entry}: no such file in {target}")
    if after:
        if not Path(after).exists():
            raise VerifyError(f"--after {after}: no such file or folder")
        if Path(after).is_dir() != source.is_dir():
            raise VerifyError(f"--after {after}: give a {'folder' if source.is_dir() else 'file'}, as {target} is")
    folder = source if source.is_dir() else source.resolve().parent
    shown_folder = str(source) if source.is_dir() else os.path.dirname(target) or "."
    relative = Path(entry) if entry else Path(source.name)
    label = str(source / entry) if entry else str(source)
    workdir = Path(tempfile.mkdtemp(prefix="migrate-tpu-verify-"))
    try:
        copies = []
        for side in ("before", "after") + (("control",) if control else ()):
            linked: Dict[str, Tuple[int, int]] = {}
            root = workdir / side / (folder.resolve().name or "root")
            if side == "after" and after and source.is_dir():
                _copy_tree(Path(after), root, linked, workdir.resolve(), [0])
                shown_root = str(after)
            else:
                _copy_tree(folder, root, linked, workdir.resolve(), [0])
                shown_root = shown_folder
            program = root / relative
            shown_program = label
            if side == "after" and after and not source.is_dir():
                shutil.copy2(after, program)  # the hand migration, in the original's place beside its modules
                shown_program = str(after)
            elif side == "after" and after:
                shown_program = str(Path(after) / entry) if entry else str(after)
            copies.append(Copy(root, shown_root, program, _start_folder(folder, root), shown_program, linked))
        fixes: List[FixPlace] = []
        if not after:
            migrated = copies[1].root if source.is_dir() else copies[1].program
            errors, fixes = _migrate(source, migrated, copies[1].root, fix_options, folder)
            if errors:
                raise VerifyError("the migration failed: " + "; ".join(e.replace(str(migrated), target) for e in errors))
        return Plan(workdir, copies[0], copies[1], label, copies[2] if control else None, fixes, folder, source.is_dir())
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise


def _migrate(original: Path, copy: Path, root: Path, fix_options: dict, folder: Path) -> Tuple[List[str], List[FixPlace]]:
    """``fix`` on ``copy`` with the settings ``original`` gets, in the project it belongs to
    (``root`` copies the user's ``folder``; through :mod:`migrate_tpu.migrated_copy`): the errors, and
    the fixes applied, their files relative to ``root``."""
    from migrate_tpu.migrated_copy import migrate_copy
    from migrate_tpu.settings import SettingsError

    try:
        errors, applied = migrate_copy(original, copy, fix_options, seen_as=(root, folder))
    except SettingsError as error:
        raise VerifyError(str(error))
    places: List[FixPlace] = []
    for fix in applied:
        path = Path(fix.path) if os.path.isabs(fix.path) else Path.cwd() / fix.path
        try:
            relative = path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
        places.append((relative, fix.cell, fix.line, fix.end_line, fix.rule))
    return errors, places
