"""What one command was started in, beyond its options: under pre-commit or not, the
signals that stop it, the folder its patch is relative to.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ContextManager, Sequence


def stop_signals() -> ContextManager[object]:
    """The engine's handling of SIGINT, SIGTERM and SIGHUP, for a whole command."""
    from migrate_tpu.engine.pipeline import stop_signals as engine_stop_signals

    return engine_stop_signals()


def under_pre_commit() -> bool:
    return bool(os.environ.get("PRE_COMMIT"))


def patch_root(paths: Sequence[str]) -> Path:
    """The folder a run's patch is relative to: what ``git apply`` and ``patch -p1`` run in.

    The repository's top level when the current folder is in one (git applies
    patches there), else the current folder; widened to a common ancestor
    when a path named lies outside it, so that no path needs ``..``.
    """
    here = Path.cwd().resolve()
    root = here
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            root = folder
            break
    for raw in paths:
        if raw == "-":
            continue
        absolute = Path(os.path.abspath(raw))
        while root != root.parent and not _inside(absolute, root):
            root = root.parent
    return root


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False
