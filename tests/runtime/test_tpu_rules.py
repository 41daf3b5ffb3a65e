"""The TPU's rules of ``migrate_tpu/runtime/tpu/tpu_rules.py``: its tables and messages (pure), the
tables checked against the real TensorFlow releases (their op and their source lines), and
programs that are not TPU programs, or reduce where the TPU does not all-reduce, left alone.

The refusals themselves (float64 and int64 all-reduced in the step, ``--replicas 3``) are cases
of the fidelity suite (tests/runtime/fidelity).
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roundtrip"))
from roundtrip_helpers import require_python

from migrate_tpu.runtime.tpu.tpu_rules import (ALL_REDUCE_TYPES, HOST_CORES, RELEASES as RULE_RELEASES, SLICE_CORES, TPU_RULES,
                                               all_reduce_refusal, all_reduce_types, core_count_problem, holds,
                                               release_of)

REPO = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------
# The one table of refusals
# --------------------------------------------------------------------------

TPU_FOLDER = REPO / "migrate_tpu" / "runtime" / "tpu"
#: how the emulation's code names a rule of the table where it refuses
NAMED = re.compile(r"""(?:Refusal|Verdict|error_of|holds)\(\s*"([a-z0-9-]+)"|^\s*"([a-z0-9-]+)": \(""", re.M)
ERRORS = {"NotImplementedError", "TypeError", "ValueError", "InvalidArgumentError", "NotFoundError",
          "InternalError", "UnimplementedError", "UnavailableError"}


def test_every_rule_has_its_releases_its_error_class_and_a_source():
    for name, rule in TPU_RULES.items():
        assert rule.name == name and rule.refuses and rule.sources, name
        assert rule.error in ERRORS, name
        assert rule.since in RULE_RELEASES
        assert rule.until is None or RULE_RELEASES.index(rule.until) >= RULE_RELEASES.index(rule.since), name


def test_a_rule_holds_from_its_release_on_read_at_the_surfaces_release():
    assert [holds("sparse-input-prefetch", api) for api in ("2.1", "2.2", "2.3", "2.4", "2.1+2.4", "2.21", None)] == [
        False, False, True, True, True, True, True]
    assert [holds("python-input-on-node", api) for api in ("2.1", "2.2", "2.3", "2.4")] == [True, True, False, False]
    assert [holds("python-input-calls-back", api) for api in ("2.1", "2.2", "2.3", "2.4")] == [False, False, True, True]
    assert [release_of(api) for api in ("2.1", "2.3.4", "2.1+2.4", "2.21", None)] == ["2.1", "2.3", "2.4", "2.4", "2.4"]
    with pytest.raises(KeyError):
        holds("no-such-rule", "2.4")


def test_every_refusal_the_emulated_tpu_makes_is_a_row_and_every_row_is_made():
    """The code that refuses names its rule (a Refusal, a Verdict, error_of, holds, a table keyed by
    it, or "rule ``name``" where it refuses): each name is a row of the table, and each row is named
    by the code outside the table, so the table is what the emulated TPU refuses, no more, no less."""
    named = set()
    for path in TPU_FOLDER.glob("*.py"):
        text = path.read_text()
        if path.name == "tpu_rules.py":
            text = text.split("TPU_RULES: Dict")[1]  # the code after the table
        named |= {a or b for a, b in NAMED.findall(text)}
        named |= set(re.findall(r"[Rr]ule ``([a-z0-9-]+)``", text))
    assert named - set(TPU_RULES) == set()
    assert set(TPU_RULES) - named == set()


# --------------------------------------------------------------------------
# The tables and messages
# --------------------------------------------------------------------------


def test_each_release_words_the_refusal_with_its_own_list():
    assert all_reduce_refusal("float64", "2.1") == (
        "Value passed to parameter 'input' has DataType float64 not in list of allowed values: "
        "bfloat16, float32, int32, uint32")
    assert all_reduce_refusal("int64", "2.4") == (
        "Value passed to parameter 'input' has DataType int64 not in list of allowed values: "
        "float16, bfloat16, float32, int32, uint32")
    # half was added in 2.4: a float16 all-reduce is refused under the 2.1 to 2.3 surfaces only
    assert [all_reduce_refusal("float16", api) is None for api in ("2.1", "2.2", "2.3", "2.4")] == [
        False, False, False, True]


def test_taken_dtypes_and_surfaces():
    for api, rule in ALL_REDUCE_TYPES.items():
        assert all(all_reduce_refusal(name, api) is None for name in rule.allowed)
        for name in ("float64", "int64", "bool", "complex64", "int8", "uint8"):
            assert all_reduce_refusal(name, api) is not None
    assert all_reduce_types("2.1+2.4") is ALL_REDUCE_TYPES["2.4"]  # the mixed surface is 2.4's
    assert all_reduce_types(None) is ALL_REDUCE_TYPES["2.4"]


@pytest.mark.parametrize("replicas", [3, 5, 6, 7, 12, 16, 24, 4096])
def test_no_tpu_has_these_core_counts(replicas):
    problem = core_count_problem(replicas)
    assert problem is not None and "\n" not in problem
    assert "no TPU has {} cores (--replicas {})".format(replicas, replicas) in problem
    assert "v2-8, v3-8" in problem and "32, 64, 128, 256, 512, 1024 or 2048" in problem
    assert problem.endswith("run with --replicas 8")


def test_tpu_core_counts_are_accepted():
    assert HOST_CORES == (1, 2, 4, 8)
    for replicas in HOST_CORES + SLICE_CORES:
        assert core_count_problem(replicas) is None
        assert core_count_problem(replicas, hosts=1) is None


def test_a_pods_hosts_each_have_a_hosts_cores():
    assert core_count_problem(16, hosts=2) is None  # 8 per host
    assert core_count_problem(4, hosts=2) is None   # the pod tests' small pods: 2, then 1 per host
    assert core_count_problem(2, hosts=2) is None
    assert core_count_problem(32, hosts=4) is None
    problem = core_count_problem(6, hosts=2)
    assert "no TPU host has 3 cores (--hosts 2 --replicas 6)" in problem
    assert problem.endswith("run with --replicas 16")
    assert core_count_problem(48, hosts=4) is not None  # 12 per host


# --------------------------------------------------------------------------
# The tables, checked on the real releases
# --------------------------------------------------------------------------

#: Runs in a real interpreter: each dtype through the TPU's op in a graph, and the source lines.
PROBE = textwrap.dedent("""\
    import json, os, sys
    import tensorflow as tf
    from tensorflow.python.ops import gen_tpu_ops
    root = os.path.dirname(os.path.dirname(os.path.abspath(gen_tpu_ops.__file__)))
    out = {"version": tf.__version__, "messages": {}, "lines": {}}
    for name in json.loads(sys.argv[1]):
        with tf.Graph().as_default():
            try:
                gen_tpu_ops.cross_replica_sum(tf.zeros([2], tf.as_dtype(name)), [[0]])
                out["messages"][name] = None
            except TypeError as error:
                out["messages"][name] = str(error)
    for path, line, _ in json.loads(sys.argv[2]):
        with open(os.path.join(os.path.dirname(root), path)) as handle:
            out["lines"][path] = handle.read().splitlines()[line - 1]
    print(json.dumps(out))
    """)

RELEASES = {"2.1": "tf2.1", "2.2": "tf2.2", "2.3": "tf2.3", "2.4": "tf2.4"}
DTYPES = ["float64", "int64", "float16", "bfloat16", "float32", "int32", "uint32", "bool", "complex64", "int8"]


@pytest.mark.tf
@pytest.mark.parametrize("api", sorted(RELEASES))
def test_the_table_is_the_releases_op_and_sources(api):
    python = require_python(RELEASES[api])
    rule = ALL_REDUCE_TYPES[api]
    done = subprocess.run([python, "-c", PROBE, json.dumps(DTYPES), json.dumps(rule.sources)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=180, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["version"] == rule.release
    assert found["messages"] == {name: all_reduce_refusal(name, api) for name in DTYPES}
    for path, _, words in rule.sources:
        assert words in found["lines"][path], (path, found["lines"][path])


# --------------------------------------------------------------------------
# What the rules leave alone
# --------------------------------------------------------------------------

UNTOUCHED = textwrap.dedent("""\
    import tensorflow as tf
    strategy = tf.distribute.MirroredStrategy()  # not a TPU: float64 all-reduces, --replicas 3 is fine
    run = getattr(strategy, "run", None) or strategy.experimental_run_v2

    @tf.function
    def step():
        ctx = lambda: tf.distribute.get_replica_context()
        return run(lambda: ctx().all_reduce("SUM", tf.constant(1.0, tf.float64)))

    print("UNTOUCHED", strategy.num_replicas_in_sync, float(strategy.experimental_local_results(step())[0]))
    """)


@pytest.mark.tf
def test_a_mirrored_strategy_program_is_untouched(tmp_path):
    require_python("tf2.4")
    script = tmp_path / "mirrored.py"
    script.write_text(UNTOUCHED)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    done = subprocess.run([sys.executable, "-m", "migrate_tpu", "run", "--python", "tf2.4", "--replicas", "3",
                           str(script)], cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=240, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "UNTOUCHED 3 3.0" in done.stdout.splitlines(), done.stdout
