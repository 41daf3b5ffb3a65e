"""What a rule table in ``rules/*.toml`` may say: every key, its type, nothing else.

The catalogue is data that ships in the wheel; a misspelt key (``isinstanse``,
``[[rule.exampel]]``) would otherwise load without a word and silently drop the
fact it was meant to carry. :func:`check_document` refuses it with one line
naming the file, the rule and the key (and the key it probably meant), as the
settings loader does for ``[tool.migrate-tpu]``.

The keys are the field names of the objects they become (``Entry``,
``Example``, ``Expected``, ``Evidence`` and the rule class's attributes);
``tests/test_table_schema.py`` holds the two lists side by side.

An example's code (``before``, ``after``, ``safe_after``) is a string, or a longer
program in a ``.py`` file of its own beside the tables, named as ``{ file =
"examples/TPU101_1.py" }`` (ruff's fixtures): there it reads as Python, docstrings
unescaped, its lines numbered by any editor as ``expected`` counts them.
"""

from __future__ import annotations

import difflib
from typing import Dict, Mapping, Sequence, Tuple, cast

# A type is a Python type, a tuple of them, or one of these markers.
STRINGS = "list of strings"
TABLE_OF_STRINGS = "table of strings"
INTEGER = "whole number"
CODE = "string, or a table { file = ... } naming a .py file under the tables' folder"

# key -> type for each kind of table; a nested array of tables is named by its key.
DOCUMENT: Dict[str, object] = {"release": str, "rule": list}
RULE: Dict[str, object] = {
    "id": str,
    "name": str,
    "title": str,
    "kind": str,
    "safety": str,
    "since": str,
    "targets": STRINGS,
    "source": str,
    "what": str,
    "why": str,
    "use_instead": str,
    "fix_safety": str,
    "rename": list,
    "symbol": list,
    "example": list,
    "evidence": list,
}
ENTRY: Dict[str, object] = {
    "old": str,
    "new": str,
    "since": str,
    "removed": str,
    "source": str,
    "relation": str,
    "calls": str,
    "type_checks": str,
    "keywords": TABLE_OF_STRINGS,
    "manual_if_keywords": STRINGS,
    "max_positional": INTEGER,
    "manual_message": str,
    "prefix": bool,
    "message": str,
    "difference": str,
}
EXAMPLE: Dict[str, object] = {
    "before": CODE,
    "after": CODE,
    "unsafe_fixes": bool,
    "target": str,
    "findings": INTEGER,
    "expected": list,
    "safe_after": CODE,
}
EXPECTED: Dict[str, object] = {"safety": str, "line": INTEGER, "column": INTEGER, "message": str, "rule": str}
EVIDENCE: Dict[str, object] = {
    "literal": str,
    "pattern": str,
    "without_tensorflow": bool,
    "code_only": bool,
    "targets": STRINGS,
}

# The tables inside a [[rule]] and what each holds.
RULE_ARRAYS: Dict[str, Mapping[str, object]] = {"rename": ENTRY, "symbol": ENTRY, "example": EXAMPLE, "evidence": EVIDENCE}
# Keys that were renamed to match their fields, for tables written before.
RENAMED = {"isinstance": "type_checks", "expect": "expected"}
REQUIRED = {"rule": ("id", "name", "title", "kind"), "rename": ("old",), "symbol": ("old",), "example": ("before",),
            "expected": ("safety", "line", "column"), "evidence": ("literal",)}


class TableError(ValueError):
    """A rule table that says something the catalogue does not know, in one line."""


def check_document(document: Mapping[str, object], path: str) -> None:
    """Raise :class:`TableError` unless every key of ``document`` is known and well typed."""
    _check_table(document, DOCUMENT, path, "the file")
    for index, rule in enumerate(_tables(document, "rule")):
        where = f"{path}: [[rule]] {rule.get('id', f'number {index + 1}') if isinstance(rule, dict) else index + 1}"
        _check_table(rule, RULE, where, "[[rule]]", required=REQUIRED["rule"])
        for key, schema in RULE_ARRAYS.items():
            for item in _tables(rule, key):
                _check_table(item, schema, where, f"[[rule.{key}]]", required=REQUIRED[key])
                for expected in _tables(item, "expected") if key == "example" else ():
                    _check_table(expected, EXPECTED, where, "an `expected` finding", required=REQUIRED["expected"])


def _tables(table: Mapping[str, object], key: str) -> Sequence[Mapping[str, object]]:
    """The array of tables under ``key``, if any: :func:`_check_table` has already checked
    ``table``, and a key of type ``list`` holds a list of tables."""
    return cast("Sequence[Mapping[str, object]]", table.get(key, ()))


def _check_table(table: object, schema: Mapping[str, object], where: str, what: str, required: Tuple[str, ...] = ()) -> None:
    if not isinstance(table, dict):
        raise TableError(f"{where}: {what} must be a table")
    for key, value in table.items():
        if key not in schema:
            close = [RENAMED[key]] if RENAMED.get(key) in schema else difflib.get_close_matches(key, list(schema), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(schema)})"
            raise TableError(f"{where}: unknown key {key!r} in {what}{hint}")
        expected = schema[key]
        if not _fits(value, expected):
            raise TableError(f"{where}: {key!r} in {what} must be {_describe(expected)}, not {type(value).__name__}")
    for key in required:
        if key not in table:
            raise TableError(f"{where}: {what} lacks {key!r}")


def _fits(value: object, expected: object) -> bool:
    if expected == STRINGS:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    if expected == TABLE_OF_STRINGS:
        return isinstance(value, dict) and all(isinstance(item, str) for item in value.values())
    if expected == INTEGER:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == CODE:
        return isinstance(value, str) or (isinstance(value, dict) and list(value) == ["file"] and isinstance(value["file"], str)
                                          and value["file"].endswith(".py"))
    if expected is list:
        return isinstance(value, list) and all(isinstance(item, dict) for item in value)
    return isinstance(expected, type) and isinstance(value, expected)  # the other kinds are types


_TYPE_NAMES: Dict[object, str] = {str: "a string", bool: "true or false"}


def _describe(expected: object) -> str:
    if isinstance(expected, str):
        return f"a {expected}"
    if expected is list:
        return "an array of tables"
    return _TYPE_NAMES.get(expected, getattr(expected, "__name__", str(expected)))
