"""Keras sees a TPUStrategy: per-batch logs of ``fit`` under the emulation on TF 2.21
(tf-keras, which asks the strategy's class name) equal TF 2.4.1's (which always takes the
first replica's value, as on a TPU)."""

import pytest

from roundtrip_helpers import PROGRAMS, TF24, TF221, assert_same, require_python, start
from test_pods import cli_run, host_results

pytestmark = pytest.mark.roundtrip

PROGRAM = PROGRAMS / "keras_train_step_logs.py"


def test_train_step_logs_equal_tf_2_4():
    runs = [start(require_python(env), PROGRAM, replicas=4) for env in (TF24, TF221)]
    pods = [cli_run(require_python(TF221), PROGRAM, hosts=hosts, replicas=4,
                    label="keras logs tf2.21 hosts={}".format(hosts)) for hosts in (2, 4)]
    on_2_4, on_2_21 = [run.result() for run in runs]
    # Metric.result() of a Sum over 16-example batches: every core's count, once
    assert [b["seen"] for b in on_2_4["batches"]] == [16.0, 32.0, 48.0, 64.0]
    assert on_2_21["class"] == on_2_4["class"] == "TPUStrategyV2"
    # the loss is one replica's (a sum over 4 replicas would be about 4 times larger)
    assert_same(on_2_4["batches"], on_2_21["batches"], where="per-batch logs")
    # on a pod too: one program, the same logs (not H times the first replica's)
    for run in pods:
        assert run.returncode == 0, run.describe()
        assert_same(on_2_4["batches"], host_results(run)[0]["batches"], where=run.label)
