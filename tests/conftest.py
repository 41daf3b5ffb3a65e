import os
import re
import signal
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


@pytest.fixture(scope="session", autouse=True)
def _programs_temporary_folder(tmp_path_factory):
    """What the programs the tests run leave in their temporary folder (a TF program's
    ``tempfile.mkdtemp()``, a checkpoint in it) goes into a folder under pytest's own, which
    pytest prunes as it prunes its own (the last three sessions), not into /tmp for ever."""
    import tempfile

    folder = tmp_path_factory.mktemp("programs-tmp")
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None  # looked up again from TMPDIR
    yield folder
    if saved is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved
    tempfile.tempdir = None


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


# --------------------------------------------------------------------------
# The test tiers (docs/architecture.md, "Test tiers"):
#   tf        starts a TensorFlow interpreter (added here to `roundtrip` tests and to the
#             modules of the folders below that name an interpreter; a test without it
#             that starts one fails: the tripwire below);
#   slow      outside the fast tier: every `tf` test (added here), and tests without
#             TensorFlow that take about 0.7 s or more (marked in their files);
#   fast tier `pytest -m "not slow"`; `pytest -m "not tf"` is everything but TensorFlow.
# --------------------------------------------------------------------------

TF_MARK = "tf"
SLOW_MARK = "slow"
# Marks that say a test runs programs under the real interpreters: they imply `tf`.
TF_IMPLIED_BY = ("roundtrip",)
# In these folders every test of a module that names a way to a TensorFlow interpreter is `tf`
# (its pure modules, such as tests/verify/test_compare.py, stay in the fast tier).
TF_FOLDERS = ("tests/roundtrip", "tests/verify")
TF_WORDS = re.compile(r"\b(envs|missing_tf_env|require_python|roundtrip_helpers)\b|--python\b")
_NAMES_AN_INTERPRETER = {}


def _in_tf_module(path) -> bool:
    path = Path(path).resolve()
    try:
        where = path.relative_to(ROOT).as_posix()
    except ValueError:
        return False
    if not any(where.startswith(folder + "/") for folder in TF_FOLDERS):
        return False
    if path not in _NAMES_AN_INTERPRETER:
        _NAMES_AN_INTERPRETER[path] = bool(TF_WORDS.search(path.read_text(encoding="utf-8")))
    return _NAMES_AN_INTERPRETER[path]


def starts_tensorflow(item) -> bool:
    """Whether ``item`` is in the `tf` tier: marked `tf` (or `roundtrip`), or in a TF module."""
    if any(item.get_closest_marker(name) for name in (TF_MARK,) + TF_IMPLIED_BY):
        return True
    return _in_tf_module(item.path)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if starts_tensorflow(item):
            for name in (TF_MARK, SLOW_MARK):
                if not item.get_closest_marker(name):
                    item.add_marker(name)
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: see "Two test processes" below
        items[:] = heaviest_files_first(items)


# --------------------------------------------------------------------------
# Two test processes (pytest-xdist; `-n auto --dist loadfile` in pyproject.toml's addopts;
# `-n 0` runs the tests in this one process):
#   - one worker per core, at most MAX_WORKERS: a TensorFlow run takes 0.3-1 GB and keeps a
#     core busy, and most tests wait for one;
#   - a test file runs whole on one worker (`loadfile`): a module that starts its runs
#     together at its first test (tests/roundtrip, the fidelity suite), or sets something up
#     once for its tests, does so once;
#   - the files go out heaviest first (a TensorFlow test counts TF_TEST_COST, another slow
#     test SLOW_TEST_COST), so that no long file is left to start last, when the other
#     worker has nothing left to do;
#   - the warm interpreters are the session's (the controller owns the pool: its
#     pytest_configure exports it before the workers start, and they join it).
# --------------------------------------------------------------------------

MAX_WORKERS = 4
TF_TEST_COST, SLOW_TEST_COST, FAST_TEST_COST = 10.0, 1.0, 0.02


def pytest_xdist_auto_num_workers(config):
    return max(1, min(os.cpu_count() or 1, MAX_WORKERS))


def heaviest_files_first(items):
    """``items`` with whole files ordered by their estimated cost, heaviest first (stable: a
    file's own tests, and files of equal cost, keep their order)."""
    cost = {}
    for item in items:
        each = TF_TEST_COST if item.get_closest_marker(TF_MARK) else SLOW_TEST_COST if item.get_closest_marker(SLOW_MARK) else FAST_TEST_COST
        cost[item.path] = cost.get(item.path, 0.0) + each
    first = {}
    for index, item in enumerate(items):
        first.setdefault(item.path, index)
    return sorted(items, key=lambda item: (-cost[item.path], first[item.path]))


