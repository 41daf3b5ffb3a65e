"""`migrate-tpu run` and `migrate-tpu envs` as a new user meets them: options misspelt or put
after the script, an interpreter that does not exist, and building envs without the source tree.

These need no TensorFlow: every case ends before a script would import it.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

SCRIPT = "import sys\nsys.exit(3)\n"


def test_a_misspelt_run_option_gets_clicks_suggestion(cli, tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT, "utf-8")
    result = cli("run", "--replica", "4", "train.py")
    assert result.returncode == 2
    assert b"No such option '--replica'. Did you mean '--replicas'?" in result.stderr, result.stderr
    assert b"does not exist" not in result.stderr


def test_run_options_after_the_script_go_to_it_with_a_note_when_it_fails(cli, tmp_path):
    # `python train.py --python tf2.4` would hand both words to the script; so does run. The
    # run fails (no TensorFlow here, or the script's own exit 3), and the note says how to
    # pass them to run instead.
    (tmp_path / "train.py").write_text(SCRIPT, "utf-8")
    result = cli("run", "--no-emulation", "train.py", "--epochs", "2", "--python", "tf2.4", "--hosts=2")
    assert result.returncode != 0
    note = [line for line in result.stderr.decode().splitlines() if "note:" in line]
    assert note, result.stderr
    assert "--python, --hosts came after the script" in note[0]
    assert note[0].endswith("migrate-tpu run --python tf2.4 --hosts=2 train.py --epochs 2")


def test_no_note_when_the_script_has_no_run_option(cli, tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT, "utf-8")
    result = cli("run", "--no-emulation", "train.py", "--epochs", "2")
    assert result.returncode != 0
    assert b"note:" not in result.stderr


def test_an_unknown_interpreter_name_lists_the_env_names(cli, tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT, "utf-8")
    result = cli("run", "--python", "tf9.9", "train.py")
    assert result.returncode == 127
    message = result.stderr.decode()
    assert "--python 'tf9.9': no such interpreter" in message
    assert "tf2.1, tf2.2, tf2.3, tf2.4, tf2.21" in message and "migrate-tpu envs NAME" in message
    assert "No such file or directory" not in message


def test_a_missing_env_names_the_command_that_builds_it(cli, tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT, "utf-8")
    result = cli("run", "--python", "tf2.4", "train.py", env={"MIGRATE_TPU_ENVS": str(tmp_path / "no-envs")})
    assert result.returncode == 127
    assert b"create it with migrate-tpu envs tf2.4" in result.stderr


def test_envs_check_reports_missing_envs_with_the_command_to_run(cli, tmp_path):
    result = cli("envs", "--check", "tf2.4", env={"MIGRATE_TPU_ENVS": str(tmp_path / "no-envs")})
    assert result.returncode == 0
    assert b"tf2.4: not created (run migrate-tpu envs tf2.4)" in result.stdout + result.stderr, result
    assert cli("envs", "--bogus").returncode == 2


@pytest.mark.slow
def test_the_wheel_ships_the_env_builder(tmp_path):
    # A pip user has no scripts/ folder: `migrate-tpu envs` runs the script inside the package.
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
         str(pytest.importorskip("migrate_tpu").__file__).rsplit("/migrate_tpu/", 1)[0]],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("migrate_tpu-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert "migrate_tpu/runtime/process/tf-envs.sh" in names
        assert "migrate_tpu/runtime/process/envs.py" in names
        # the rules' examples kept in files of their own: the catalogue does not load without them
        assert "migrate_tpu/_rules/examples/TPU101_1.py" in names
        script = archive.read("migrate_tpu/runtime/process/tf-envs.sh").decode()
    assert "tensorflow-cpu==2.4.1" in script
