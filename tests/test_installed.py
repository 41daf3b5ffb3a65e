"""`migrate-tpu check --installed`: an interpreter's installed distributions, read only.

The fast tests read site folders laid out as pip and setuptools lay them out (RECORD,
installed-files.txt, top_level.txt, direct_url.json) and resolve interpreters; the slow
ones install real wheels with pip (no network: a wheel built here, `--no-index`) into a
virtualenv made from this interpreter, and run the real CLI on it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from migrate_tpu.compose import ProjectFiles
from migrate_tpu.installed_check import API_DISTRIBUTIONS, ask_interpreter, installed_python
from migrate_tpu.engine.installed import InstalledError, Interpreter, distributions, inventory, normalized
from migrate_tpu.settings import SettingsError

OLD_TPU = (
    "import tensorflow as tf\n"
    "\n"
    "\n"
    "def train(strategy, step, x):\n"
    "    return strategy.experimental_run_v2(step, args=(x,))\n"
    "\n"
    "\n"
    "def make(resolver):\n"
    "    return tf.distribute.experimental.TPUStrategy(resolver)\n"
)
CLEAN = "def add(a, b):\n    return a + b\n"


def _dist_info(site: Path, name: str, version: str, files: dict, extra: dict = None) -> Path:
    """Files as a wheel installs them, with their ``*.dist-info`` (METADATA, RECORD)."""
    for relative, text in files.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: x\n\nName: not-this-one\n")
    for relative, text in (extra or {}).items():
        (info / relative).write_text(text)
    rows = [f"{relative},sha256=x,1" for relative in files] + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,", "../../../bin/tool,,"]
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    return info


@pytest.fixture
def site(tmp_path):
    """A folder of distributions: a package, a namespace package's part, a lone module, an
    egg-info folder of each kind, a distutils egg-info file, an editable install."""
    site = tmp_path / "lib" / "site-packages"
    site.mkdir(parents=True)
    _dist_info(site, "Old_TPU.lib", "0.3.1", {"oldtpu/__init__.py": OLD_TPU, "oldtpu/util.py": CLEAN, "oldtpu/data.json": "{}"})
    _dist_info(site, "google-thing", "1.0", {"google/thing/__init__.py": OLD_TPU})
    _dist_info(site, "lonely", "2.0", {"lonely.py": OLD_TPU})
    _dist_info(site, "tensorflow-cpu", "2.4.1", {"tensorflow/__init__.py": OLD_TPU})
    _dist_info(site, "mine", "0.1", {"__editable___mine_finder.py": CLEAN},
               {"direct_url.json": json.dumps({"url": "file:///home/me/mine", "dir_info": {"editable": True}})})
    listed = site / "eggy-1.2-py3.11.egg-info"
    listed.mkdir()
    (listed / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: eggy\nVersion: 1.2\n")
    (listed / "installed-files.txt").write_text("../eggy/__init__.py\n../eggy/tests/test_it.py\nPKG-INFO\n")
    (site / "eggy" / "tests").mkdir(parents=True)
    (site / "eggy" / "__init__.py").write_text(OLD_TPU)
    (site / "eggy" / "tests" / "test_it.py").write_text(OLD_TPU)
    topped = site / "toppy-0.5-py3.11.egg-info"
    topped.mkdir()
    (topped / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: toppy\nVersion: 0.5\n")
    (topped / "top_level.txt").write_text("toppy\n")
    (site / "toppy" / "sub").mkdir(parents=True)
    (site / "toppy" / "__init__.py").write_text(CLEAN)
    (site / "toppy" / "sub" / "deep.py").write_text(OLD_TPU)
    (site / "oldstyle-0.9-py3.11.egg-info").write_text("Metadata-Version: 1.0\nName: oldstyle\nVersion: 0.9\n")
    return site


def _interpreter(site: Path) -> Interpreter:
    return Interpreter("/x/bin/python", "3.11.7", (str(site),))


def test_distributions_are_read_from_their_metadata(site):
    found = {d.name: d for d in distributions([str(site)])}
    assert list(found) == ["eggy", "google-thing", "lonely", "mine", "Old_TPU.lib", "oldstyle", "tensorflow-cpu", "toppy"]  # by PEP 503 name
    old = found["Old_TPU.lib"]
    # the first Name of the header block; only the .py files RECORD lists, in the folder
    assert (old.version, old.files) == ("0.3.1", (str(site / "oldtpu" / "__init__.py"), str(site / "oldtpu" / "util.py")))
    assert old.tops == (str(site / "oldtpu"),)
    assert found["google-thing"].tops == (str(site / "google" / "thing"),)  # a namespace package: one level deeper
    assert found["lonely"].tops == (str(site),)
    assert found["eggy"].files == (str(site / "eggy" / "__init__.py"), str(site / "eggy" / "tests" / "test_it.py"))
    assert found["toppy"].files == (str(site / "toppy" / "__init__.py"), str(site / "toppy" / "sub" / "deep.py"))
    assert (found["oldstyle"].version, found["oldstyle"].files) == ("0.9", ())
    assert (found["mine"].editable, found["mine"].files) == ("/home/me/mine", ())


def test_the_first_folder_on_the_path_wins_a_name(site, tmp_path):
    user = tmp_path / "user-site"
    user.mkdir()
    _dist_info(user, "lonely", "3.0", {"lonely.py": CLEAN})
    found = {d.name: d for d in distributions([str(user), str(site)])}
    assert found["lonely"].version == "3.0" and found["lonely"].files == (str(user / "lonely.py"),)


def test_the_inventory_leaves_out_the_api_distributions_and_editable_installs(site):
    found = inventory(_interpreter(site), leave_out=API_DISTRIBUTIONS)
    assert [d.name for d in found.checked] == ["eggy", "google-thing", "lonely", "Old_TPU.lib", "toppy"]
    assert [d.name for d in found.left_out] == ["tensorflow-cpu"]
    assert [d.name for d in found.editable] == ["mine"]
    assert found.files()[:2] == [str(site / "eggy" / "__init__.py"), str(site / "eggy" / "tests" / "test_it.py")]
    assert found.owner(str(site / "oldtpu" / "util.py")).name == "Old_TPU.lib"
    assert found.flat_tops() == (str(site),)
    line = found.describe()
    assert "checking 5 distributions (8 files) installed for /x/bin/python (Python 3.11.7)" in line
    assert "define the APIs rather than call them: tensorflow-cpu 2.4.1" in line
    assert "mine 0.1 (/home/me/mine)" in line


def test_named_distributions_are_checked_whatever_they_are(site):
    found = inventory(_interpreter(site), ["old-tpu-lib", "TensorFlow_CPU"], leave_out=API_DISTRIBUTIONS)
    assert [d.name for d in found.checked] == ["Old_TPU.lib", "tensorflow-cpu"]
    assert normalized("Old_TPU.lib") == "old-tpu-lib"
    with pytest.raises(InstalledError, match="not installed for /x/bin/python: nope \\(installed: eggy, google-thing"):
        inventory(_interpreter(site), ["nope"])


def test_excludes_match_paths_in_the_folder_of_distributions(site):
    found = inventory(_interpreter(site), exclude=("*/tests/*", "lonely.py"))
    assert str(site / "eggy" / "tests" / "test_it.py") not in found.files()
    assert str(site / "lonely.py") not in found.files()
    assert found.excluded_files == 2 and "2 files excluded" in found.describe()


def test_a_distribution_is_its_own_project_inside_a_repository(site, tmp_path):
    # site-packages of a virtualenv inside a git repository: the repository is not its project
    (tmp_path / ".git").mkdir()
    found = inventory(_interpreter(site))
    project = ProjectFiles((), tops=(found.tops(), found.flat_tops()))
    assert project.tree_top(str(site / "oldtpu" / "util.py")) == site / "oldtpu"
    assert set(project.tree_files(str(site / "oldtpu" / "util.py"))) == {str(site / "oldtpu" / "__init__.py"), str(site / "oldtpu" / "util.py")}
    # the modules right in the folder, no package
    assert project.tree_files(str(site / "lonely.py")) == (str(site / "__editable___mine_finder.py"), str(site / "lonely.py"))
    assert ProjectFiles(()).tree_top(str(site / "oldtpu" / "util.py")) == tmp_path  # without tops: the repository


@pytest.mark.slow
def test_asking_an_interpreter(tmp_path):
    answer = ask_interpreter(sys.executable)
    assert answer.version == "%d.%d.%d" % sys.version_info[:3]
    import sysconfig

    assert os.path.realpath(sysconfig.get_paths()["purelib"]) in answer.folders
    with pytest.raises(InstalledError, match="cannot run"):
        ask_interpreter(str(tmp_path / "no-python"))
    failing = tmp_path / "python"
    failing.write_text("#!/bin/sh\necho 'SyntaxError: nope' >&2\nexit 1\n")
    failing.chmod(0o755)
    with pytest.raises(InstalledError, match="could not say where its packages are: SyntaxError: nope"):
        ask_interpreter(str(failing))


def _fake_env(envs: Path, name: str, python: str) -> None:
    """An env as `migrate-tpu envs` leaves it, its python handing over to ``python`` (a link
    would not do: a virtualenv's python finds its pyvenv.cfg beside the path it was run by)."""
    (envs / name / "bin").mkdir(parents=True)
    script = envs / name / "bin" / "python"
    script.write_text(f'#!/bin/sh\nexec "{python}" "$@"\n')
    script.chmod(0o755)
    (envs / name / ".migrate-tpu-stamp").write_text("")


def test_the_interpreter_named_by_env_folder_or_default(tmp_path):
    envs = tmp_path / "envs"
    _fake_env(envs, "tf2.4", sys.executable)
    environ = {"MIGRATE_TPU_ENVS": str(envs)}
    assert installed_python("tf2.4", environ) == str(envs / "tf2.4" / "bin" / "python")
    with pytest.raises(SettingsError, match="tf2.1: that env is not built yet .*`migrate-tpu envs tf2.1` builds it"):
        installed_python("tf2.1", environ)
    assert installed_python(str(envs / "tf2.4"), environ) == str(envs / "tf2.4" / "bin" / "python")  # a virtualenv's folder
    assert installed_python(None, {"VIRTUAL_ENV": str(envs / "tf2.4")}) == str(envs / "tf2.4" / "bin" / "python")
    assert installed_python(None, {}) == sys.executable
    with pytest.raises(SettingsError, match="no such interpreter"):
        installed_python("no-such-python-here", environ)
    with pytest.raises(SettingsError, match="no bin/python"):
        installed_python(str(tmp_path), environ)


# -- the real CLI on a virtualenv with pip-installed wheels (slow: pip takes seconds) --------


def _wheel(folder: Path, name: str, version: str, files: dict) -> Path:
    """A pure-Python wheel, as a build backend writes one."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    entries = dict(files)
    entries[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n"
    entries[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    rows = []
    for path, text in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        rows.append(f"{path},sha256={digest},{len(text.encode())}")
    entries[f"{info}/RECORD"] = "\n".join(rows + [f"{info}/RECORD,,"]) + "\n"
    wheel = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in entries.items():
            archive.writestr(path, text)
    return wheel


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A virtualenv with three distributions pip installed from local wheels."""
    root = tmp_path_factory.mktemp("installed")
    wheels = [
        _wheel(root, "old-tpu-lib", "0.3.1", {"oldtpu/__init__.py": OLD_TPU, "oldtpu/clean.py": CLEAN}),
        _wheel(root, "tidy", "1.0", {"tidy.py": CLEAN}),
        _wheel(root, "tensorflow-cpu", "2.4.1", {"tensorflow/__init__.py": OLD_TPU}),
    ]
    env = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index", "--no-compile",
                    "--disable-pip-version-check", *map(str, wheels)], check=True)
    site = Path(ask_interpreter(str(python)).folders[0])
    return python, site


