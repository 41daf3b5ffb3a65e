"""What the codemod migrates to, and which TensorFlow requirement asks for which.

The TensorFlow knowledge behind ``--target auto``: the names the package is
published under and how a requirement's lower bound picks a target. Reading
requirement files is the engine's job (it knows files, not TensorFlow); the
composition root hands this module's package pattern to it and the bound it
finds back here.
"""

from __future__ import annotations

from typing import Optional, Tuple

TARGETS = ("2.4", "latest")
DEFAULT_TARGET = "2.4"

# Distributions that install TensorFlow itself (not tensorflow-datasets,
# tensorflow_hub, ...): a regular expression over a requirement's name.
TENSORFLOW_PACKAGES = r"tensorflow(?:[-_](?:cpu|gpu))?|tf[-_]nightly"


def target_for_requirement(requirement: Optional[str], where: str, lower: Optional[Tuple[int, int]]) -> Tuple[str, str]:
    """``(target, note)`` for ``--target auto``.

    ``requirement`` is the requirement as written (None: none found), ``where``
    the file it is in, ``lower`` the lowest (major, minor) it allows.
    """
    if requirement is None:
        return DEFAULT_TARGET, f"no tensorflow requirement found; migrating to {DEFAULT_TARGET}"
    named = f"{requirement!r} in {where}"
    if lower is None:
        return DEFAULT_TARGET, f"{named} sets no lower bound; migrating to {DEFAULT_TARGET}"
    version = f"{lower[0]}.{lower[1]}"
    if lower >= (2, 5):
        return "latest", f"{named}: TensorFlow {version}, migrating to the latest API"
    if lower >= (2, 4):
        return "2.4", f"{named}: TensorFlow {version}, migrating to 2.4"
    return "2.4", f"{named} allows TensorFlow {version}; migrating to 2.4 (raise the requirement to 2.4 with the migration)"
