"""A migrated notebook runs under `migrate-tpu run` with the same results.

The notebook as written (TF 2.1 APIs) runs on TensorFlow 2.1; after `fix` it
runs on TensorFlow 2.4.1 and prints the same RESULT line. The interpreters
come from `scripts/tf-envs`; the test is skipped where they are missing
(it fails instead on CI: see tests/conftest.py).
"""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import missing_tf_env

from .conftest import ENVS

pytestmark = pytest.mark.roundtrip


def _python(name):
    path = ENVS / name / "bin" / "python"
    if not path.exists():
        missing_tf_env(f"!!! no {name} interpreter under {ENVS}: notebook round trip NOT RUN; create it with scripts/tf-envs {name}")
    return path


def _result(completed):
    match = re.search(r"^RESULT (.*)$", completed.stdout, re.M)
    assert match, completed.stdout[-2000:] + completed.stderr[-4000:]
    return json.loads(match.group(1))


#: A seeded hash: each run is a fork of the session's warm interpreter (docs/runtime.md, "Warm
#: starts"), not a new interpreter that imports TensorFlow again.
WARM = {"PYTHONHASHSEED": "0"}


def test_migrated_notebook_gives_the_same_results(run_cli, fixture_copy):
    tf21, tf24 = _python("tf2.1"), _python("tf2.4")
    notebook = fixture_copy("tpu_colab.ipynb")
    before = run_cli("run", "--python", tf21, "--replicas", "8", notebook.name, env=WARM)
    assert before.returncode == 0, before.stderr[-4000:]
    expected = _result(before)

    unmigrated = run_cli("run", "--python", tf24, "--replicas", "8", notebook.name, env=WARM)
    assert unmigrated.returncode != 0
    assert "experimental_run_v2" in unmigrated.stderr

    assert run_cli("fix", notebook.name).returncode == 1  # TPU202 stays manual
    after = run_cli("run", "--python", tf24, "--replicas", "8", notebook.name, env=WARM)
    assert after.returncode == 0, after.stderr[-4000:]
    assert _result(after) == expected
    assert len(expected["losses"]) == 12