# While a test without the `tf` mark runs, the environment differs in two ways, restored after it:
#
# - the tripwire: MIGRATE_TPU_ENVS names a folder of stand-in interpreters (tf2.1, tf2.4, tf2.21),
#   so `require_python`, `envs.interpreter` and the `migrate-tpu run|verify --python tf2.x` it
#   starts find them instead of TensorFlow. A stand-in logs its start and exits 70, and the test
#   fails with the advice to mark it;
# - where PYTHONDONTWRITEBYTECODE is set (this project's machine sets it), its subprocesses keep
#   compiled bytecode under a folder of the session's (PYTHONPYCACHEPREFIX), as an installed tool
#   does, instead of compiling the package again for each of the hundreds of CLI runs.

TRIPWIRE_EXIT = 70
_SESSION = {}


def _fast_tier_environment(config) -> dict:
    if "environ" not in _SESSION:
        import shutil
        import tempfile

        from migrate_tpu.runtime.process import envs

        folder = Path(tempfile.mkdtemp(prefix="migrate-tpu-tests-"))
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
        log = folder / "tf-started.log"
        log.write_text("")
        for name in envs.ENVS:
            python = folder / "tf-tripwire" / name / "bin" / "python"
            python.parent.mkdir(parents=True)
            python.write_text(
                "#!/bin/sh\n"
                f"echo '{name}' >> '{log}'\n"
                f"echo '!!! a test not marked `{TF_MARK}` started the {name} TensorFlow interpreter "
                f"(a stand-in, exit {TRIPWIRE_EXIT}): mark it @pytest.mark.{TF_MARK}' >&2\n"
                f"exit {TRIPWIRE_EXIT}\n"
            )
            python.chmod(0o755)
            (python.parent.parent / ".migrate-tpu-stamp").write_text("tripwire\n")
        environ = {"MIGRATE_TPU_ENVS": str(folder / "tf-tripwire")}
        if os.environ.get("PYTHONDONTWRITEBYTECODE"):
            environ.update(PYTHONDONTWRITEBYTECODE=None, PYTHONPYCACHEPREFIX=str(folder / "pycache"))
        _SESSION.update(environ=environ, log=log)
    return _SESSION["environ"]


def _tripped(item) -> list:
    """The stand-in interpreters started since the last look, by name."""
    if not hasattr(item, "_tf_tripwire_seen"):
        return []
    lines = _SESSION["log"].read_text().splitlines()
    new, item._tf_tripwire_seen = lines[item._tf_tripwire_seen :], len(lines)
    return new


def _set_environ(values: dict) -> dict:
    saved = {name: os.environ.get(name) for name in values}
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    return saved


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if item.get_closest_marker(TF_MARK):
        return
    environ = _fast_tier_environment(item.config)
    item._tf_tripwire_seen = len(_SESSION["log"].read_text().splitlines())
    item._fast_tier_saved = _set_environ(environ)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    try:
        return (yield)
    finally:
        if hasattr(item, "_fast_tier_saved"):
            _set_environ(item.__dict__.pop("_fast_tier_saved"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    started = _tripped(item)
    if started:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} started a TensorFlow interpreter ({', '.join(sorted(set(started)))}) "
            f"but is not marked `{TF_MARK}`, so it would run in the fast tier (pytest -m 'not {SLOW_MARK}').\n"
            f"Mark it @pytest.mark.{TF_MARK} (or its module: pytestmark = pytest.mark.{TF_MARK}); "
            "see 'Test tiers' in docs/architecture.md.\n"
            "(While a test without the mark runs, MIGRATE_TPU_ENVS names stand-ins that exit "
            f"{TRIPWIRE_EXIT} instead of starting TensorFlow.)"
        ) + (f"\n\nWhat the test itself reported:\n{report.longreprtext}" if report.longreprtext else "")
    return report


#: Warm servers the session's pool keeps: the tests run five interpreters, each in the
#: environments of several kinds of runs (the CLI's, verify's, the round-trip helpers'), and a
#: server retired for another costs an import of TensorFlow when it is wanted again.
SESSION_SERVERS = 12
#: What pytest-xdist sets in a worker's environment: nothing a run reads, but the warm servers
#: are keyed by the environment, so each worker's runs would need servers of their own.
XDIST_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "PYTEST_XDIST_WORKER_COUNT")


def pytest_configure(config):
    # Warm interpreters (migrate_tpu/runtime/process/warm.py) for the whole session: every run the tests
    # start, in this process or through the CLI, forks from them; they end with the session.
    from migrate_tpu.runtime.process import warm, warm_pool

    if warm.available() and warm.wanted() and not os.environ.get(warm_pool.POOL_VARIABLE):
        pool = warm_pool.Pool.create()
        pool.export()
        os.environ.setdefault(warm_pool.SERVERS_VARIABLE, str(SESSION_SERVERS))
        config.add_cleanup(pool.close)
    if hasattr(config, "workerinput"):
        for name in XDIST_VARIABLES:
            os.environ.pop(name, None)
    # A suite started in the background without job control (`nohup ... &`, some CI runners)
    # inherits SIGINT ignored, and so would every process the tests start: the tests that
    # press Ctrl-C on a run (and check that it stops) need it live in their children.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
