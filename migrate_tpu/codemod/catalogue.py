"""Loads every rule once: the structural modules in ``codemod/rules`` and the tables."""

from __future__ import annotations

import importlib
import pkgutil

_loaded = False


def load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from migrate_tpu.codemod import rules as package
    from migrate_tpu.codemod.renames import load_tables

    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{info.name}")
    load_tables()
