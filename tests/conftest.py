import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cli(tmp_path):
    """Run the real CLI in a subprocess: ``cli("fix", path, input=...)``."""
    import subprocess

    def run(*args, input=None, cwd=None, env=None):
        full_env = dict(os.environ)
        full_env.pop("PRE_COMMIT", None)
        full_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "migrate_tpu", *map(str, args)],
            input=input,
            capture_output=True,
            cwd=cwd or tmp_path,
            env=full_env,
        )

    return run
