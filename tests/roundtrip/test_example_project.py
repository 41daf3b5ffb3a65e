"""Round trip of the example project (``examples/tpu_classifier``): its main
script gives the same numbers before migration (TF 2.1.0, ``--tf-api 2.1``) and
after ``migrate-tpu fix`` on the whole folder (TF 2.4.1 and TF 2.21), and the
unmigrated script stops on TF 2.4 where a TPU would."""

import json
import shutil
import subprocess
import sys

import pytest

from roundtrip_helpers import (REPO, TF21, TF24, TF221, _cli_env, assert_same, require_codemod_cli,
                               require_python, start)

pytestmark = pytest.mark.roundtrip

EXAMPLE = REPO / "examples" / "tpu_classifier"
MAIN = "train.py"


def last_json(run):
    assert run.returncode == 0, run.describe()
    for line in reversed(run.stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    pytest.fail("no JSON line in the output of " + run.describe())


def test_example_main_script_round_trip(tmp_path):
    if not (EXAMPLE / MAIN).is_file():
        pytest.skip("!!! examples/tpu_classifier/{} is missing: example round trip NOT RUN".format(MAIN))
    py21, py24, py221 = require_python(TF21), require_python(TF24), require_python(TF221)
    require_codemod_cli()
    migrated = tmp_path / "tpu_classifier"
    shutil.copytree(str(EXAMPLE), str(migrated))
    done = subprocess.run([sys.executable, "-m", "migrate_tpu", "fix", str(migrated)],
                          cwd=str(tmp_path), env=_cli_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    runs = {
        "before": start(py21, EXAMPLE / MAIN, tf_api="2.1", replicas=8, label="example on TF 2.1.0"),
        "unmigrated@2.4": start(py24, EXAMPLE / MAIN, replicas=8, label="unmigrated example on TF 2.4.1"),
        "after@2.4": start(py24, migrated / MAIN, replicas=8, label="migrated example on TF 2.4.1"),
        "after@2.21": start(py221, migrated / MAIN, replicas=8, label="migrated example on TF 2.21"),
    }
    before = last_json(runs["before"])
    for key in ("after@2.4", "after@2.21"):
        assert_same(before, last_json(runs[key]), where="example {}: {}".format(MAIN, key),
                    rel=1e-3, abs_=2e-4)  # the script prints 4 decimals
    unmigrated = runs["unmigrated@2.4"]
    assert unmigrated.returncode != 0, unmigrated.describe()
    assert "Error" in unmigrated.stderr, unmigrated.describe()
