"""Pods through the real CLI: ``migrate-tpu run --hosts H`` in the real TensorFlow interpreters.

* ``programs/pod_training.py`` (TF 2.1 form: per-host pipelines sharded by
  ``input_pipeline_id``, a custom loop with ``reduce``, Keras ``fit``) runs
  unmigrated on real TF 2.1.0, and migrated by ``migrate-tpu fix`` on TF 2.4.1
  and TF 2.21 with 1, 2, 4 and 8 emulated hosts: every run gives the TF 2.1
  numbers, once (a pod runs the program on one client), and the dataset function
  runs once per host with that host's ``input_pipeline_id``;
* a plain ``MultiWorkerMirroredStrategy`` script with ``TF_CONFIG`` runs under
  ``run`` (its logical devices no longer stop TensorFlow configuring its
  collectives), alone and on a 2-worker localhost cluster that ``run`` starts.

All runs start together on the shared pool; 8 emulated cores in all.
"""

import json
import re
import sys

import pytest

from roundtrip_helpers import (PROGRAMS, TF21, TF24, TF221, Run, _cli_env, assert_same, migrate,
                               require_python, start)

pytestmark = pytest.mark.roundtrip

HOSTS = (1, 2, 4, 8)
REPLICAS = 8
_runs = {}


def cli_run(python, script, hosts=None, label=None, tf_api=None, replicas=REPLICAS, extra_env=None, tpu_env=None):
    """``python -m migrate_tpu run`` (the real CLI) in the interpreter ``python``."""
    argv = [sys.executable, "-m", "migrate_tpu", "run", "--python", python, "--timeout", "280"]
    if tf_api is not None:
        argv += ["--tf-api", tf_api]
    if tpu_env is not None:
        argv += ["--tpu-env", tpu_env]
    if hosts is not None:
        argv += ["--hosts", str(hosts), "--replicas", str(replicas)]
    argv.append(str(script))
    env = _cli_env()
    env.pop("TPU_NAME", None)
    env.pop("KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", None)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # one way of hashing strings, as the helpers' other runs have: the CLI then forks the run from
    # the session's warm interpreter (a run with a random hash seed starts cold)
    env.setdefault("PYTHONHASHSEED", "0")
    env.update(extra_env or {})
    return Run(label or "{} hosts={}".format(python, hosts), argv, env)


MWMS_SCRIPT = """\
import json, os
import tensorflow as tf
os.environ.setdefault("TF_CONFIG", json.dumps({"cluster": {"worker": ["localhost:%(port)d"]},
                                               "task": {"type": "worker", "index": 0}}))
make = %(make)s
strategy = make()
total = strategy.reduce("SUM", strategy.run(tf.function(lambda: tf.constant(1.0))), axis=None)
task = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
print("RESULT " + json.dumps({"replicas": strategy.num_replicas_in_sync, "total": float(total),
                              "task": task}))
"""

# A step that returns one core's copy of a replica-context all_reduce, on a pod of one core
# per host: every core runs the whole step, and the all-reduce spans the hosts' cores (it
# failed as multi-worker collectives: 'destinations can not be empty', or hung on TF 2.4).
ONE_CORE_SCRIPT = """\
import json
import tensorflow as tf
strategy = tf.distribute.TPUStrategy(tf.distribute.cluster_resolver.TPUClusterResolver(tpu=""))
ids = strategy.experimental_distribute_values_from_function(
    lambda ctx: tf.constant([float(ctx.replica_id_in_sync_group)]))


@tf.function
def step(v):
    total = strategy.run(lambda v: tf.distribute.get_replica_context().all_reduce("SUM", v),
                         args=(v,))
    return strategy.experimental_local_results(total)[0]


print("RESULT " + json.dumps({"total": float(step(ids)[0])}))
"""


