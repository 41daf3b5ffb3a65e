"""How closely a recorded value must agree with its counterpart to count as the same.

One tolerance for every value (exact by default; ``--rtol``/``--atol``), or, where the
original differs from itself, each value's own.  A value whose difference between the
original's two runs (A/A) is a sizeable part of the value itself (:data:`NOISE_SHARE`)
carries nothing a tolerance could keep apart from a mistake: it is not compared, and is
listed.  Never one absolute number for everything: a value of 5e4 that wanders by 5e3 must
not lend its tolerance to a learning rate of 1e-3.

One pair of runs can agree on a value by chance (a scalar whose two draws fell close, a
float32 that rounded the same way twice), so a value's own difference alone under-states its
noise, and so does the step where the two runs first part (two runs whose noise entered at
step 1 can still agree at step 2 by chance, as seen on tests/verify/programs/noisy_loop.py).
Each value is therefore judged within :data:`NOISE_MARGIN` times the larger of its own
difference and the run's *relative* noise level (the largest relative A/A difference among
the values that stay compared) times the value's own size: relative, so that no value lends
an absolute tolerance to another.  Whether that still catches a mistake is measured, not
assumed (:mod:`~migrate_tpu.verify.judge.repeatability`).  Pure: no TensorFlow, no files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

#: How far past its own A/A difference a value must move to count as changed.
NOISE_MARGIN = 10.0
#: A value whose A/A difference is more than this share of its magnitude is not compared: within
#: ten times that, it could move by a tenth and still pass.
NOISE_SHARE = 1e-2

#: Where a value sits in a record: ("event", host, index, *path), ("variable", host, label, *path)
#: or ("printed", host, line, number); a path step is ("l", index) or ("k", key).  A value's replicas
#: share its key: its spread is the largest over them.
Key = Tuple[object, ...]


@dataclass
class Spread:
    """What the original's two runs differ in, value by value: the largest absolute difference
    and the largest magnitude of each value that differs (a value not listed agreed bit for bit),
    and where they first differ."""
    values: Dict[Key, Tuple[float, float]] = field(default_factory=dict)
    first: Optional[dict] = None  # compare()'s first divergence of the original against itself

    @property
    def relative(self) -> float:
        """The run's relative noise level: the largest difference over size among the values that
        stay compared (those under :data:`NOISE_SHARE`)."""
        shares = [difference / magnitude for difference, magnitude in self.values.values()
                  if 0 < difference <= NOISE_SHARE * magnitude]
        return max(shares, default=0.0)

    def note(self, key: Key, difference: float, magnitude: float) -> None:
        if difference <= 0:
            return
        old_difference, old_magnitude = self.values.get(key, (0.0, 0.0))
        self.values[key] = (max(old_difference, difference), max(old_magnitude, magnitude))

    @property
    def largest(self) -> float:
        return max((difference for difference, _ in self.values.values()), default=0.0)


@dataclass
class Judge:
    """The tolerance of each compared value, and a tally of what was compared and what was not."""
    rtol: float
    atol: float
    spread: Optional[Spread] = None
    compared: int = 0
    loose: int = 0  # values compared within their own A/A spread, not exactly
    skipped: List[str] = field(default_factory=list)  # the values left out, as the report names them
    context: str = ""  # the recorded value being compared, as the report names it
    step: Optional[int] = None  # the step of the value being compared (None: at the end, as variables are)
    _relative: Optional[float] = None  # the spread's relative noise level, once computed

    def tolerance(self, key: Key, where: str = "") -> Optional[Tuple[float, float, float]]:
        """``(rtol, atol, share)`` for the value at ``key`` (``share``: a part of the value's own
        size that is tolerated too); ``None``: not compared (it is listed)."""
        spread = self.spread
        if spread is None:
            self.compared += 1
            return self.rtol, self.atol, 0.0
        difference, magnitude = spread.values.get(key, (0.0, 0.0))
        if difference > NOISE_SHARE * magnitude:
            label = (self.context + where).strip()
            if label not in self.skipped:
                self.skipped.append(label)
            return None
        self.compared += 1
        self.loose += 1
        if self._relative is None:
            self._relative = spread.relative
        return self.rtol, max(self.atol, NOISE_MARGIN * difference), NOISE_MARGIN * self._relative


def path_words(path: Tuple[Tuple[str, object], ...]) -> str:
    """A value's path inside a recorded structure, as the report names it."""
    words = []
    for kind, step in path:
        if kind == "k":
            words.append(f" [{step!r}]")
        elif kind == "l":
            words.append(f" [{step}]")
    return "".join(words)
