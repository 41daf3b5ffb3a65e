"""The two copies a verification runs: the original and its migration, each in a temporary
folder of its own, so that neither run writes the user's folder or sees the other's output."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from migrate_tpu.verify.verdict import VerifyError


def _copy(source: Path, target: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".git", "*.pyc", ".migrate-tpu-cache"))
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


@dataclass
class Plan:
    """What runs: the two copies and, in each, the program to start."""

    workdir: Path
    before_root: Path
    after_root: Path
    before_program: Path
    after_program: Path
    original_label: str
    extra_path: Optional[str]
    after_label: str = ""


def plan(target: str, entry: Optional[str], after: Optional[str], fix_options: dict) -> Plan:
    """Copy the program (and migrate the after copy) into a new temporary folder."""
    source = Path(target)
    if not source.exists():
        raise VerifyError(f"{target}: no such file or folder")
    if source.is_dir() and not entry:
        raise VerifyError(f"{target} is a folder: name its entry point with --entry (e.g. --entry train.py {target})")
    if entry and not source.is_dir():
        raise VerifyError(f"--entry {entry}: {target} is not a folder")
    if entry and not (source / entry).is_file():
        raise VerifyError(f"--entry {entry}: no such file in {target}")
    workdir = Path(tempfile.mkdtemp(prefix="migrate-tpu-verify-"))
    try:
        name = source.resolve().name
        before_root, after_root = workdir / "before", workdir / "after"
        _copy(source, before_root / name)
        if after:
            if not Path(after).exists():
                raise VerifyError(f"--after {after}: no such file or folder")
            if Path(after).is_dir() != source.is_dir():
                raise VerifyError(f"--after {after}: give a {'folder' if source.is_dir() else 'file'}, as {target} is")
            _copy(Path(after), after_root / name)
        else:
            _copy(source, after_root / name)
            errors = _migrate(source, after_root / name, fix_options)
            if errors:
                raise VerifyError("the migration failed: " + "; ".join(e.replace(str(after_root / name), target) for e in errors))
        relative = Path(name) / entry if entry else Path(name)
        label = str(source / entry) if entry else str(source)
        after_label = str(after) if after else str(source)
        return Plan(workdir, before_root, after_root, before_root / relative, after_root / relative,
                    label, None if source.is_dir() else str(source.resolve().parent), after_label)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise


def _migrate(original: Path, copy: Path, fix_options: dict) -> List[str]:
    """``fix`` on ``copy`` with the settings ``original`` gets (through the composition root)."""
    from migrate_tpu.compose import migrate_copy
    from migrate_tpu.settings import SettingsError

    try:
        return migrate_copy(original, copy, fix_options)
    except SettingsError as error:
        raise VerifyError(str(error))
