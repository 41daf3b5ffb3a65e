"""``migrate-tpu verify``: run a program before and after its migration and compare, step by step.

The original runs under the TF 2.1 surface, the migrated copy under the 2.4 one, both under
the runtime's emulated TPU with the same replicas, hosts, seeds and argv.  Its folders are its
layers, bottom first, as the codemod's and the runtime's are (``tests/test_walls.py``,
``VERIFY_LAYERS``); this module, the door, re-exports what the CLI calls:

* ``values/`` -- the types every stage shares, when two values agree, the changes as hunks;
* ``runs/`` -- the two copies (the migrated one is what ``fix`` makes with this run's settings,
  through :mod:`migrate_tpu.migrated_copy`), each run through the runtime's launcher with the
  recorder (:mod:`migrate_tpu.runtime.record.recorder`) switched on, two at once;
* ``judge/`` -- the verdict on the two records (pure, tested without TensorFlow), the spread,
  the original's repeatability and the power of a ``same``, the advice;
* ``blame/`` -- which change is to blame for a divergence;
* ``command/`` -- the whole command (``session``) and the verdict as text, JSON, markdown or
  GitHub annotations (``report``).

This package may import the migrated copy's wiring and the settings (to migrate the copy), and
of the runtime only its launcher and the recorder's names, which import no TensorFlow; never
the codemod or the engine directly.

Verdicts: ``same`` (exit 0), ``diverged`` and ``retraced`` (1), ``error`` (2).
"""

from migrate_tpu.verify.judge.compare import compare
from migrate_tpu.verify.command.options import VerifyOptions
from migrate_tpu.verify.command.report import report
from migrate_tpu.verify.command.session import verify
from migrate_tpu.verify.values.verdict import ERROR, EXIT_STATUS, FORMATS, RunResult, Verdict, VerifyError

__all__ = ["ERROR", "EXIT_STATUS", "FORMATS", "RunResult", "Verdict", "VerifyError", "VerifyOptions", "compare", "report", "verify"]