def runs(tmp_path_factory):
    if _runs:
        return _runs
    py21, py24, py221 = require_python(TF21), require_python(TF24), require_python(TF221)
    original = PROGRAMS / "pod_training.py"
    status, migrated_source, report = migrate(original.read_text())
    folder = tmp_path_factory.mktemp("pods")
    migrated = folder / "pod_training.py"
    migrated.write_text(migrated_source)
    _runs["source"] = migrated_source
    _runs["before"] = start(py21, original, tf_api="2.1", replicas=REPLICAS, label="original on TF 2.1.0")
    for name, python in (("2.21", py221), ("2.4", py24)):
        for hosts in HOSTS:
            _runs[name, hosts] = cli_run(python, migrated, hosts,
                                         "migrated on TF {} with {} hosts".format(name, hosts))
    for name, python, make, port in (
            ("2.21", py221, "tf.distribute.MultiWorkerMirroredStrategy", 23461),
            ("2.4", py24, "tf.distribute.experimental.MultiWorkerMirroredStrategy", 23462)):
        script = folder / "mwms_{}.py".format(name.replace(".", "_"))
        script.write_text(MWMS_SCRIPT % {"make": make, "port": port})
        _runs["mwms", name] = cli_run(python, script, None, "MWMS script on TF " + name)
    # the unmigrated original on a pod, with the TF 2.1 surface on TF 2.21 (and tf_keras)
    _runs["original", 2] = cli_run(py221, original, 2, "original on TF 2.21 --tf-api 2.1, 2 hosts",
                                   tf_api="2.1")
    one_core = folder / "one_core_all_reduce.py"
    one_core.write_text(ONE_CORE_SCRIPT)
    _runs["one core", "2.4"] = cli_run(py24, one_core, 2, "one core's all_reduce on TF 2.4, 2 hosts",
                                       replicas=2)
    _runs["mwms", "2.21", 2] = cli_run(py221, folder / "mwms_2_21.py", 2,
                                       "MWMS script on TF 2.21, 2 workers")
    return _runs


def host_results(run):
    """{host: RESULT json} from the run's stdout (host 0 unprefixed, the others `[host K] `)."""
    found = {}
    for line in run.stdout.splitlines():
        match = re.match(r"^(?:\[host (\d+)\] )?RESULT (.*)$", line)
        if match:
            found[int(match.group(1) or 0)] = json.loads(match.group(2))
    return found


@pytest.mark.parametrize("tf_name", ["2.21", "2.4"])
@pytest.mark.parametrize("hosts", HOSTS)
def test_pod_program_gives_the_tf_2_1_numbers_on_every_pod_size(tf_name, hosts, tmp_path_factory):
    all_runs = runs(tmp_path_factory)
    before = all_runs["before"].result()
    run = all_runs[tf_name, hosts]
    assert run.returncode == 0, run.describe()
    results = host_results(run)
    # one program, one client: one result, printed once, by task 0
    assert list(results) == [0] and run.stdout.count("RESULT ") == 1, run.describe()
    result = results[0]
    assert result["replicas"] == REPLICAS
    assert result["_task"] == 0
    # the dataset function ran once per host: num_input_pipelines == H, input_pipeline_id 0..H-1
    assert result["_pipelines"] == [[hosts, k] for k in range(hosts)], run.describe()
    assert_same(before, result, where=run.label)


def test_a_step_returning_one_cores_all_reduce_runs_every_cores_collective(tmp_path_factory):
    run = runs(tmp_path_factory)["one core", "2.4"]
    assert run.returncode == 0, run.describe()
    assert host_results(run) == {0: {"total": 1.0}}, run.describe()  # 0 + 1, once


def test_original_pod_program_runs_on_a_pod_with_the_2_1_surface(tmp_path_factory):
    all_runs = runs(tmp_path_factory)
    run = all_runs["original", 2]
    assert run.returncode == 0, run.describe()
    results = host_results(run)
    assert list(results) == [0], run.describe()
    assert results[0]["_pipelines"] == [[2, 0], [2, 1]]
    assert_same(all_runs["before"].result(), results[0], where=run.label)


def test_pod_program_was_migrated(tmp_path_factory):
    source = runs(tmp_path_factory)["source"]
    assert "experimental_run_v2" not in source and "experimental.TPUStrategy" not in source


@pytest.mark.parametrize("tf_name", ["2.21", "2.4"])
def test_plain_multi_worker_script_runs(tf_name, tmp_path_factory):
    run = runs(tmp_path_factory)["mwms", tf_name]
    assert run.result() == {"replicas": 1, "total": 1.0, "task": 0}, run.describe()


def test_plain_multi_worker_script_on_a_two_worker_cluster(tmp_path_factory):
    run = runs(tmp_path_factory)["mwms", "2.21", 2]
    assert run.returncode == 0, run.describe()
    results = host_results(run)
    assert results == {k: {"replicas": 2, "total": 2.0, "task": k} for k in (0, 1)}, run.describe()
