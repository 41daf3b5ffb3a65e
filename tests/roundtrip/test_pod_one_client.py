"""``migrate-tpu run --hosts H`` is one program, as a TPU pod's client runs it (issue 20):
the dataset function runs once per host with that host's ``input_pipeline_id`` and feeds
that host's cores, an all-reduce spans the hosts (also with one core per host), the
resolver names H TPU hosts and the client as task 0, and a print happens once."""

import pytest

from roundtrip_helpers import PROGRAMS, TF24, TF221, require_python
from test_pods import cli_run, host_results

pytestmark = pytest.mark.roundtrip

PROGRAM = PROGRAMS / "pod_one_client.py"


@pytest.mark.parametrize("tf_name", ["2.21", "2.4"])
@pytest.mark.parametrize("replicas", [4, 2])
def test_one_client_feeds_each_hosts_cores_from_its_pipeline(tf_name, replicas):
    python = require_python(TF221 if tf_name == "2.21" else TF24)
    run = cli_run(python, PROGRAM, hosts=2, replicas=replicas,
                  label="one client tf{} hosts=2 replicas={}".format(tf_name, replicas))
    assert run.returncode == 0, run.describe()
    results = host_results(run)
    assert list(results) == [0], run.describe()
    result = results[0]
    # printed once, unprefixed: one program
    assert [line for line in run.stdout.splitlines() if line.startswith("acc")] == ["acc 0.0"]
    assert result["contexts"] == [[2, 0], [2, 1]]
    per_host = replicas // 2
    # host k's pipeline yields k: replicas k*N/H .. (k+1)*N/H - 1 got it
    assert result["fed"] == [0.0] * per_host + [1.0] * per_host
    # and asked inside each replica: replica r (on core r, of host r // per_host) got host r // per_host's pipeline
    assert [row[:2] for row in result["who_fed"]] == [[float(r), float(r // per_host)] for r in range(replicas)]
    assert [row[2].rsplit(":", 1)[-1] for row in result["who_fed"]] == [str(r) for r in range(replicas)]
    assert result["all_reduce"] == [float(replicas)] * replicas
    assert result["gather"] == [float(r) for r in range(replicas)]
    # experimental_distribute_dataset shards per host, as TPUStrategy does on a pod:
    # (replica, host) order of per-replica batches, host k holding every H-th one
    assert len(result["shards"]) == replicas
    assert sorted(sum(result["shards"], [])) == list(range(8))
    assert result["cluster"] == {"worker": ["10.240.1.2:8470", "10.240.1.3:8470"]}
    assert result["task"] == ["worker", 0]
    assert result["acc"] == {"TPU": per_host}
    assert result["tasks"] == 2 and result["hosts"] == 2 and result["workers"] == replicas
    assert result["tpus"] == ["/job:worker/replica:0/task:{}/device:TPU:{}".format(t, i)
                              for t in range(2) for i in range(per_host)]
