"""The runtime's one ledger of patches (runtime/patches.py): every change to TensorFlow's objects
goes in and comes out through it, newest first, and a run leaves nothing behind.  The ledger's
rules without TensorFlow; what a run of TF 2.1 code patches, and that uninstalling puts every
attribute of TensorFlow's and Keras's modules and classes back, on the real interpreters."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from migrate_tpu.runtime import patches

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
from roundtrip_helpers import REPO, TF21, TF24, TF221, require_python

PROGRAM = Path(__file__).resolve().parent / "programs" / "patch_ledger.py"


class Base:
    inherited = "base"


class Owner(Base):
    own = "own"


def test_a_part_is_undone_newest_first_and_an_inherited_name_is_not_copied_down():
    patches.patch("a", Owner, "own", 1)
    patches.patch("a", Owner, "own", 2)
    patches.patch("a", Owner, "inherited", 3)
    assert patches.entries("a") == [("a", f"{__name__}.Owner", "own"), ("a", f"{__name__}.Owner", "own"),
                                    ("a", f"{__name__}.Owner", "inherited")]
    assert patches.undo("a") == 3
    assert Owner.own == "own" and "inherited" not in Owner.__dict__ and Owner.inherited == "base"
    assert patches.entries("a") == []


def test_parts_that_wrap_each_others_patch_are_undone_together():
    """Part b wraps what part a put there: undone one part at a time, a's original would come
    back under b's value; undone together, newest first, the original is what is left."""
    table = {"key": "original"}
    patches.patch_item("a", table, "key", "a's")
    patches.patch_item("b", table, "key", "b's over a's")
    patches.patch_item("a", table, "new", "a's new key")
    assert patches.undo("a", "b") == 3
    assert table == {"key": "original"}


def test_a_change_made_another_way_is_put_back_by_its_own_function():
    put_back = []
    patches.note("c", Owner, "__class__", Base, lambda: put_back.append("done"))
    assert patches.entries("c") == [("c", f"{__name__}.Owner", "__class__")]
    patches.undo("c")
    assert put_back == ["done"] and patches.entries() == []


@pytest.mark.tf
@pytest.mark.parametrize("python, api, parts", [
    (TF24, "2.1", "api_paths emulation legacy moved_calls recorder releases seeding tpu_machine_io tpu_worker_input"),
    (TF221, "2.1", "api_paths emulation legacy moved_calls recorder releases seeding tpu_machine_io tpu_worker_input"),
    (TF21, "2.1", "api_paths emulation legacy moved_calls recorder seeding tpu_machine_io tpu_worker_input"),
], ids=["tf2.4", "tf2.21", "tf2.1"])
def test_what_a_run_patches_is_listed_and_all_of_it_put_back(python, api, parts, tmp_path):
    """A run of TF 2.1 code under verify patches TensorFlow through nine parts of the runtime
    (releases, on TF 2.1 itself, shows nothing new); after them, not one attribute of
    TensorFlow's or Keras's modules and classes differs from before (tpu_machine_io's connect
    wraps the emulation's: undone one part at a time, the emulated connect stayed behind)."""
    python = require_python(python)
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3", TF_USE_LEGACY_KERAS="1")
    done = subprocess.run([python, str(PROGRAM), api, str(tmp_path / "record.json")], cwd=str(tmp_path), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert lines["PARTS"] == parts
    assert int(lines["PATCHED"]) > 100
    assert (lines["PREFETCH_LEFT_OUT"], lines["PREFETCH_AFTER"]) == ("True", "False")  # seeding's, and put back
    assert lines["LEFT"] == "[]"
    assert lines["CHANGED"] == "[]"
