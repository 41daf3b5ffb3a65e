"""What a verification concludes, and what one run left behind: the types every stage of
``verify`` shares (no TensorFlow, no files).

A :class:`Verdict` is a value: frozen, its sequences tuples.  Each stage of the judgement takes
one and returns another (:meth:`Verdict.but`, :meth:`Verdict.noted`), so what a stage decided is
what it returns, and no later stage can change an earlier one's answer behind its back."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

SAME, DIVERGED, RETRACED, ERROR = "same", "diverged", "retraced", "error"
# The values agree, but none of the migration's changed lines ran: nothing was proved.
NOT_EXERCISED = "not exercised"
# The values agree, but the comparison could not have caught a mistake (the original does not
# repeat itself enough to tell one from its own noise): nothing was proved, and it says so.
INCONCLUSIVE = "inconclusive"
EXIT_STATUS = {SAME: 0, NOT_EXERCISED: 0, DIVERGED: 1, RETRACED: 1, ERROR: 2, INCONCLUSIVE: 3}
FORMATS = ("text", "json", "markdown", "github")

#: Tolerances when the two runs use different interpreters (the releases' numerics differ);
#: one interpreter for both runs compares exactly.
DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-6

BEFORE_API, AFTER_API = "2.1", "2.4"
#: The surfaces an original may be written for, oldest first (``--before-api``; ``auto`` tries them in turn).
BEFORE_APIS = ("2.1", "2.2", "2.3")
AUTO_API = "auto"
#: The release each API surface stands for: what a program under it reads as ``tf.__version__``.
SURFACE_VERSIONS = {"2.1": "2.1.0", "2.2": "2.2.3", "2.3": "2.3.4", "2.4": "2.4.1"}
TIMED_OUT = 124


class VerifyError(Exception):
    """Verification could not be set up (one line for the user)."""


@dataclass
class RunResult:
    status: int
    seconds: float
    record: Optional[dict]
    stdout: str
    stderr: str
    root: Path  # the copy of the user's folder the program ran in
    host_records: List[Optional[dict]] = field(default_factory=list)  # hosts 1.. of a pod (--hosts)
    shown_root: str = ""  # how the user names the folder ``root`` copies
    program: Optional[Path] = None  # the program started, in the copy
    shown_program: str = ""  # how the user names it


@dataclass(frozen=True)
class Verdict:
    verdict: str
    steps: int = 0
    first_divergence: Optional[dict] = None
    traces: Dict[str, Dict[str, int]] = field(default_factory=lambda: {"before": {}, "after": {}})
    retraced: Optional[dict] = None
    error: Optional[str] = None
    advice: Optional[str] = None
    before: Optional[dict] = None
    after: Optional[dict] = None
    tolerance: Dict[str, float] = field(default_factory=dict)
    hosts: Optional[int] = None
    variables_compared: int = 0
    variables_only_in: Dict[str, List[str]] = field(default_factory=lambda: {"before": [], "after": []})
    variables_not_compared: Tuple[dict, ...] = ()  # {"name", "side", "why"}
    replicas: Dict[str, Optional[List[int]]] = field(default_factory=dict)  # side -> replicas of the strategies stepped
    notes: Tuple[str, ...] = ()  # what the reader should know of a verdict
    release_drift: Optional[dict] = None  # two releases: how far the original's values moved between them
    control: Optional[dict] = None  # two releases: the original's run on the migrated program's interpreter
    before_api: str = BEFORE_API  # the surface the original ran under
    before_api_reason: Optional[str] = None  # why, where --before-api auto chose it
    coverage: Optional[dict] = None  # {"changed", "ran", "not_run": [labels]}: the migration's hunks the run reached
    blame: Optional[dict] = None  # the smallest set of changes that reproduces a divergence or retrace
    values_compared: int = 0  # numeric values (arrays, numbers) compared
    values_not_compared: Tuple[str, ...] = ()  # values the original does not repeat, left out
    nondeterminism: Optional[dict] = None  # where the original first differs from itself, its source, whether removed
    power: Optional[dict] = None  # what the comparison could have caught: {"change", "measured", "caught", ...}
    cluster: Optional[dict] = None  # why the runs were a cluster of worker processes: {"hosts", "because", "where"}
    after_api: str = AFTER_API  # the surface the migration ran under (2.4, or native: the interpreter's own)
    moved_apis: Tuple[dict, ...] = ()  # moved APIs the migrated run still called (advice.moved_api_calls)

    def __post_init__(self) -> None:
        for name in ("notes", "values_not_compared", "variables_not_compared", "moved_apis"):
            object.__setattr__(self, name, tuple(getattr(self, name)))  # a list given: held as a tuple

    def but(self, **changes: Any) -> "Verdict":
        """This verdict with ``changes`` made: a new one."""
        return replace(self, **changes)

    def noted(self, *notes: str, first: bool = False) -> "Verdict":
        """This verdict with ``notes`` after its own (before them, ``first``): a new one."""
        return replace(self, notes=tuple(notes) + self.notes if first else self.notes + tuple(notes))

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.verdict]

    def as_json(self) -> dict:
        return {
            "verdict": self.verdict,
            "steps": self.steps,
            "first_divergence": self.first_divergence,
            "retraced": self.retraced,
            "traces": self.traces,
            "before": self.before,
            "after": self.after,
            "tolerance": self.tolerance,
            "variables_compared": self.variables_compared,
            "variables_only_in": self.variables_only_in,
            "variables_not_compared": list(self.variables_not_compared),
            "replicas": self.replicas,
            "hosts": self.hosts or 1,
            "notes": list(self.notes),
            "release_drift": self.release_drift,
            "control": self.control,
            "before_api": self.before_api,
            "before_api_reason": self.before_api_reason,
            "coverage": self.coverage,
            "blame": self.blame,
            "values_compared": self.values_compared,
            "values_not_compared": list(self.values_not_compared),
            "nondeterminism": self.nondeterminism,
            "power": self.power,
            "cluster": self.cluster,
            "after_api": self.after_api,
            "moved_apis": list(self.moved_apis),
            "error": self.error,
            "advice": self.advice,
        }
