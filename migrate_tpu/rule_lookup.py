"""The rules as the command line and the reports ask for them: by id or name, as rows of a
table, as the engine's plain :class:`~migrate_tpu.engine.report.RuleInfo`.

The codemod's catalogue knows the rule classes; the engine's reports know only plain data.
Like the composition root, this top-level module may import both (``tests/test_walls.py``),
each lazily: the CLI imports it to build its options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Tuple, Type, cast

if TYPE_CHECKING:
    from migrate_tpu.codemod.framework.rule import Rule
    from migrate_tpu.engine.report import RuleInfo


def _rule_classes() -> List[Type[Rule]]:
    """Every rule class (``catalogue.all_rules`` is typed as a list of plain classes)."""
    from migrate_tpu.codemod.rules.catalogue import all_rules

    return cast("List[Type[Rule]]", all_rules())


def rule_ids() -> List[str]:
    return [rule.id for rule in _rule_classes()]


def rule_infos() -> List[RuleInfo]:
    """What reports need to know of the rules, as the engine's plain data."""
    from migrate_tpu.engine.report import RuleInfo

    infos = []
    for rule in _rule_classes():
        try:
            docs = rule.docs()
        except Exception:  # a rule with broken docs must not break the report
            docs = ""
        safety = getattr(rule.safety, "value", str(rule.safety))
        since = getattr(rule, "since", "")
        infos.append(RuleInfo(rule.id, rule.name, rule.title, docs, safety, properties={"tensorflow": since} if since else {}))
    return infos


def rule_rows(target: Optional[str] = None) -> List[Tuple[str, str, str, str, str]]:
    """``(id, safety, TF version of the new form, name, title)`` of each rule, for ``rules``;
    only those that apply to ``target`` when one is given."""
    return [(rule.id, rule.safety.value, rule.since, rule.name, rule.title) for rule in _rule_classes() if not target or target in rule.targets]


def find_rule(name_or_id: str) -> Optional[Type[Rule]]:
    """A rule by its id (``TPU101``) or its name (``experimental-run-v2``); None when none matches."""
    from migrate_tpu.codemod.rules.catalogue import get_rule

    found = get_rule(name_or_id)
    if found is not None:
        return cast("Type[Rule]", found)
    wanted = name_or_id.strip().lower().replace("_", "-")
    for rule in _rule_classes():
        if rule.name.lower() == wanted:
            return rule
    return None
