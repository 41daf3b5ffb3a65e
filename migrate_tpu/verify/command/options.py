"""What ``migrate-tpu verify`` is asked beside the program and its arguments: one value, made by
the CLI from its options (or by a caller by name), read by every stage of a session."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

from migrate_tpu.runtime.record.recorder import DEFAULT_SEED  # a name only (no TensorFlow)
from migrate_tpu.verify.values.verdict import AFTER_API, AUTO_API


@dataclass(frozen=True)
class VerifyOptions:
    """``entry``: the program in a folder target; ``after``: a migration of one's own instead of
    ``fix``'s; ``steps``: where the runs stop; ``python``/``before_python``: the migration's and the
    original's interpreters; ``rtol``/``atol``: the user's tolerance (None: exact); ``replicas``,
    ``hosts``, ``tpu_env``: the emulated machine; ``fix_options``: how ``fix`` migrates the copy;
    ``before_api``/``after_api``: the surfaces (``native``: the interpreter's own); ``power``:
    measure what an exact ``same`` could have caught; ``jobs``: runs at once (1 or 2; default 2
    where there is room: :mod:`~migrate_tpu.verify.runs.side_by_side`)."""
    entry: Optional[str] = None
    after: Optional[str] = None
    steps: Optional[int] = None
    python: Optional[str] = None
    before_python: Optional[str] = None
    rtol: Optional[float] = None
    atol: Optional[float] = None
    replicas: Optional[int] = None
    hosts: Optional[int] = None
    tpu_env: Optional[str] = None
    timeout: Optional[float] = None
    seed: int = DEFAULT_SEED
    fix_options: Optional[Dict[str, Any]] = None
    find_blame: bool = True
    before_api: str = AUTO_API
    after_api: str = AFTER_API
    power: bool = False
    jobs: Optional[int] = None
