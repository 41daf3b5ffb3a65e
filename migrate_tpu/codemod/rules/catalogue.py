"""The catalogue: every rule, loaded once, and the choice of rules for a run.

The top of the rule families' layer: it imports the structural rule modules in
``rules/structural`` and builds the table rules (``tables.loading.load_tables``); below it,
each rule adds itself to the registry in ``rule.py``.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Dict, List, Optional, Sequence, Tuple, Type, cast

from migrate_tpu.codemod.rules import structural as package
from migrate_tpu.codemod.stages.prefilter import selected
from migrate_tpu.codemod.rules.tables.loading import load_tables
from migrate_tpu.codemod.framework.rule import Rule, registered_rules

_loaded = False


def load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{info.name}")
    load_tables()


def all_rules() -> List[type]:
    """Every rule class, structural modules and rename tables alike, by id."""
    load()
    return registered_rules()


def get_rule(rule_id: str) -> Optional[type]:
    # The registry (``rule.register``) holds only rule classes, though it is typed as plain ones.
    for rule_class in cast("List[Type[Rule]]", all_rules()):
        if rule_class.id == rule_id.upper():
            return rule_class
    return None


_SELECTED: Dict[Tuple[Tuple[str, ...], Tuple[str, ...], str, int], List[type]] = {}


def select_rules(select: Sequence[str] = (), ignore: Sequence[str] = (), target: str = "2.4") -> List[type]:
    """Rules enabled by ``--select``/``--ignore`` (ids or prefixes) for a target; worked out
    once per choice (every file asks), and again only if a rule is registered meanwhile."""
    rules = all_rules()
    key = (tuple(select), tuple(ignore), target, len(rules))
    chosen = _SELECTED.get(key)
    if chosen is None:
        chosen = _SELECTED[key] = [r for r in cast("List[Type[Rule]]", rules) if selected(r.id, r.targets, select, ignore, target)]
    return list(chosen)
