"""The TPU emulation itself, observed inside the real TensorFlow interpreters.

``programs/observe.py`` runs once per configuration under ``python -m
migrate_tpu.runtime`` (all configurations at once) and reports what it saw;
the tests below state what a TPU of that TF version does.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
from roundtrip_helpers import TF21, TF24, TF221, require_python, start

pytestmark = pytest.mark.roundtrip  # runs real TensorFlow interpreters

OBSERVE = Path(__file__).resolve().parent / "programs" / "observe.py"

# name -> (env, --tf-api)
CONFIGS = {
    "tf2.1": (TF21, None),
    "tf2.4": (TF24, None),
    "tf2.21": (TF221, None),
    "tf2.4-api2.1": (TF24, "2.1"),
    "tf2.21-api2.1": (TF221, "2.1"),
}
_runs = {}


def observed(config):
    """What observe.py reported in ``config``; the first call starts every available configuration."""
    if not _runs:
        for name, (env, api) in CONFIGS.items():
            try:
                python = require_python(env)
            except pytest.skip.Exception as skipped:
                _runs[name] = skipped
                continue
            _runs[name] = start(python, OBSERVE, tf_api=api, label="observe.py " + name)
    run = _runs[config]
    if isinstance(run, BaseException):
        pytest.skip(str(run))
    return run.result()


ALL = list(CONFIGS)
API_2_1 = ["tf2.1", "tf2.4-api2.1", "tf2.21-api2.1"]
API_2_4 = ["tf2.4", "tf2.21"]

MESSAGE_2_1 = ("TPUStrategy.experimental_run_v2(fn, ...) does not support eager execution. "
               "Either convert `fn` into a tf.function or consider calling "
               "strategy.experimental_run_v2 inside a tf.function.")
MESSAGE_2_4 = ("TPUStrategy.run(fn, ...) does not support pure eager execution. please make "
               "sure the function passed into `strategy.run` is a `tf.function` or "
               "`strategy.run` is called inside a `tf.function` if eager behavior is enabled.")


def refused(value, message):
    return value == {"error": "NotImplementedError", "message": message}


@pytest.mark.parametrize("config", ALL)
def test_system_shape(config):
    obs = observed(config)
    assert obs["emulated"] is True
    assert obs["replicas"] == 8 and obs["worker_devices"] == 8
    assert obs["tpu_logical_devices"] == 8
    # TF 2.1's TPUStrategy had no cluster_resolver property
    assert obs["cluster_resolver_is_resolver"] is (config in API_2_4)
    # a v3-8: 2 x 2 chips of 2 cores; 3-D under the TF 2.1 API, 4-D from 2.3 on
    assert obs["mesh_shape"] == ([2, 2, 2] if config in API_2_1 else [2, 2, 1, 2])


@pytest.mark.parametrize("config", ALL)
def test_eager_plain_function_is_refused_with_the_versions_words(config):
    obs = observed(config)
    # 2.1 code has only experimental_run_v2, with 2.1's words
    message = MESSAGE_2_1 if config in API_2_1 else MESSAGE_2_4
    for probe in ("eager_plain", "eager_lambda", "eager_plain_callable"):
        assert refused(obs[probe], message), (probe, obs[probe])
    if "eager_plain_experimental_run_v2" in obs:
        assert refused(obs["eager_plain_experimental_run_v2"], MESSAGE_2_1)
    if "stable_eager_plain" in obs:
        assert refused(obs["stable_eager_plain"], MESSAGE_2_4)


@pytest.mark.parametrize("config", ALL)
def test_functions_and_graph_mode_are_accepted(config):
    obs = observed(config)
    assert obs["eager_tf_function"] == list(range(1, 9))
    assert obs["eager_callable_with_tf_function"] == list(range(1, 9))
    assert obs["graph_plain"] == list(range(1, 9))
    assert obs["eager_concrete_function"] == [1] * 8 or obs["eager_concrete_function"] == list(range(1, 9))
    # MirroredStrategy keeps its own, permissive rule
    assert obs["mirrored_eager_plain"] == [1, 2]


@pytest.mark.parametrize("config", ALL)
def test_method_surface_follows_the_api(config):
    obs = observed(config)
    has = obs["experimental_has"]
    assert has["experimental_run_v2"] is (config in API_2_1)
    assert has["run"] is (config in API_2_4)  # TF 2.1.0 had no Strategy.run
    assert has["experimental_make_numpy_dataset"] is (config in API_2_1)
    assert obs["mirrored_has_experimental_run_v2"] is (config in API_2_1)
    # the experimental class never has the logical-device helpers
    for name in ("experimental_assign_to_logical_device", "experimental_split_to_logical_devices",
                 "experimental_replicate_to_logical_devices"):
        assert has[name] is False
        if config in API_2_4:
            assert obs["stable_has"][name] is True
    assert obs["has_stable_class"] is (config in API_2_4)  # TF 2.1.0 had no tf.distribute.TPUStrategy


@pytest.mark.parametrize("config", API_2_4)
def test_stable_and_experimental_classes(config):
    obs = observed(config)
    assert obs["isinstance"] == {"stable_is_experimental": False, "experimental_is_stable": False,
                                 "stable_is_stable": True}
    assert obs["stable_kw_device_assignment"]["error"] == "TypeError"
    assert "device_assignment" in obs["stable_kw_device_assignment"]["message"]
    # TensorFlow's own class name: Keras picks a TPU's log reduction and metric variables by it
    assert obs["stable_class_name"] == "TPUStrategyV2"


@pytest.mark.parametrize("config", ALL)
def test_constructor_keywords(config):
    obs = observed(config)
    assert obs["experimental_kw_experimental_device_assignment"]["error"] == "TypeError"
    replicas, devices = obs["experimental_with_assignment"]
    assert replicas == 4
    assert [d.rsplit(":", 1)[1] for d in devices] == ["0", "2", "4", "6"]


@pytest.mark.parametrize("config", ALL)
def test_device_assignment_build(config):
    obs = observed(config)
    rank = 3 if config in API_2_1 else 4
    assert obs["build_wrong_rank"] == {
        "error": "ValueError",
        "message": "computation_shape must have shape [{}]; got ({},)".format(rank, 7 - rank)}
    assert obs["build_too_many"]["error"] == "ValueError"
    assert obs["build_too_many"]["message"].startswith("requested 5 replicas but only 4 replicas")
    assert obs["build_default"] == [1, 1]
    assert obs["assignment"] == [4, 2, [0, 1, 2, 3, 4, 5, 6, 7]]


@pytest.mark.parametrize("config", API_2_4)
def test_logical_device_helpers_validate_like_tpu_strategy(config):
    obs = observed(config)
    assign = ("`logical_core_id` to assign must be lower then total number of logical devices "
              "per replica. Received logical device id {} but there are only total of 2 logical "
              "devices in replica.")
    assert obs["assign_negative"] == {"error": "ValueError", "message": assign.format(-1)}
    assert obs["assign_too_big"] == {"error": "ValueError", "message": assign.format(2)}
    assert obs["split_wrong_rank"] == {
        "error": "ValueError",
        "message": "Length of `partition_dimensions` (2) must be  equal to the rank of `x` (3)."}
    assert obs["split_not_divisible"] == {
        "error": "ValueError",
        "message": "Tensor shape at dimension (1) must be divisible by corresponding value "
                   "specified by `partition_dimensions` (2)."}
    assert obs["split_wrong_product"] == {
        "error": "ValueError",
        "message": "Number of logical devices (2) does not match the number of partition "
                   "splits specified (4)."}
    # annotations leave values alone
    assert obs["assign_ok"] == obs["split_ok"] == obs["replicate_ok"] == 120.0
    assert obs["helpers_in_replica_fn"] == [8.0, 8.0, 8.0, 8.0]


@pytest.mark.parametrize("config", ALL)
def test_reduce_and_tensorflows_own_cross_replica_ops(config):
    obs = observed(config)
    assert obs["reduce_sum_none"] == [28.0, 280.0]
    assert obs["reduce_mean_none"] == [3.5, 35.0]
    # with an axis: each replica's [r, 10 r] reduced over its axis 0, then across the 8 replicas
    # (SUM: 11 * 28; MEAN over all 16 elements: 308 / 16), inside a tf.function and eagerly
    assert obs["reduce_sum_axis0_graph"] == 308.0
    assert obs["reduce_mean_axis0_graph"] == 19.25
    assert obs["reduce_without_axis"]["error"] == "TypeError"
    if config == "tf2.1":
        # TF 2.1's reduce(axis=...) calls experimental_run_v2 with a plain lambda: a TPU refuses it eagerly
        assert refused(obs["reduce_sum_axis0_eager"], MESSAGE_2_1)
        assert refused(obs["reduce_mean_axis0_eager"], MESSAGE_2_1)
    else:
        assert obs["reduce_sum_axis0_eager"] == 308.0
        assert obs["reduce_mean_axis0_eager"] == 19.25
    if config in API_2_4:  # TF 2.1.0 had neither gather nor values_from_function
        assert obs["gather_axis0"] == [float(v) for i in range(8) for v in (i, 10 * i)]
        assert obs["values_from_function"] == [2 * i for i in range(8)]


@pytest.mark.parametrize("config", ALL)
def test_input_pipeline(config):
    obs = observed(config)
    assert obs["input_contexts"] == [[1, 0, 8, 8]]
    assert obs["dataset_fn_first"] == [list(range(8 * i, 8 * i + 8)) for i in range(8)]
    assert obs["split_batch"] == [[2 * i, 2 * i + 1] for i in range(8)]
    if config in API_2_1:
        assert obs["numpy_dataset"] == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("config", ALL)
def test_cluster_resolver_master(config):
    master = observed(config)["master"]
    assert master["grpc"] == "grpc://10.0.0.2:8470"
    if config in API_2_1:
        # TF 2.1: '' is the TPU attached to this host, 'local' is kept as given
        assert master["empty"] == "" and master["local"] == "local"
    else:
        # TF >= 2.2: '' is looked up like None; 'local' is the attached TPU
        assert master["empty"] == master["none"] != ""
        assert master["local"] == ""


@pytest.mark.parametrize("config", ALL)
def test_tf_2_1_optimizer_keywords(config):
    # TF 2.1 and 2.4's optimizers take `lr=`; so do both surfaces on TF 2.21, which hand out
    # those optimizers (Keras >= 2.11's own ignore `lr=`: a log line, then the default 0.01)
    assert observed(config)["sgd_lr"] == 0.25
