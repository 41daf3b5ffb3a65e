"""Loading the rule tables: one rule class per ``[[rule]]`` table of ``rules/*.toml``
(checked by ``table_schema``), registered as the structural rules are.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Type, cast

from migrate_tpu.codemod.foundation.locations import rules_directory
from migrate_tpu.codemod.foundation.table_schema import TableError, check_document
from migrate_tpu.codemod.framework.rule import Evidence, Example, Expected, Safety, register
from migrate_tpu.codemod.rules.tables.entries import RELATIONS, SAME, Entry
from migrate_tpu.codemod.rules.tables.table_rule import MethodTableRule, SymbolTableRule, TableRule

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _entries(raw: dict, since: str, source: str) -> List[Entry]:
    entries = []
    for item in raw.get("rename", []) + raw.get("symbol", []):
        relation = item.get("relation", SAME)
        if relation not in RELATIONS:
            raise ValueError(f"{raw['id']}: unknown relation {relation!r} for {item['old']}")
        entries.append(
            Entry(
                old=item["old"],
                new=item.get("new"),
                since=item.get("since", since),
                removed=item.get("removed", ""),
                source=item.get("source", source),
                relation=relation,
                calls=item.get("calls", ""),
                type_checks=item.get("type_checks", ""),
                difference=item.get("difference", ""),
                keywords=dict(item.get("keywords", {})),
                manual_if_keywords=tuple(item.get("manual_if_keywords", ())),
                max_positional=item.get("max_positional"),
                manual_message=item.get("manual_message", ""),
                prefix=item.get("prefix", False),
                message=item.get("message", ""),
            )
        )
    return entries


def load_tables(directory: Optional[Path] = None) -> List[Type[TableRule]]:
    """Build and register one rule class per ``[[rule]]`` table."""
    directory = directory or rules_directory()
    created: List[Type[TableRule]] = []
    for path in sorted(directory.glob("*.toml")):
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
        check_document(document, str(path))
        for raw in document.get("rule", []):
            since = raw.get("since", document.get("release", "2.4"))
            attributes = {
                "id": raw["id"],
                "name": raw["name"],
                "title": raw["title"],
                "kind": raw["kind"],
                "safety": Safety(raw.get("safety", "manual" if raw["kind"] == "flag" else "safe")),
                "since": since,
                "targets": tuple(raw.get("targets", ("2.4", "latest"))),
                "source": raw.get("source", ""),
                "what": raw.get("what", ""),
                "why": raw.get("why", ""),
                "use_instead": raw.get("use_instead", ""),
                "fix_safety": raw.get("fix_safety", ""),
                "examples": tuple(_example(e, directory, f"{path}: [[rule]] {raw['id']}") for e in raw.get("example", [])),
                "entries": tuple(_entries(raw, since, raw.get("source", ""))),
            }
            attributes["evidence"] = _declared_evidence(raw) or _evidence(raw["kind"], attributes["entries"])
            base = MethodTableRule if raw["kind"] == "method" else SymbolTableRule
            rule_class = type(f"Table_{raw['id']}", (base,), attributes)
            register(rule_class)
            created.append(rule_class)
    return created


def _example(raw: dict, directory: Path, where: str) -> Example:
    """One ``[[rule.example]]``, its code read from its ``.py`` files where it names them."""
    return Example(
        cast(str, _code(raw["before"], directory, where)),  # required: the schema has checked it is there
        _code(raw.get("after"), directory, where),
        raw.get("unsafe_fixes", False),
        raw.get("target", "2.4"),
        raw.get("findings"),
        tuple(Expected(**found) for found in raw.get("expected", ())),
        _code(raw.get("safe_after"), directory, where),
    )


def _code(value: object, directory: Path, where: str) -> Optional[str]:
    """An example's code: the string itself, or the text of the file ``{ file = "..." }``
    names (relative to the tables' folder; the schema has checked the shape)."""
    if value is None or isinstance(value, str):
        return value
    name = cast(Dict[str, str], value)["file"]
    try:
        return (directory / name).read_text("utf-8")
    except OSError as error:
        raise TableError(f"{where}: an example's file {name!r} cannot be read: {error.strerror or error}") from None


def _declared_evidence(raw: dict) -> Tuple[Evidence, ...]:
    """A table's own ``[[rule.evidence]]`` (the fields of :class:`Evidence`), where the last
    names of its symbols are too common a word to filter on (a package named ``experimental``)."""
    # The schema (``table_schema.EVIDENCE``) names exactly Evidence's fields, and the loader
    # has refused any other key: each table passes its own, Evidence's defaults fill the rest.
    return tuple(
        Evidence(**{**e, "targets": tuple(e["targets"])} if "targets" in e else e)
        for e in raw.get("evidence", [])
    )


def _evidence(kind: str, entries: Sequence[Entry]) -> Tuple[Evidence, ...]:
    """What a file must contain for a table to fire: the last name of each old symbol.

    Every reference to ``a.b.C`` names ``C`` somewhere (in the attribute chain or
    the import), however it was imported. Methods need no TensorFlow import: a
    strategy may arrive from another module.
    """
    words = sorted({entry.last for entry in entries})
    return tuple(Evidence(word, without_tensorflow=kind == "method") for word in words)
