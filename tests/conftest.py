import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

REQUIRE_TF_ENVS = "MIGRATE_TPU_REQUIRE_TF_ENVS"


def tf_envs_required() -> bool:
    """Whether a missing TensorFlow interpreter (scripts/tf-envs) fails a test instead of skipping it.

    On CI (``CI`` set to true, as GitHub Actions and most CI systems do) a
    skipped round trip would pass silently, so it fails there;
    ``MIGRATE_TPU_REQUIRE_TF_ENVS=1`` or ``=0`` decides explicitly.
    """
    explicit = os.environ.get(REQUIRE_TF_ENVS, "").strip()
    if explicit in ("0", "1"):
        return explicit == "1"
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def missing_tf_env(message: str) -> None:
    """Skip the test for a missing TensorFlow interpreter, or fail it where they are required."""
    if tf_envs_required():
        pytest.fail(f"{message} (required here: CI is set or {REQUIRE_TF_ENVS}=1; {REQUIRE_TF_ENVS}=0 lets it skip)", pytrace=False)
    sys.stderr.write("\n" + message + "\n")
    pytest.skip(message)


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
