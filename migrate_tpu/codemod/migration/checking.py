"""Runs rules over one module: the walk, the version guards, then each rule's findings.

Above the rule families (it knows the version-guard gate) and below the migrator:
``api.py`` checks the module it migrates, ``project/`` the modules it summarises.
"""

from __future__ import annotations

from typing import List

from migrate_tpu.codemod.rules import catalogue
from migrate_tpu.codemod.analysis.walk import Analysis
from migrate_tpu.codemod.framework.rule import Finding
from migrate_tpu.codemod.rules.version_guards.guards import confine, find_guards


def run_rules(analysis: Analysis) -> List[Finding]:
    """Walk ``analysis``'s module with its rules' hooks and return their findings."""
    # Guards tell moved names from the catalogue's tables: load it even when no rule runs.
    catalogue.load()
    analysis.walk()
    if analysis.branch_points or "getattr" in analysis.calls_by_name:  # ``getattr(s, "run", fallback)`` too
        analysis.guards = find_guards(analysis)
    findings: List[Finding] = []
    for rule in analysis.rules:
        findings.extend(rule.finish(analysis))
    for rule in analysis.rules:
        findings.extend(rule.settle(analysis, list(findings)))
    # One place keeps every rule out of the legacy branches of version guards.
    return confine(findings, analysis.guards) if analysis.guards else findings
