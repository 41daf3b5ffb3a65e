"""Start one run as ``migrate-tpu run`` starts it: forked from the test session's warm interpreter
where that is safe, else as a new interpreter.

    python tests/roundtrip/warm_start.py PYTHON -m migrate_tpu.runtime [OPTIONS] SCRIPT

The round-trip helpers build a run's argv and environment themselves (``launch.command``,
``--quiet``, their variables); this process hands them to ``migrate_tpu.runtime.process.warm.launch``
with its own stdin, stdout and stderr (unfiltered: ``verbose``), and ends as the run ended, with
its exit status or killed by its signal.  A run that must start cold (``warm.unsafe_reason``: no
``PYTHONHASHSEED``, not a run of the runtime, ...) replaces this process, so it is the very run
it was before.  Killed, this process takes the run with it (the run watches its launcher).

What a warm start saves is the interpreter's start and ``import tensorflow``: 2-7 s a run here.
"""

import os
import signal
import sys

from migrate_tpu.runtime.process import warm


def main(argv):
    status = warm.launch(argv, dict(os.environ), verbose=True, label="warm_start")
    if status is None:
        os.execv(argv[0], argv)
    if status < 0:  # killed by a signal: so is this process, as the run's own parent would see it
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
