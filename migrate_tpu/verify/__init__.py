"""``migrate-tpu verify``: run a program before and after its migration and compare, step by step.

The original runs under the TF 2.1 surface, the migrated copy under the 2.4 one, both under
the runtime's emulated TPU with the same replicas, hosts, seeds and argv.  The stages, each a
module, in the order a verification passes through them:

* :mod:`~migrate_tpu.verify.plan` -- the two copies in a temporary folder; the migrated one is
  what ``fix`` makes with this run's settings (through :mod:`migrate_tpu.migrated_copy`);
* :mod:`~migrate_tpu.verify.running` -- each run through the runtime's launcher, with the
  recorder (:mod:`migrate_tpu.runtime.record.recorder`) switched on;
* :mod:`~migrate_tpu.verify.compare` -- the verdict on the two records: pure, tested without
  TensorFlow;
* :mod:`~migrate_tpu.verify.report` -- the verdict as text, JSON, markdown or GitHub annotations;
* :mod:`~migrate_tpu.verify.session` -- the whole command, wiring the stages.

:mod:`~migrate_tpu.verify.verdict` holds the types they share.  This package may import the
migrated copy's wiring and the settings (to migrate the copy), and of the runtime only its
launcher and the recorder's names, which import no TensorFlow; never the codemod or the
engine directly.

Verdicts: ``same`` (exit 0), ``diverged`` and ``retraced`` (1), ``error`` (2).
"""

from migrate_tpu.verify.compare import compare
from migrate_tpu.verify.report import report
from migrate_tpu.verify.session import verify
from migrate_tpu.verify.verdict import ERROR, EXIT_STATUS, FORMATS, RunResult, Verdict, VerifyError

__all__ = ["ERROR", "EXIT_STATUS", "FORMATS", "RunResult", "Verdict", "VerifyError", "compare", "report", "verify"]
