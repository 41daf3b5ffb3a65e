"""One place for positions (``codemod/foundation/places.py``): a line of the original in the
fixed text, a place in a doctest's stripped snippet in the file."""

from __future__ import annotations

import pytest

from migrate_tpu.codemod.foundation.places import LineMap, StrippedLines


def test_a_line_map_moves_unchanged_lines_exactly_and_changed_ones_to_their_replacement():
    before = "a = 1\nb = 2\nc = 3\nd = 4\n"
    after = "a = 1\nx = 0\nb = 2\nc = (\n    3\n)\nd = 4\n"
    moved = LineMap(before, after)
    assert [moved(line) for line in (1, 2, 3, 4)] == [1, 3, 4, 7]
    assert moved.lines(3, 4) == (4, 5)  # the first line moves, the height stays
    assert LineMap("a\nb\n", "a\n")(2) == 2  # a deleted last line: its block starts after the end
    assert LineMap("a\n", "a\n")(5) == 1  # past the end: the last line


def test_a_stripped_place_is_put_back_in_the_file():
    # Line 1 is the snippet's own (an import); lines 2 and 3 come from file lines 10 and 11,
    # behind ``    >>> `` (8 characters) and ``    ... `` (8).
    places = StrippedLines([None, (10, 8), (11, 8)])
    assert not places.holds(1) and places.holds(2) and places.holds(3) and not places.holds(4) and not places.holds(0)
    assert places.place((2, 4, 3, 6)) == (10, 12, 11, 14)
    assert places.place((2, 4, 9, 6)) == (10, 12, 10, 14)  # an end past the snippet ends on the first line
    with pytest.raises(ValueError):
        places.place((1, 0, 1, 3))
