"""verify's migrated copy: a copy of the user's program migrated as ``fix`` would migrate the
original, with the settings and in the project the original has, and the fixes applied.

It runs the engine's pipeline with the codemod through the composition root
(:func:`~migrate_tpu.compose.settings_for`, :class:`~migrate_tpu.compose.Run`); ``verify``
reaches neither side but through here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, cast

from migrate_tpu.compose import Run, settings_for


@dataclass(frozen=True)
class AppliedFix:
    """A fix ``fix`` applied to a copy: its rule, file and the lines it edited, as the file
    was before (a notebook's: its cell, and lines counted in that cell when known)."""

    path: str
    rule: str
    line: int
    end_line: int
    cell: Optional[int] = None


def migrate_copy(original: Path, copy: Path, fix_options: Dict[str, object],
                 seen_as: Optional[Tuple[Path, Path]] = None) -> Tuple[List[str], List[AppliedFix]]:
    """Migrate ``copy`` (a file or tree copied from ``original``) as ``fix`` would, with the
    settings ``original`` gets (``verify``'s migrated copy), and, with ``seen_as`` (the
    copied folder and the user's folder it copies), in the project ``original`` belongs to:
    the same findings and fixes as ``fix ORIGINAL``.  Returns the errors as
    ``path: error: message`` lines, and the fixes applied.  Raises :class:`SettingsError`
    for bad settings."""
    from dataclasses import replace

    from migrate_tpu.engine.report import error_line
    from migrate_tpu.settings import CommandLine

    options = dict(fix_options)

    def ids(key: str) -> Tuple[str, ...]:
        return tuple(cast(Sequence[str], options.get(key) or ()))

    typed = CommandLine(select=ids("select"), ignore=ids("ignore"), target=cast(Optional[str], options.get("target")),
                        unsafe_fixes=cast(Optional[bool], options.get("unsafe_fixes")), jobs=cast(Optional[int], options.get("jobs")))
    settings, _ = settings_for([str(original)], typed, config_file=cast(Optional[str], options.get("config_file")),
                               isolated=bool(options.get("isolated", False)))
    # The copy lives outside the project: its paths are matched against nothing of the user's.
    settings = replace(settings, exclude=(), respect_gitignore=False, force_exclude=False,
                       project_exclude=settings.exclude)  # the copy is migrated whole, in the original's project
    seen = (os.path.realpath(seen_as[0]), os.path.realpath(seen_as[1])) if seen_as is not None else None
    run = Run([str(copy)], settings, quiet=True, no_progress=True, no_cache=True, want_edits=True, seen_as=seen)
    errors: List[str] = []
    fixes: List[AppliedFix] = []
    for result in run.results("fix"):
        if result.failed:
            errors.append(error_line(result))
        for finding in result.reports:
            if not finding.applied:
                continue
            lines = [(int(cast(int, edit["line"])), int(cast(int, edit["end_line"]))) for edit in finding.edits
                     if isinstance(edit.get("line"), int) and isinstance(edit.get("end_line"), int)]
            if not lines and finding.line:
                lines = [(finding.line, finding.end_line or finding.line)]
            for start, end in lines or [(0, 0)]:
                fixes.append(AppliedFix(result.path, finding.rule, start, end, finding.cell))
    return errors, fixes