def _snapshot(folder: Path) -> dict:
    return {str(path): hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.slow
def test_check_installed_groups_findings_by_distribution_and_writes_nothing(cli, venv):
    python, site = venv
    before = _snapshot(site)
    done = cli("check", "--installed", "--python", python, "--no-cache")
    assert done.returncode == 1, done.stderr
    out = done.stdout.decode().splitlines()
    module = site / "oldtpu" / "__init__.py"
    assert out[0] == "old-tpu-lib 0.3.1 (3 findings)"
    # the same findings at the same places as `check FILE` gives the file named
    named = cli("check", module, "--no-cache")
    assert out[1:] == named.stdout.decode().splitlines() and len(out) == 5  # a help line under the unsafe fix
    assert [line.split(" ")[:2] for line in out[1:] if line.startswith("/")] == [
        [f"{module}:5:21:", "TPU101"], [f"{module}:5:41:", "TPU301"], [f"{module}:9:12:", "TPU103"]]
    errors = done.stderr.decode()
    assert "checking 2 distributions (3 files) installed for" in errors
    assert "not checked, as they define the APIs rather than call them: tensorflow-cpu 2.4.1" in errors
    assert "By distribution: old-tpu-lib 0.3.1 3" in errors
    assert _snapshot(site) == before
    # TensorFlow's own, when asked for; a distribution named alone
    both = cli("check", "--installed", "--python", python, "--include-tensorflow", "--no-cache", "-q")
    assert [line for line in both.stdout.decode().splitlines() if not line.startswith(("/", " "))] == ["old-tpu-lib 0.3.1 (3 findings)",
                                                                                                     "tensorflow-cpu 2.4.1 (3 findings)"]
    tidy = cli("check", "--installed", "--python", python, "tidy", "--no-cache")
    assert (tidy.returncode, tidy.stdout) == (0, b"")
    assert "checking 1 distribution (1 file)" in tidy.stderr.decode()
    missing = cli("check", "--installed", "--python", python, "nope")
    assert missing.returncode == 2 and "error: not installed for" in missing.stderr.decode()


@pytest.mark.slow
def test_check_installed_json_and_sarif_name_each_findings_distribution(cli, venv):
    python, site = venv
    done = cli("check", "--installed", "--python", python, "--format", "json", "--no-cache")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    module = str(site / "oldtpu" / "__init__.py")
    assert [(f["path"], f["line"], f["column"], f["rule"], f["distribution"], f["version"]) for f in report["findings"]] == [
        (module, 5, 21, "TPU101", "old-tpu-lib", "0.3.1"), (module, 5, 41, "TPU301", "old-tpu-lib", "0.3.1"), (module, 9, 12, "TPU103", "old-tpu-lib", "0.3.1")]
    installed = report["installed"]
    assert installed["python"] == str(python)
    assert [(d["name"], d["version"], d["files"], d["findings"]) for d in installed["distributions"]] == [("old-tpu-lib", "0.3.1", 2, 3), ("tidy", "1.0", 1, 0)]
    assert installed["not_checked"] == [{"name": "tensorflow-cpu", "version": "2.4.1", "why": "defines the APIs"}]
    assert report["summary"]["findings"] == 3
    sarif = json.loads(cli("check", "--installed", "--python", python, "--format", "sarif", "--no-cache").stdout)
    assert {r["properties"]["distribution"] for r in sarif["runs"][0]["results"]} == {"old-tpu-lib"}
    markdown = cli("check", "--installed", "--python", python, "--format", "markdown", "--no-cache").stdout.decode()
    assert "| `old-tpu-lib` | 0.3.1 | 3 |" in markdown


@pytest.mark.slow
def test_fix_and_diff_refuse_installed_packages_and_env_names_resolve(cli, venv, tmp_path):
    python, site = venv
    before = _snapshot(site)
    for command in ("fix", "diff"):
        done = cli(command, "--installed", "--python", python)
        assert done.returncode == 2
        assert f"`{command} --installed`: migrate-tpu never changes installed packages" in done.stderr.decode()
    assert _snapshot(site) == before
    envs = tmp_path / "envs"
    _fake_env(envs, "tf2.4", str(python))
    named = cli("check", "--installed", "--python", "tf2.4", "--no-cache", "-q", env={"MIGRATE_TPU_ENVS": str(envs)})
    assert named.returncode == 1 and named.stdout.decode().startswith("old-tpu-lib 0.3.1 (3 findings)\n")
    unbuilt = cli("check", "--installed", "--python", "tf2.1", env={"MIGRATE_TPU_ENVS": str(envs)})
    assert unbuilt.returncode == 2 and "`migrate-tpu envs tf2.1` builds it" in unbuilt.stderr.decode()
    stray = cli("check", "--python", str(python), ".")
    assert stray.returncode == 2 and "--python and --include-tensorflow go with --installed" in stray.stderr.decode()


@pytest.mark.tf
def test_check_installed_on_a_tensorflow_env(cli):
    from migrate_tpu.runtime.process import envs

    if envs.interpreter("tf2.4") is None:
        from conftest import missing_tf_env

        missing_tf_env("the tf2.4 env is not built (migrate-tpu envs tf2.4)")
    done = cli("check", "--installed", "--python", "tf2.4", "--no-cache", "--exit-zero")
    errors = done.stderr.decode()
    assert done.returncode == 0, errors
    assert "not checked, as they define the APIs rather than call them:" in errors and "tensorflow-cpu 2.4.1" in errors
