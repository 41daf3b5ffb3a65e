"""The engine's contract with the migrator it runs (engine/contracts.py), held against what
the composition root really hands it: the codemod's findings and outcomes, and compose's
EngineMigrator. The engine reads nothing outside these protocols."""

import ast
from pathlib import Path

from migrate_tpu.codemod.migration.api import Outcome as CodemodOutcome
from migrate_tpu.codemod.migration.api import migrate
from migrate_tpu.codemod.foundation.findings import Report
from migrate_tpu.codemod.migration.migrator import TPUMigrator
from migrate_tpu.codemod.foundation.options import Options
from migrate_tpu.compose import EngineMigrator
from migrate_tpu.engine import contracts
from migrate_tpu.engine.file_finding import FileFinding

SOURCE = "import tensorflow as tf\n\ndef step(strategy, x):\n    return strategy.experimental_run_v2(fn, args=(x,))\n"
# The names the engine gives findings, outcomes and migrators where it reads them.
READERS = ("report", "r", "finding", "outcome", "result", "migrator")
ENGINE = Path(__file__).resolve().parent.parent / "migrate_tpu" / "engine"


def test_the_codemod_and_compose_satisfy_the_engines_protocols():
    outcome = migrate(SOURCE, Options(mode="diff"))
    assert isinstance(outcome, CodemodOutcome) and outcome.reports
    assert isinstance(outcome, contracts.Outcome)
    assert all(isinstance(report, contracts.Finding) for report in outcome.reports)
    assert isinstance(EngineMigrator(TPUMigrator()), contracts.Migrator)
    # The codemod alone is not an engine migrator: its errors are its own (compose maps them).
    assert not isinstance(TPUMigrator(), contracts.Migrator)


def test_the_protocol_names_every_field_of_a_finding():
    # A field the codemod adds must be added to the contract (and so to FileFinding), or the
    # engine would drop it on the way to the reports.
    report = migrate(SOURCE, Options(mode="diff")).reports[0]
    kept = FileFinding.of(report).to_dict()
    for engine_only in ("cell", "file_line", "file_column", "file_as_read"):
        kept.pop(engine_only)
    assert kept == report.to_dict()
    assert set(contracts.Finding.__annotations__) == set(Report.__dataclass_fields__)


def test_the_engine_reads_no_finding_or_outcome_field_with_a_getattr_default():
    # getattr(report, "cell", None)-style reads were how the contract used to be unstated.
    fields = set(contracts.Finding.__annotations__) | set(contracts.Outcome.__annotations__) | set(FileFinding.__dataclass_fields__)
    offenders = []
    for path in sorted(ENGINE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                    and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id in READERS
                    and isinstance(node.args[1], ast.Constant) and node.args[1].value in fields):
                offenders.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == []
