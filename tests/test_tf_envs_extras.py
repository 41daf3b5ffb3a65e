"""`migrate-tpu envs` adds the companions notebooks import (matplotlib, SciPy, TensorBoard) to
an env that is already built, without rebuilding it and with its numpy held. The script runs
for real (bash) against a stand-in env whose python logs what pip is asked for."""

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the script waits in half seconds while pip "runs"

SCRIPT = Path(__file__).resolve().parents[1] / "migrate_tpu" / "runtime" / "process" / "tf-envs.sh"


def pinned(name):
    return re.search(rf'^{name}="([^"]*)"', SCRIPT.read_text(), re.M).group(1)


def stand_in_env(envs, log):
    env = envs / "tf2.4"
    site = env / "lib" / "python3.8" / "site-packages"
    (site / "tensorflow_cpu-2.4.1.dist-info").mkdir(parents=True)
    (site / "tensorflow").mkdir()
    (site / "tensorflow" / "__init__.py").write_text("")
    (env / ".migrate-tpu-stamp").write_text(pinned("REQ_tf2_4"))
    (env / "kept").write_text("a rebuild would delete me")
    python = env / "bin" / "python"
    python.parent.mkdir()
    python.write_text("#!/bin/sh\n"
                      'case "$1" in\n'
                      f'  -m) echo "$*" >> "{log}" ;;\n'
                      '  -c) case "$2" in *numpy*) echo 1.19.5 ;; esac ;;\n'
                      "esac\n"
                      "exit 0\n")
    python.chmod(0o755)
    return env


def envs_script(envs, *args):
    return subprocess.run(["bash", str(SCRIPT)] + list(args), env={"MIGRATE_TPU_ENVS": str(envs), "PATH": "/usr/bin:/bin"},
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)


def test_a_built_env_gets_its_companions_once_without_a_rebuild(tmp_path):
    log = tmp_path / "pip.log"
    env = stand_in_env(tmp_path / "envs", log)
    checked = envs_script(tmp_path / "envs", "--check", "tf2.4")
    assert "tf2.4: lacks matplotlib==3.5.3 scipy==1.6.3" in checked.stdout, checked.stdout
    assert not log.exists()  # --check installs nothing

    done = envs_script(tmp_path / "envs", "tf2.4")
    assert done.returncode == 0 and "tf2.4: ready" in done.stdout, done.stdout
    assert log.read_text().splitlines() == ["-m pip install --progress-bar off matplotlib==3.5.3 scipy==1.6.3 numpy==1.19.5"]
    assert (env / ".migrate-tpu-extras-stamp").read_text() == pinned("EXTRAS_tf2_4")
    assert (env / "kept").exists()  # the env was not rebuilt

    again = envs_script(tmp_path / "envs", "tf2.4")
    assert "tf2.4: ready" in again.stdout and len(log.read_text().splitlines()) == 1  # nothing to add the second time
