"""Where the rule tables live; importable without LibCST."""

from __future__ import annotations

from pathlib import Path


def rules_directory() -> Path:
    """Installed wheels carry the tables inside the package; a checkout has them at the top."""
    package = Path(__file__).resolve().parents[2]  # migrate_tpu/, from codemod/foundation/
    installed = package / "_rules"
    return installed if installed.is_dir() else package.parent / "rules"
