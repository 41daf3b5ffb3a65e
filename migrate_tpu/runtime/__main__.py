"""``python -m migrate_tpu.runtime [--replicas N] [--tf-api 2.1|2.4] [--no-emulation] SCRIPT [ARGS...]``."""

import sys

from migrate_tpu.runtime.process.runner import main

if __name__ == "__main__":
    sys.exit(main())
