"""A project's ``exclude`` keeps files out of the project the codemod reads, not only out of the
run: this repository's rule examples (rules/examples/TPU101_3.py defines a stand-in
``SingleDeviceStrategy`` with ``experimental_run_v2`` and no ``run``) once made the shipped
example's TPU101 an unsafe fix, as if that fixture were a class of the example's project."""

import subprocess
import sys
from pathlib import Path

from migrate_tpu.compose import ProjectFiles

REPO = Path(__file__).resolve().parents[1]


def _project(tmp_path, exclude=()):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "fixtures").mkdir(exist_ok=True)
    (tmp_path / "fixtures" / "stand_in.py").write_text("class S:\n    def experimental_run_v2(self, fn):\n        return fn()\n")
    (tmp_path / "train.py").write_text("strategy.experimental_run_v2(step)\n")
    return ProjectFiles((str(tmp_path),), None, ((), ()), exclude)


def test_an_excluded_folder_is_not_a_module_of_the_project(tmp_path):
    assert sorted(Path(p).name for p in _project(tmp_path).tree_files(str(tmp_path / "train.py"))) == ["stand_in.py", "train.py"]
    assert [Path(p).name for p in _project(tmp_path, ("fixtures",)).tree_files(str(tmp_path / "train.py"))] == ["train.py"]
    assert [Path(p).name for p in _project(tmp_path, ("fixtures/stand_in.py",)).tree_files(str(tmp_path / "train.py"))] == ["train.py"]


def test_the_exclude_travels_with_the_project_to_workers(tmp_path):
    import pickle
    project = pickle.loads(pickle.dumps(_project(tmp_path, ("fixtures",))))
    assert project.exclude == ("fixtures",)


def test_the_shipped_example_gets_its_safe_renames_in_this_repository():
    done = subprocess.run([sys.executable, "-m", "migrate_tpu", "check", "examples/"], cwd=str(REPO),
                          stdout=subprocess.PIPE, universal_newlines=True, timeout=120)
    renames = [line for line in done.stdout.splitlines() if " TPU101 " in line]
    assert len(renames) == 2 and all("TPU101 [*]" in line for line in renames), done.stdout
