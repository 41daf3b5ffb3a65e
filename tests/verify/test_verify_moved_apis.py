"""verify names the moved APIs its migrated run still called, with what covers them, and runs a
``--target latest`` migration under the interpreter's own API (``--after-api native``), on the
real interpreters (docs/verify.md, "Moved APIs the migration did not reach")."""

import textwrap

from tests.verify.test_verify import require, verify

STEPPER = textwrap.dedent("""\
    import tensorflow as tf


    def make_step(strategy):
        @tf.function
        def step(x):
            return strategy.experimental_run_v2(lambda t: t * 2.0, args=(x,))
        return step
""")

TRAIN = textwrap.dedent("""\
    import tensorflow as tf
    from helpers.stepper import make_step

    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.experimental.TPUStrategy(resolver)
    step = make_step(strategy)
    for i in range(3):
        print(strategy.reduce("SUM", step(tf.constant(float(i))), axis=None))
""")


def test_a_helper_the_migration_did_not_cover_is_named_with_the_entry_that_covers_it(tmp_path):
    """The issue's user: verify of train.py alone migrates train.py; its helper still calls
    experimental_run_v2, which TF 2.4 removed.  The report names the helper's line, TPU101 and
    `--entry train.py .`; with it, the whole folder is migrated and the runs agree."""
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("")
    (tmp_path / "helpers" / "stepper.py").write_text(STEPPER)
    (tmp_path / "train.py").write_text(TRAIN)
    status, report, _ = verify(tmp_path, "--python", require("tf2.4"), "--no-blame", "train.py")
    assert report["verdict"] in ("diverged", "error"), report
    (call,) = report["moved_apis"]
    assert (call["where"], call["rule"], call["failed"], call["covered"]) == ("helpers/stepper.py:7", "TPU101", True, False)
    assert "`--entry train.py .` migrates the folder" in call["to_do"]
    status, report, _ = verify(tmp_path, "--python", require("tf2.4"), "--no-blame", "--entry", "train.py", ".")
    assert (status, report["verdict"], report["moved_apis"]) == (0, "same", []), report


LATEST = textwrap.dedent("""\
    import tensorflow as tf

    tf.keras.mixed_precision.experimental.set_policy("float32")
    strategy = tf.distribute.experimental.TPUStrategy(tf.distribute.cluster_resolver.TPUClusterResolver(tpu=''))
    with strategy.scope():
        weight = tf.Variable([1.0, 2.0])


    @tf.function
    def step(x):
        def replica(v):
            weight.assign_sub(0.5 * v)
            return tf.reduce_sum(weight)
        return strategy.experimental_run_v2(replica, args=(x,))


    for i in range(3):
        print(strategy.reduce("SUM", step(tf.constant([1.0, float(i)])), axis=None))
""")


def test_a_latest_migration_runs_under_tf_2_21_as_it_is(tmp_path):
    """`--target latest --after-api native`: the migration runs under TF 2.21's own API and agrees
    with the original under the 2.1 surface; a hand migration that kept the experimental
    mixed-precision call fails there as on TF 2.21 (under the 2.4 surface it would run), named."""
    (tmp_path / "train.py").write_text(LATEST)
    python = require("tf2.21")
    status, report, _ = verify(tmp_path, "--python", python, "--no-blame", "--target", "latest", "--after-api", "native", "train.py")
    assert (status, report["verdict"], report["after_api"], report["moved_apis"]) == (0, "same", "native", []), report
    (tmp_path / "hand").mkdir()
    (tmp_path / "hand" / "train.py").write_text(LATEST.replace("experimental_run_v2", "run").replace(
        "distribute.experimental.TPUStrategy", "distribute.TPUStrategy"))
    status, report, _ = verify(tmp_path, "--python", python, "--no-blame", "--after-api", "native", "--after", "hand/train.py",
                               "train.py")
    assert report["verdict"] in ("diverged", "error"), report
    (call,) = report["moved_apis"]
    assert (call["where"], call["rule"], call["failed"], call["covered"]) == ("hand/train.py:3", "TPU402", True, True), report
