"""The textual prefilter, built from the evidence each rule declares.

Every rule (and every catalogue entry, through its table) says what text a file
must contain for it to fire: an :class:`Evidence`. The prefilter is the union of
the evidence of the rules a run has enabled, so adding a rule widens it and no
list is kept beside the rules. It runs in the engine's main process on every
file, so this module, and the table it reads, import neither LibCST nor the
rules: ``scripts/document-rules`` writes the table (``evidence_table.py``) from
the rules, and a test fails when it is stale.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple


@dataclass(frozen=True)
class Evidence:
    """Text that must occur in a file for a rule to have anything to do there.

    ``literal`` is a plain substring of every match (checked at memory speed);
    ``pattern`` a regular expression that confirms it within ``WINDOW`` bytes
    around the literal (the literal as a whole word when empty). ``without_tensorflow``: the rule may fire in a file that
    never names ``tensorflow`` or ``keras`` (a strategy passed in from elsewhere).
    ``code_only``: the rule acts on this text only as code (a call, a keyword argument),
    never inside a string literal (which it does not read as code, as it reads a string
    annotation): a match inside one is no evidence for the statement holding it
    (``partial_parse``; the file-level prefilter cannot tell and counts it).
    ``targets``: the targets (``--target``) for which the rule acts on this text; empty,
    every one (TPU405 reports ``decay=`` only for ``latest``).
    """

    literal: str
    pattern: str = ""
    without_tensorflow: bool = False
    code_only: bool = False
    targets: Tuple[str, ...] = ()

    def counts_for(self, target: Optional[str]) -> bool:
        """Whether this evidence counts on ``target`` (None: any target may be meant)."""
        return target is None or not self.targets or target in self.targets

    def regex(self) -> str:
        if self.pattern:
            return self.pattern
        text = re.escape(self.literal)
        if self.literal[:1].isidentifier():
            text = r"\b" + text
        if self.literal[-1:].isalnum() or self.literal[-1:] == "_":
            text += r"\b"
        return text


def selected(rule_id: str, targets: Sequence[str], select: Sequence[str], ignore: Sequence[str], target: str) -> bool:
    """Whether ``--select``/``--ignore`` (ids or prefixes) and the target enable a rule."""

    def matches(patterns: Sequence[str]) -> bool:
        return any(rule_id.startswith(p.upper()) or p.upper() == "ALL" for p in patterns)

    if target not in targets:
        return False
    if select and not matches(select):
        return False
    return not (ignore and matches(ignore))


# Words that tell a file uses TensorFlow at all.
_TENSORFLOW_WORDS = (b"tensorflow", b"keras")
# A pattern confirms its literal within this many bytes on either side.
WINDOW = 80


# The bytes ``re``'s ``\\b`` takes for word characters in a bytes pattern (ASCII letters,
# digits and ``_``), as a table: ``_WORD_BYTE[b]``.
_WORD_BYTE = tuple(bytes([b]).isalnum() or b == ord("_") for b in range(256))


class _Literal:
    """One literal and the patterns that confirm it, searched only around its occurrences.

    A literal whose every pattern is its own word pattern (``Evidence.regex`` of a plain
    literal: ``\\bTPUStrategy\\b``) is confirmed by looking at the bytes beside it, as
    ``\\b`` does, without a regular expression: there is nothing to compile for it in each
    process (two dozen patterns cost 10-20 ms of every run's start) and nothing to run."""

    def __init__(self, literal: bytes, patterns: Sequence[str]) -> None:
        self.literal = literal
        text = literal.decode()
        plain = all(p == Evidence(text).regex() for p in patterns)
        self.pattern = None if plain else re.compile("|".join(f"(?:{p})" for p in patterns).encode())
        # Which ends must be word boundaries (a literal that begins or ends with a word character).
        self._check_before = _WORD_BYTE[literal[0]] if plain else False
        self._check_after = _WORD_BYTE[literal[-1]] if plain else False

    def _whole(self, data: bytes, start: int) -> bool:
        """Whether the occurrence at ``start`` stands as a word where the literal's ends are word characters."""
        if self._check_before and start > 0 and _WORD_BYTE[data[start - 1]]:
            return False
        end = start + len(self.literal)
        return not (self._check_after and end < len(data) and _WORD_BYTE[data[end]])

    def found(self, data: bytes) -> bool:
        literal, pattern, size = self.literal, self.pattern, len(self.literal)
        start = data.find(literal)
        while start >= 0:
            if pattern is None:
                if self._whole(data, start):
                    return True
            elif pattern.search(data, max(0, start - WINDOW), start + size + WINDOW) is not None:
                return True
            start = data.find(literal, start + 1)
        return False

    def places(self, data: bytes) -> Iterator[Tuple[int, int]]:
        """(start, end) of every match of the patterns around each occurrence of the literal."""
        literal, pattern, size = self.literal, self.pattern, len(self.literal)
        start = data.find(literal)
        while start >= 0:
            if pattern is None:
                if self._whole(data, start):
                    yield start, start + size
            else:
                for match in pattern.finditer(data, max(0, start - WINDOW), start + size + WINDOW):
                    yield match.span()
            start = data.find(literal, start + 1)


# Literals that share a run of this many characters are tested behind it first (a shorter
# run, such as ``sion``, is in most files and would only add a test), as are a literal and
# one that holds it (``.run`` and ``.run(``).
_GATE = 5


def _shared(first: str, second: str) -> str:
    """The longest run of characters both strings hold (the first found, when several)."""
    best = ""
    for start in range(len(first)):
        for end in range(len(first), start + len(best), -1):
            if first[start:end] in second:
                best = first[start:end]
                break
    return best


def _literals(evidence: Sequence[Evidence]) -> Tuple[Tuple[bytes, Tuple[_Literal, ...]], ...]:
    """Literals grouped behind a run of characters they all hold (``experimental_``,
    ``Strategy``, ``olicy``), so that a file without it costs one substring test for the
    whole group: the file is read once a group, not once a literal."""
    grouped: Dict[str, List[str]] = {}
    for item in evidence:
        grouped.setdefault(item.literal, []).append(item.regex())
    gates: Dict[str, List[str]] = {}
    for literal in sorted(grouped):
        for gate in list(gates):
            common = _shared(gate, literal)
            if len(common) >= _GATE or common in (gate, literal):
                gates[common] = gates.pop(gate) + [literal]
                break
        else:
            gates[literal] = [literal]
    # A group of one needs no gate: looking for the literal is the same test.
    return tuple(
        (gate.encode() if len(literals) > 1 else b"", tuple(_Literal(literal.encode(), grouped[literal]) for literal in literals))
        for gate, literals in gates.items()
    )


class Prefilter:
    """``needs_work(data)``: whether any of the given evidence occurs in ``data``.

    Plain substring tests run first, at memory speed; a pattern is matched only
    in a small window around each occurrence of its literal, so the cost does
    not grow with the number of rules the way one large alternation does.
    """

    def __init__(self, evidence: Iterable[Evidence]) -> None:
        evidence = list(dict.fromkeys(evidence))
        self._with_tensorflow = _literals(evidence)
        # Without TensorFlow in the file, only a few rules can fire.
        self._without_tensorflow = _literals([e for e in evidence if e.without_tensorflow])

    def __call__(self, data: bytes) -> bool:
        gates = self._with_tensorflow if any(word in data for word in _TENSORFLOW_WORDS) else self._without_tensorflow
        return self._found(gates, data)

    def places(self, data: bytes) -> Iterator[Tuple[int, int]]:
        """(start, end) of each occurrence of the evidence in ``data``, every rule's evidence
        counted (a part of a file may be TensorFlow code when the file is): any part of
        ``data`` in which this prefilter finds evidence on its own overlaps one of them."""
        for gate, literals in self._with_tensorflow:
            if gate in data:
                for item in literals:
                    yield from item.places(data)

    @staticmethod
    def _found(gates, data: bytes) -> bool:
        for gate, literals in gates:
            if gate in data and any(item.found(data) for item in literals):
                return True
        return False


def prefilter_for(select: Sequence[str] = (), ignore: Sequence[str] = (), target: str = "2.4") -> Prefilter:
    """The prefilter of the rules a run enables, from the generated evidence table."""
    from migrate_tpu.codemod.stages.evidence_table import RULES

    evidence: List[Evidence] = []
    for rule_id, targets, items in RULES:
        if selected(rule_id, targets, select, ignore, target):
            for literal, pattern, without_tensorflow, only in items:
                item = Evidence(literal, pattern, without_tensorflow, targets=only)
                if item.counts_for(target):
                    evidence.append(item)
    return Prefilter(evidence)
