"""Whether a multi-worker program reads its cluster itself, decided from its code (not from
how it failed): such a program cannot run as one worker, and verify runs it as a cluster of
worker processes from the first run on.

Reading the cluster, in any of the spellings of 2020 code: the text ``TF_CONFIG`` in a string
(``os.environ['TF_CONFIG']``, ``os.environ.get("TF_CONFIG") or '{}'``, ``os.getenv(...)``, a
``json.loads`` of any of them) or ``TFConfigClusterResolver``, in the program or in a module
of its folder that it imports.  Comments and docstrings do not count.  The program's code is
read as the runtime reads it to decide that it builds ``MultiWorkerMirroredStrategy`` itself
(:mod:`migrate_tpu.runtime.program.program_code`, one reading for ``run`` and verify).
"""

from __future__ import annotations

import token
import tokenize
from pathlib import Path
from typing import Optional

from migrate_tpu.runtime.program.program_code import first_place  # the standard library only (no TensorFlow)


def _reads_the_cluster(item: tokenize.TokenInfo) -> bool:
    return (item.type == token.STRING and "TF_CONFIG" in item.string) or (item.type == token.NAME and item.string == "TFConfigClusterResolver")


def reads_its_cluster(program: Path) -> Optional[dict]:
    """``{"file", "line", "cell", "source"}`` where ``program`` (or a module of its folder that it
    imports) reads TF_CONFIG; ``None`` where it does not."""
    place = first_place(str(program), _reads_the_cluster)
    if place is not None:
        place["file"] = Path(place["file"])
    return place
