"""What the text of a module alone tells of the dotted names it may reference.

Every way the analysis (``names.qualified_name``) and the ``ast`` stage
(``SourceIndex.may_name``) find that code references ``a.b.experimental.X`` builds the
dotted name from pieces of the module's own text: import paths, imported names, the dotted
expressions aliases are given, attribute chains, ``getattr`` strings. So the last two
names, ``experimental`` and ``X``, are spelled in the text, and where they meet is either
``experimental.X`` or the end of an alias (``from a.b import experimental as e`` then
``e.X``; ``from a.b.experimental import X``; ``getattr(a.b.experimental, "X")``). An
``experimental`` followed by a dot and another name (``tf.data.experimental.AUTOTUNE``)
is neither. A module whose every ``experimental`` is of that kind references no
``a.b.experimental.X``, whatever else it holds: the rules that act only on such names
(catalogue tables, calls of old classes) have nothing to do there, and the file needs no
``ast`` parse for them. On tf-models-official 2.6.0, 25 files name ``TPUStrategy``,
``LossScaleOptimizer`` or ``Policy`` the TF 2.4 way, 20 of them with no old spelling.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

# The leading names ``names.canonical`` rewrites (``tensorflow.compat.v2.X`` is
# ``tensorflow.X``): a dotted name ending in one of them is not told from the text here.
_REWRITTEN = frozenset({"tensorflow", "tensorflow_core", "compat", "v1", "v2"})


def is_word_character(character: str) -> bool:
    r"""Whether ``character`` may stand in a word, as ``re``'s ``\w`` reads it in a ``str``."""
    return character.isalnum() or character == "_"


def word_places(text: str, word: str) -> Iterator[int]:
    r"""Where ``text`` holds the identifier ``word`` as a whole word (``\bword\b``), found
    with ``str.find`` and no pattern compiled: a lookup asks about hundreds of names in a
    tree, each compiled pattern cost about 0.3 ms, and ``re``'s cache holds 512 of them
    (on transformers 3.0.2, 471 names: 0.16 s)."""
    start = text.find(word)
    while start >= 0:
        end = start + len(word)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not is_word_character(before) and not is_word_character(after):
            yield start
        start = text.find(word, start + 1)


def holds_word(text: str, word: str) -> bool:
    """Whether ``text`` holds the identifier ``word`` as a whole word (``word_places``)."""
    return next(word_places(text, word), None) is not None


# What may follow a name inside an attribute chain: blanks on its line, a dot, blanks, the
# next name. Anything else (a line's end, ``as``, ``import``, a comma, a bracket, a quote,
# a comment, a line continuation) may end an alias, and counts as meeting any name.
_NEXT_NAME = re.compile(r"[ \t]*\.[ \t]*([^\W\d]\w*)")


def may_name(source: str, names: Iterable[str], prefixes: Iterable[str] = ()) -> bool:
    """Whether ``source`` may reference one of ``names`` (canonical dotted names) or a name
    under one of ``prefixes``, as far as its text tells (see the module's docstring); False
    only where it surely does not. A dotted name of fewer than three parts, or whose next
    to last part is one ``names.canonical`` rewrites, is never ruled out."""
    for dotted in (*names, *prefixes):
        parts = dotted.split(".")
        if len(parts) < 3 or parts[-2] in _REWRITTEN:
            return True
        last, before = parts[-1], parts[-2]
        if not holds_word(source, last):
            continue
        for occurrence in word_places(source, before):
            following = _NEXT_NAME.match(source, occurrence + len(before))
            if following is None or following.group(1) == last:
                return True
    return False
