"""``migrate-tpu verify`` through the real CLI, on real TensorFlow interpreters.

Right migrations verify ``same``; planted wrong ones (a changed number, an update
applied twice, a step traced again on every call) are caught at their step; an
original that cannot run is an error; the user's files are never written and no
process outlives verify.  Each verify starts two TensorFlow processes, so the
programs are small and ``--steps`` keeps them short.
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from migrate_tpu.runtime.process import envs
from tests.conftest import missing_tf_env

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"
EXAMPLE = REPO / "examples" / "tpu_classifier"
TIMEOUT = 600


def require(name):
    python = envs.interpreter(name)
    if python is None:
        missing_tf_env("!!! NO {} INTERPRETER under {}: verify NOT RUN; create it with `migrate-tpu envs {}`".format(
            name, envs.envs_dir(), name))
    return name


def cli_env(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["TMPDIR"] = str(tmp_path)  # verify's copies go here: a test can look for what is left
    return env


#: The emulated machine of the tests whose subject is verify's judgement, not the machine: two
#: replicas, the fewest in which a reduction shows (a planted MEAN for a SUM halves the value),
#: and about half the CPU of a run on the default eight cores.  The tests of what runs on the
#: default machine (the shipped example, a program whose layout verify decides from its code)
#: pass ``replicas=None``; the fidelity suite and the round trips run the TPU's own eight cores.
SMALL_MACHINE = 2


def verify(tmp_path, *args, replicas=SMALL_MACHINE):
    """(exit status, JSON report, stderr) of ``migrate-tpu verify --format json [--replicas N] ARGS``
    (``--replicas`` unless ARGS lay out the machine themselves or ``replicas`` is None)."""
    report = tmp_path / "report.json"
    if replicas is not None and not {"--replicas", "--hosts"} & set(args):
        args = ("--replicas", str(replicas)) + tuple(args)
    done = subprocess.run([sys.executable, "-m", "migrate_tpu", "verify", "--format", "json", "--output-file", str(report)] + list(args),
                          cwd=str(tmp_path), env=cli_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=TIMEOUT)
    assert report.is_file(), "no report (exit {}):\n{}{}".format(done.returncode, done.stdout, done.stderr)
    return done.returncode, json.loads(report.read_text("utf-8")), done.stderr


def tree_digest(path):
    digest = hashlib.sha256()
    for file in sorted(p for p in Path(path).rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(file.relative_to(path)).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def line_of(path, text):
    for number, line in enumerate(Path(path).read_text("utf-8").splitlines(), 1):
        if text in line:
            return number
    raise AssertionError("{!r} not in {}".format(text, path))


def leftovers(tmp_path):
    """Processes whose command line names something under tmp_path (verify's copies), or that
    work in a folder there (a run forked from a warm server has the server's command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            folder = os.readlink(str(entry / "cwd"))
        except OSError:
            continue
        if str(tmp_path) in command or folder == str(tmp_path) or folder.startswith(str(tmp_path) + os.sep):
            found.append(command)
    return found


def test_a_right_migration_is_same_and_the_file_is_not_written(tmp_path):
    python = require("tf2.21")
    program = tmp_path / "train_loop.py"
    program.write_bytes((PROGRAMS / "train_loop.py").read_bytes())
    before = program.read_bytes()
    status, report, stderr = verify(tmp_path, "--python", python, "--steps", "3", str(program))
    assert (status, report["verdict"]) == (0, "same"), json.dumps(report, indent=1) + stderr
    assert report["steps"] == 3
    assert report["replicas"] == {"before": [SMALL_MACHINE], "after": [SMALL_MACHINE]}
    assert report["first_divergence"] is None
    assert report["traces"]["before"] == report["traces"]["after"] and "train_step" in report["traces"]["after"]
    assert report["before"]["exit_status"] == 0 and report["after"]["exit_status"] == 0
    assert program.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "train_loop.py"]  # copies removed


def test_the_shipped_example_verifies_same(tmp_path):
    python = require("tf2.21")
    digest = tree_digest(EXAMPLE)
    status, report, stderr = verify(tmp_path, "--python", python, "--steps", "2", "--entry", "train.py", str(EXAMPLE), replicas=None)
    assert (status, report["verdict"], report["steps"]) == (0, "same", 2), json.dumps(report, indent=1) + stderr
    assert report["variables_compared"] > 0
    assert report["replicas"] == {"before": [8], "after": [8]}  # the TPU's eight cores, verify's default
    assert tree_digest(EXAMPLE) == digest


@pytest.fixture(scope="module")
def blamed_reduce_mean(tmp_path_factory):
    """verify of the planted SUM -> MEAN with blame: one run of it serves the test of where it is
    caught and the test of what it is blamed on (blame changes nothing of the rest of the report)."""
    python = require("tf2.21")
    return verify(tmp_path_factory.mktemp("blamed"), "--python", python, "--steps", "3", "--after", str(PROGRAMS / "wrong_reduce_mean.py"),
                  str(PROGRAMS / "train_loop.py"))


@pytest.mark.parametrize("wrong, verdict, step, kind", [
    ("wrong_reduce_mean.py", "diverged", 1, "reduce"),   # the first loss already differs, at the reduce inside the step
    ("wrong_update_twice.py", "diverged", 2, "reduce"),  # step 1's loss is computed before its update
    ("wrong_retrace.py", "retraced", None, None),
])
def test_a_wrong_migration_is_caught_at_its_step(tmp_path, request, wrong, verdict, step, kind):
    python = require("tf2.21")
    if wrong == "wrong_reduce_mean.py":  # verified once, with blame, for this test and the blame test
        status, report, stderr = request.getfixturevalue("blamed_reduce_mean")
    else:
        status, report, stderr = verify(tmp_path, "--python", python, "--steps", "3", "--no-blame", "--after", str(PROGRAMS / wrong),
                                        str(PROGRAMS / "train_loop.py"))
        assert report["blame"] is None  # --no-blame
    assert (status, report["verdict"]) == (1, verdict), json.dumps(report, indent=1) + stderr
    if verdict == "diverged":
        divergence = report["first_divergence"]
        assert (divergence["step"], divergence["kind"]) == (step, kind)
        where = divergence["where"]
        assert where["after"]["file"] == str(PROGRAMS / wrong)
        # the line that computed the value, inside the tf.function, not the step's call site
        assert where["after"]["line"] == line_of(PROGRAMS / wrong, "return strategy.reduce(")
        assert where["before"]["line"] == line_of(PROGRAMS / "train_loop.py", "return strategy.reduce(")
        assert divergence["before"] != divergence["after"]
    else:
        retraced = report["retraced"]
        assert retraced["function"] == "train_step.<locals>.step"
        assert retraced["after"] >= 3 > retraced["before"]  # one trace a step at least
        assert retraced["where"] == "{}:{}".format(PROGRAMS / wrong, line_of(PROGRAMS / wrong, "def step(iterator)") - 1)  # its decorator
        assert report["first_divergence"] is None  # the numbers agree: only the tracing is wrong


def test_an_original_that_cannot_run_under_the_surface_asked_for_is_an_error(tmp_path):
    python = require("tf2.21")
    status, report, _ = verify(tmp_path, "--python", python, "--before-api", "2.1", str(PROGRAMS / "broken_original.py"))
    assert (status, report["verdict"]) == (2, "error")
    assert "the original fails under the TF 2.1 surface: AttributeError" in report["error"]
    assert "--before-api 2.2 or 2.3" in report["advice"]  # what would help, not "make run succeed"
    assert report["after"] is None  # the migrated program is not run against a broken original


def test_an_original_of_the_tf_2_2_era_verifies_under_its_surface(tmp_path):
    # the TPU guide of mid-2020: strategy.run and experimental_distribute_datasets_from_function
    # on the experimental TPUStrategy; --before-api auto finds the TF 2.2 surface
    python = require("tf2.21")
    program = REPO / "tests" / "runtime" / "programs" / "custom_loop_2_2.py"
    status, report, stderr = verify(tmp_path, "--python", python, "--steps", "3", str(program))
    assert (status, report["verdict"], report["before_api"]) == (0, "same", "2.2"), json.dumps(report, indent=1) + stderr
    assert "the original runs under the TF 2.2 surface" in report["before_api_reason"]
    assert report["coverage"]["ran"] == report["coverage"]["changed"] > 0


def outlasting(folder):
    """train_loop.py that sleeps for ten minutes after its steps: a run that is still going when a
    test's time-out or Ctrl-C comes, however fast the machine (train_loop.py itself can end in
    under two seconds on a warm start)."""
    folder.mkdir()
    program = folder / "train_loop.py"
    program.write_text((PROGRAMS / "train_loop.py").read_text("utf-8") + "\nimport time\ntime.sleep(600)\n", "utf-8")
    return program


def test_a_time_out_is_an_error_and_leaves_no_process(tmp_path, tmp_path_factory):
    python = require("tf2.21")
    program = outlasting(tmp_path_factory.mktemp("outlasting") / "program")
    status, report, _ = verify(tmp_path, "--python", python, "--timeout", "2", str(program))
    assert (status, report["verdict"]) == (2, "error")
    assert "timed out" in report["error"]
    assert leftovers(tmp_path) == []
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_ctrl_c_leaves_no_process(tmp_path, tmp_path_factory):
    python = require("tf2.21")
    program = outlasting(tmp_path_factory.mktemp("outlasting") / "program")
    verifying = subprocess.Popen([sys.executable, "-m", "migrate_tpu", "verify", "--python", python, str(program)],
                                 cwd=str(tmp_path), env=cli_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        # wait for the original's TensorFlow process (cold: `-m migrate_tpu.runtime`; warm: forked
        # from a `migrate_tpu.runtime.process.warm_server`)
        while not any("migrate_tpu.runtime" in c for c in leftovers(tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert leftovers(tmp_path), "the original never started"
        time.sleep(2)  # into TensorFlow's start-up
        verifying.send_signal(signal.SIGINT)
        verifying.wait(timeout=60)
    finally:
        if verifying.poll() is None:
            verifying.kill()
            verifying.wait()
    assert verifying.returncode != 0
    deadline = time.monotonic() + 15  # the runner ends when verify's end closes its watch pipe
    while leftovers(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert leftovers(tmp_path) == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.roundtrip
def test_real_tf_2_1_before_and_2_4_after(tmp_path):
    before, after = require("tf2.1"), require("tf2.4")
    status, report, stderr = verify(tmp_path, "--before-python", before, "--python", after, "--steps", "3", str(PROGRAMS / "train_loop.py"))
    assert (status, report["verdict"], report["steps"]) == (0, "same", 3), json.dumps(report, indent=1) + stderr
    assert (report["before"]["tensorflow"], report["control"]["tensorflow"], report["after"]["tensorflow"]) == ("2.1.0", "2.4.1", "2.4.1")
    # the migration is judged on TF 2.4.1 alone, exactly, against the control (the original there);
    # the original on TF 2.1.0 against the control is the releases' drift, stated
    assert report["tolerance"] == {"rtol": 0.0, "atol": 0.0}
    assert report["release_drift"]["tensorflow"] == {"before": "2.1.0", "control": "2.4.1"}
    assert any("compared on TF 2.4.1" in note and "exactly" in note for note in report["notes"])
    status, report, stderr = verify(tmp_path, "--before-python", before, "--python", after, "--steps", "3",
                                    "--after", str(PROGRAMS / "wrong_update_twice.py"), str(PROGRAMS / "train_loop.py"))
    assert (status, report["verdict"], report["first_divergence"]["step"]) == (1, "diverged", 2), json.dumps(report, indent=1) + stderr


def test_a_notebook_divergence_names_the_cell(tmp_path):
    python = require("tf2.21")
    status, report, stderr = verify(tmp_path, "--python", python, "--steps", "2", "--after", str(PROGRAMS / "wrong_reduce_mean.ipynb"),
                                    str(PROGRAMS / "train_loop.ipynb"))
    assert (status, report["verdict"]) == (1, "diverged"), json.dumps(report, indent=1) + stderr
    divergence = report["first_divergence"]
    assert divergence["step"] == 1
    assert divergence["where"]["after"] == {"file": str(PROGRAMS / "wrong_reduce_mean.ipynb"), "cell": 3, "line": 13,
                                            "source": "return strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None)"}


def test_no_tensorflow_is_an_error_that_names_the_option(tmp_path):
    # this interpreter (the tool's own) has no TensorFlow: nothing can be verified
    status, report, _ = verify(tmp_path, "--python", sys.executable, str(PROGRAMS / "train_loop.py"))
    assert (status, report["verdict"]) == (2, "error")
    assert "cannot import TensorFlow" in report["error"]
    assert "--python" in report["advice"]


def test_a_tf_function_defined_inside_a_method_is_retraced_on_real_tf_2_4(tmp_path):
    python = require("tf2.4")
    wrong = PROGRAMS / "wrong_method_retrace.py"
    status, report, stderr = verify(tmp_path, "--python", python, "--after", str(wrong), str(PROGRAMS / "method_step.py"))
    assert (status, report["verdict"]) == (1, "retraced"), json.dumps(report, indent=1) + stderr
    assert report["retraced"]["function"] == "Trainer.step.<locals>.step_fn"
    # a new function on each of the 5 calls, each traced (TensorFlow's count also has the eager
    # run's whole-call function's own trace of it: 2 a call on TF 2.4.1)
    assert report["traces"]["after"]["Trainer.step.<locals>.step_fn"] in (5, 10)
    assert report["traces"]["before"] == {"Trainer.step": 1}


def test_a_pod_program_verifies_once_as_one_client(tmp_path):
    # --hosts 2: one program over both hosts' cores (issue 20), recorded once; a right
    # migration is the same, a planted MEAN is caught at its step as at one host.
    python = require("tf2.21")
    pod = REPO / "tests" / "roundtrip" / "programs" / "pod_training.py"
    status, report, stderr = verify(tmp_path, "--python", python, "--hosts", "2", "--replicas", "4", "--steps", "3", str(pod))
    assert (status, report["verdict"], report["steps"]) == (0, "same", 3), json.dumps(report, indent=1) + stderr
    status, report, stderr = verify(tmp_path, "--python", python, "--hosts", "2", "--replicas", "4", "--steps", "2",
                                    "--after", str(PROGRAMS / "wrong_reduce_mean.py"), str(PROGRAMS / "train_loop.py"))
    assert (status, report["verdict"]) == (1, "diverged"), json.dumps(report, indent=1) + stderr
    assert report["first_divergence"]["step"] == 1


def test_each_run_works_in_its_own_copy_of_the_folder(tmp_path):
    # the program reads data beside itself and resumes from ./ckpts: run twice in the user's
    # folder, the second run would start from the first one's checkpoint
    python = require("tf2.21")
    work = tmp_path / "work"
    work.mkdir()
    program = work / "train.py"
    program.write_bytes((PROGRAMS / "checkpoints_beside.py").read_bytes())
    (work / "data.npy").write_bytes(NPY_1_2_3)
    digest = tree_digest(work)
    status, report, stderr = verify(tmp_path, "--python", python, str(program))
    assert (status, report["verdict"], report["steps"]) == (0, "same", 3), json.dumps(report, indent=1) + stderr
    assert tree_digest(work) == digest  # no ./ckpts in the user's folder
    assert sorted(p.name for p in work.iterdir()) == ["data.npy", "train.py"]


def test_a_multi_worker_program_runs_on_a_worker_with_two_devices_so_a_planted_mean_shows(tmp_path):
    python = require("tf2.21")
    status, report, stderr = verify(tmp_path, "--python", python, "--steps", "2", str(PROGRAMS / "mwms_sum.py"), replicas=None)
    assert (status, report["verdict"], report["hosts"]) == (0, "same", 1), json.dumps(report, indent=1) + stderr
    assert report["replicas"] == {"before": [2], "after": [2]}
    assert any("one worker with 2 devices" in note for note in report["notes"]), report["notes"]
    status, report, stderr = verify(tmp_path, "--python", python, "--steps", "2", "--after", str(PROGRAMS / "wrong_mwms_mean.py"),
                                    str(PROGRAMS / "mwms_sum.py"), replicas=None)
    assert (status, report["verdict"], report["first_divergence"]["step"]) == (1, "diverged", 1), json.dumps(report, indent=1) + stderr


def test_a_multi_worker_program_that_ran_ops_before_its_strategy_verifies_on_one_worker(tmp_path):
    # as a cluster, every release refuses it ("Collective ops must be configured at program startup")
    python = require("tf2.21")
    status, report, stderr = verify(tmp_path, "--python", python, str(PROGRAMS / "mwms_after_ops.py"), replicas=None)
    assert (status, report["verdict"], report["steps"]) == (0, "same", 4), json.dumps(report, indent=1) + stderr
    assert report["replicas"] == {"before": [1, 2], "after": [1, 2]}


def test_a_multi_worker_script_that_reads_tf_config_runs_as_a_cluster(tmp_path):
    python = require("tf2.21")
    status, report, stderr = verify(tmp_path, "--python", python, str(PROGRAMS / "mwms_reads_tf_config.py"), replicas=None)
    assert (status, report["verdict"], report["steps"], report["hosts"]) == (0, "same", 2, 2), json.dumps(report, indent=1) + stderr
    assert report["replicas"] == {"before": [2], "after": [2]}
    assert any("reads TF_CONFIG" in note for note in report["notes"]), report["notes"]
    # decided from the code, before any run, and said where
    assert report["cluster"]["because"] == "reads TF_CONFIG" and report["cluster"]["where"].endswith("mwms_reads_tf_config.py:11")


def test_an_original_that_differs_from_itself_is_judged_within_its_own_spread(tmp_path):
    # kernels that are not deterministic (TF 2.4.1's Keras fit on eight CPU replicas): an exact
    # comparison would cry wolf on a right migration, so verify runs the original again
    python = require("tf2.21")
    # (its noise comes from os.urandom: kernels on one thread cannot remove it, so each value is
    # judged within its own spread, and the `same` states what it could have caught)
    status, report, stderr = verify(tmp_path, "--python", python, str(PROGRAMS / "noisy_loop.py"))
    assert (status, report["verdict"]) == (0, "same"), json.dumps(report, indent=1) + stderr
    assert any("gives other bits when run again" in note for note in report["notes"]), report["notes"]
    assert report["tolerance"]["per_value"] is True and report["tolerance"]["rtol"] == 0.0
    assert (report["nondeterminism"]["removed"], report["nondeterminism"]["source"]) == (False, "not TensorFlow's kernel threads")
    assert report["power"]["measured"] is True and report["power"]["caught"] is True, report["power"]
    status, report, stderr = verify(tmp_path, "--python", python, "--no-blame", "--after", str(PROGRAMS / "wrong_noisy_learning_rate.py"),
                                    str(PROGRAMS / "noisy_loop.py"))
    # the rate's first update shows in step 2's loss (step 1's is computed before it)
    assert (status, report["verdict"], report["first_divergence"]["step"]) == (1, "diverged", 2), json.dumps(report, indent=1) + stderr
    assert report["first_divergence"]["kind"] == "reduce"


def test_the_same_late_failure_in_both_runs_is_same_and_the_version_line_is_no_divergence(tmp_path):
    python = require("tf2.21")
    status, report, stderr = verify(tmp_path, "--python", python, str(PROGRAMS / "late_failure.py"))
    assert (status, report["verdict"], report["steps"]) == (0, "same", 3), json.dumps(report, indent=1) + stderr
    assert any("same exception after step 3" in note and "a_plotting_package_nobody_has" in note for note in report["notes"])


@pytest.mark.parametrize("before, after", [("tf2.21", "tf2.21"), ("tf2.1", "tf2.4")])
def test_a_program_that_plots_verifies_and_draws_off_screen(tmp_path, before, after):
    # nearly every tutorial plots: the envs have matplotlib, and verify's runs never open a
    # window that would wait to be closed (DISPLAY set or not)
    interpreters = ["--before-python", require(before), "--python", require(after)]
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "migrate_tpu", "verify", "--format", "json", "--output-file", str(report)]
                          + interpreters + ["--replicas", str(SMALL_MACHINE), str(PROGRAMS / "plots.py")],
                          cwd=str(tmp_path), env=dict(cli_env(tmp_path), DISPLAY=":0"), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=TIMEOUT)
    result = json.loads(report.read_text("utf-8"))
    assert "matplotlib" not in (result.get("error") or ""), \
        "an env lacks matplotlib: run `migrate-tpu envs {} {}` to add it".format(before, after)
    assert (done.returncode, result["verdict"], result["steps"]) == (0, "same", 3), json.dumps(result, indent=1) + done.stderr


def test_a_planted_mistake_is_blamed_on_the_change_that_made_it(blamed_reduce_mean):
    # the hand migration renames the strategy and run, and changes SUM to MEAN: delta
    # debugging over its three changes keeps the one with MEAN
    wrong = PROGRAMS / "wrong_reduce_mean.py"
    status, report, stderr = blamed_reduce_mean
    assert (status, report["verdict"]) == (1, "diverged"), json.dumps(report, indent=1) + stderr
    mean = line_of(wrong, "ReduceOp.MEAN")
    assert report["blame"]["changes"] == ["{}:{}-{}".format(wrong, mean - 1, mean)], report["blame"]  # with the run on the line above
    # the one suspect beside two catalogued renames computes the migrated program's bits: one run, no baseline
    assert report["blame"]["runs"] == 1, report["blame"]
    assert report["coverage"] == {"changed": 3, "ran": 3, "not_run": []}


def test_a_migration_none_of_whose_changes_ran_is_not_exercised(tmp_path):
    python = require("tf2.21")
    program = PROGRAMS / "keras_unused_step.py"
    status, report, stderr = verify(tmp_path, "--python", python, str(program))
    assert (status, report["verdict"]) == (0, "not exercised"), json.dumps(report, indent=1) + stderr
    line = line_of(program, "experimental_run_v2(model")
    assert report["coverage"] == {"changed": 1, "ran": 0, "not_run": ["{}:{} (TPU101)".format(program, line)]}


def test_a_keras_divergence_names_the_log_key_and_the_fit_call(tmp_path):
    python = require("tf2.21")
    wrong = PROGRAMS / "wrong_keras_learning_rate.py"
    status, report, stderr = verify(tmp_path, "--python", python, "--no-blame", "--after", str(wrong),
                                    str(PROGRAMS / "keras_unused_step.py"))
    assert (status, report["verdict"]) == (1, "diverged"), json.dumps(report, indent=1) + stderr
    divergence = report["first_divergence"]
    assert (divergence["step"], divergence["kind"], divergence["key"]) == (2, "keras", "loss")  # step 1's loss precedes its update
    assert divergence["what"].startswith("a Keras execution's logs ['loss']")
    assert divergence["where"]["after"]["line"] == line_of(wrong, "model.fit(")

# np.save of float64 [1, 2, 3] (format 1.0: a 118-byte header), written without NumPy (the tool's venv has none)
NPY_1_2_3 = (b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }"
             + b" " * 60 + b"\n" + b"".join(__import__("struct").pack("<d", x) for x in (1.0, 2.0, 3.0)))


def test_json_is_json_even_when_verification_cannot_start(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "train.py").write_text("print(1)\n")
    status, report, _ = verify(tmp_path, str(folder))  # a folder without --entry
    assert (status, report["verdict"]) == (2, "error")
    assert "name its entry point with --entry" in report["error"]


def _print_in_step(folder, migrated):
    """train_loop.py with a tf.print of the loss in its step (no XLA kernel; soft placement is off
    inside the traced step, so the TPU's compile step refuses it), in TF 2.1 form or, with
    ``migrated``, as a hand migration that renamed the strategy and run too."""
    source = (PROGRAMS / "train_loop.py").read_text()
    source = source.replace("        return loss\n", "        tf.print(\"loss\", loss)\n        return loss\n", 1)
    if migrated:
        source = source.replace("tf.distribute.experimental.TPUStrategy(", "tf.distribute.TPUStrategy(")
        source = source.replace("strategy.experimental_run_v2(", "strategy.run(")
    folder.mkdir()
    path = folder / ("wrong_print_in_step.py" if migrated else "print_in_step_original.py")
    path.write_text(source)
    return path


def test_a_migration_the_tpu_cannot_compile_is_a_divergence_blamed_on_its_line(tmp_path):
    # the hand migration renames the strategy and run, and adds a tf.print to the step: the TPU's
    # compile step refuses it (soft placement is off inside the traced step), the original compiles
    python = require("tf2.4")
    wrong = _print_in_step(tmp_path / "migrated", migrated=True)
    status, report, stderr = verify(tmp_path, "--python", python, "--steps", "3", "--after", str(wrong), str(PROGRAMS / "train_loop.py"))
    assert (status, report["verdict"]) == (1, "diverged"), json.dumps(report, indent=1) + stderr
    divergence = report["first_divergence"]
    assert (divergence["step"], divergence["kind"]) == (1, "exception"), divergence
    assert divergence["before"] is None
    assert divergence["after"].startswith("InvalidArgumentError: ") and \
        "Compilation failure: Detected unsupported operations" in divergence["after"], divergence
    printed = line_of(wrong, 'tf.print("loss", loss)')
    assert (divergence["where"]["after"]["file"], divergence["where"]["after"]["line"]) == (str(wrong), printed), divergence
    # the print, with the run's rename it needs to run at all under the 2.4 surface
    assert report["blame"]["changes"] == ["{}:{}".format(wrong, printed), "{}:{}".format(wrong, line_of(wrong, "strategy.run("))], \
        report["blame"]


def test_an_original_the_tpu_cannot_compile_is_said_so(tmp_path):
    python = require("tf2.4")
    original = _print_in_step(tmp_path / "original", migrated=False)
    status, report, _ = verify(tmp_path, "--python", python, "--steps", "2", "--no-blame", str(original))
    assert (status, report["verdict"]) == (2, "error"), json.dumps(report, indent=1)
    assert report["error"].startswith("the original does not compile for the TPU of the TF 2.1 surface: "
                                      "InvalidArgumentError: "), report["error"]
    assert "Compilation failure: Detected unsupported operations" in report["error"]
    assert "print_in_step_original.py:{}".format(line_of(original, "tf.print(")) in report["error"]
    assert "a TPU of that release refused this step too" in report["advice"]
    assert report["after"] is None
