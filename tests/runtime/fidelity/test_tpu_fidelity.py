"""The fidelity suite: 2020 TPU code that failed (or behaved differently) on a TPU, run under the
emulation, with the TPU's behaviour asserted (docs/tpu-fidelity.md has each mode's source).

Every program in ``programs/`` runs under ``migrate-tpu run --python tf2.4`` and ``--python tf2.21``
(the TF 2.4 API) and, where it is TF 2.1 code too, ``--python tf2.1 --tf-api 2.1``; programs that
only TF 2.1 had run with ``--tf-api 2.1`` on all three.  A case where the emulation does not yet do
what the TPU did is ``xfail(strict=True)`` with what differs: it turns red (XPASS) once fixed, and
then its mark goes.  The selected tests' runs start together on a small pool at the first of them (one interpreter
start per program and configuration; about 3 minutes on 2 cores).
"""

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "roundtrip"))
from roundtrip_helpers import require_python, run_jobs

pytestmark = [pytest.mark.tf, pytest.mark.slow]

PROGRAMS = Path(__file__).resolve().parent / "programs"
REPO = Path(__file__).resolve().parents[3]
TIMEOUT = 240

TF24, TF221, TF21 = "tf2.4", "tf2.21", "tf2.1"
#: (interpreter, --tf-api)
ALL = ((TF24, "2.4"), (TF221, "2.4"), (TF21, "2.1"))
API_2_4 = ((TF24, "2.4"), (TF221, "2.4"))
API_2_1 = ((TF21, "2.1"), (TF24, "2.1"), (TF221, "2.1"))

#: Why XLA's own refusals are not made under TF 2.1.0: it cannot lower a function to HLO without
#: running it (``experimental_get_compiler_ir`` came in 2.4), and running the step's copy would
#: change the program's variables.
NO_COMPILER_IR = "TF 2.1.0 has no way to lower the step to HLO without running it (tpu_compiler.available)"

#: A TPU VM instead of the default TPU Node (Colab's of 2020): local files and Python input work.
VM = ("--tpu-env", "vm")
#: The folder that stands in for Cloud Storage (``--gcs``).
GCS_FOLDER = tempfile.mkdtemp(prefix="migrate-tpu-fidelity-gcs-")
atexit.register(shutil.rmtree, GCS_FOLDER, True)


class Case(object):
    """One failure mode: its program, where it runs, what the TPU did, and the emulation's gaps.

    ``expect`` is one of ``("error", ErrorClass or None, [words, any of which])``,
    ``("exit0",)``, ``("line", "FIDELITY key=value")`` or ``("silent", marker)`` (the marker
    never reaches the client's output).  ``gaps`` maps a configuration (or ``"*"``) to why the
    emulation differs there today.
    """

    def __init__(self, name, program, configs, expect, gaps=None, run_args=()):
        self.name, self.program, self.configs, self.expect = name, program, configs, expect
        self.gaps = gaps or {}
        self.run_args = tuple(run_args)

    def gap(self, config):
        return self.gaps.get(config, self.gaps.get("*"))


CASES = [
    Case("py_function in the step", "py_function_step.py", ALL,
         ("error", "InvalidArgumentError", ["'EagerPyFunc' OpKernel for XLA_TPU_JIT"])),
    Case("py_function in the step, soft placement on, TPU Node", "py_function_step_soft.py", ALL,
         ("error", "NotFoundError", ["No registered 'EagerPyFunc' OpKernel for CPU devices"])),
    Case("float64 all-reduce", "float64_all_reduce.py", ALL,
         ("error", "TypeError", ["DataType float64 not in list of allowed values"])),
    Case("int64 all-reduce", "int64_all_reduce.py", ALL,
         ("error", "TypeError", ["DataType int64 not in list of allowed values"])),
    Case("float64 and int64 reduced outside the step (host add_n)", "reduce_outside_step.py", ALL,
         ("line", "FIDELITY reduced=4.0 24")),
    Case("soft placement off, op without a TPU kernel", "no_soft_placement.py", ALL,
         ("error", "InvalidArgumentError", ["TPU compilation failed"])),
    Case("string feature with a dynamic batch", "string_feature_partial_batch.py", API_2_4,
         ("error", "InternalError", ["Compilation failure"])),
    Case("TensorArray grown in an unbounded loop", "tensor_array_unbounded.py", ALL,
         ("error", None, ["TensorList"])),
    Case("checkpoint to local disk, TPU Node", "checkpoint_local.py", ALL,
         ("error", "UnimplementedError", ["File system scheme '[local]' not implemented"])),
    Case("checkpoint to local disk, TPU VM", "checkpoint_local.py", ALL, ("exit0",), run_args=VM),
    Case("SavedModel to local disk, TPU Node", "saved_model_local.py", ALL,
         ("error", "UnimplementedError", ["File system scheme '[local]' not implemented"])),
    Case("SavedModel to local disk, TPU VM", "saved_model_local.py", ALL, ("exit0",), run_args=VM),
    Case("a SavedModel on local disk loaded under the strategy, TPU Node", "saved_model_load_local.py", ALL,
         ("error", "InvalidArgumentError", ["Unsuccessful TensorSliceReader constructor: Failed to get matching files on",
                                            "File system scheme '[local]' not implemented"])),
    Case("a SavedModel on local disk loaded under the strategy, TPU VM", "saved_model_load_local.py", ALL, ("exit0",),
         run_args=VM),
    Case("TFRecord file on local disk, TPU Node", "tfrecord_local.py", ALL,
         ("error", "UnimplementedError", ["File system scheme '[local]' not implemented"])),
    Case("TFRecord file on local disk, TPU VM", "tfrecord_local.py", ALL, ("exit0",), run_args=VM),
    Case("Dataset.from_generator in the input pipeline, TPU Node, TF 2.1 (no PyFunc kernel on the worker)",
         "from_generator_input.py", ((TF21, "2.1"),),
         ("error", "NotFoundError", ["No registered 'PyFunc' OpKernel for 'CPU' devices"])),
    Case("Dataset.from_generator in the input pipeline, TPU Node, TF 2.4 (the worker calls back the client)",
         "from_generator_input.py", API_2_4, ("error", "UnavailableError", ["failed to connect to all addresses"])),
    Case("Dataset.from_generator in the input pipeline, TPU VM", "from_generator_input.py", ALL, ("exit0",), run_args=VM),
    Case("py_function in Dataset.map, TPU Node, TF 2.1", "py_function_input.py", ((TF21, "2.1"),),
         ("error", "NotFoundError", ["No registered 'EagerPyFunc' OpKernel for 'CPU' devices"])),
    Case("py_function in Dataset.map, TPU Node, TF 2.4", "py_function_input.py", API_2_4,
         ("error", "UnavailableError", ["failed to connect to all addresses"])),
    Case("py_function in Dataset.map, TPU VM", "py_function_input.py", ALL, ("exit0",), run_args=VM),
    Case("tf.summary with a local logdir, TPU Node", "summary_local_logdir.py", ALL,
         ("error", "UnimplementedError", ["File system scheme '[local]' not implemented"])),
    Case("tf.summary with a local logdir, TPU VM (the writer is made; the step's summary does not compile)",
         "summary_local_logdir.py", ALL, ("error", "InvalidArgumentError", ["'WriteSummary' OpKernel for XLA_TPU_JIT"]), run_args=VM),
    Case("data, checkpoints and logs in a bucket (gs://, --gcs)", "gcs_bucket.py", ALL,
         ("line", "FIDELITY gcs saved=gs://BUCKET/model/ckpt-1 total=120.0 files=['gs://BUCKET/data/train-0.tfrecord'] logs=1"),
         run_args=("--gcs", GCS_FOLDER)),
    Case("tf.print in the step", "print_in_step.py", ALL,
         ("error", "InvalidArgumentError", ["'StringFormat' OpKernel for XLA_TPU_JIT", "'PrintV2' OpKernel for XLA_TPU_JIT"])),
    Case("tf.print in the step, soft placement on, TPU Node (the worker's log)", "print_in_step_soft.py", ALL,
         ("silent", "FIDELITY-PRINT")),
    Case("replica function traced once", "trace_count.py", ALL,
         ("line", "FIDELITY traces=1")),
    Case("replica id has no static value", "replica_id_static.py", ALL,
         ("line", "FIDELITY static_ids=['none']")),
    Case("replica id used as a Python number", "replica_id_as_python_int.py", ALL,
         ("error", "TypeError", ["int() argument must be"])),
    Case("op without an XLA kernel, soft placement on (host)", "gamma_soft_placement.py", ALL, ("exit0",)),
    Case("tf.unique in the step, TF 2.1 (no XLA kernel)", "unique_in_step.py", API_2_1,
         ("error", "InvalidArgumentError", ["'Unique' OpKernel for XLA_TPU_JIT"])),
    Case("tf.unique in the step, TF 2.4 (the TPU's own kernel)", "unique_in_step.py", API_2_4, ("exit0",)),
    Case("eager run of a tf.function, traced once per signature", "eager_run_traced_once.py", ALL,
         ("line", "FIDELITY traces=1")),
    Case("eager run of a plain function", "eager_run_plain_fn.py", ALL,
         ("error", "NotImplementedError", ["eager execution"])),
    Case("Keras metric created outside the scope", "metric_outside_scope.py", API_2_4,
         ("error", "ValueError", ["Trying to run metric.update_state in replica context"])),
    Case("partial last batch, dynamic batch size on", "partial_batch_dynamic.py", ALL, ("exit0",)),
    Case("partial last batch, dynamic batch size off", "partial_batch_static.py", API_2_4, ("exit0",)),
    Case("string op in the step", "string_op_in_step.py", ALL,
         ("error", "InvalidArgumentError", ["'AsString' OpKernel for XLA_TPU_JIT"])),
    Case("string op in the step, soft placement on (host round trip)", "string_op_in_step_soft.py", ALL, ("exit0",)),
    Case("TF 2.1 eager experimental_run_v2 of a tf.function with apply_gradients",
         "eager_run_v2_apply_gradients.py", API_2_1, ("exit0",)),
    Case("tf.cond whose gradient the step takes (built in the TPU's XLA context)", "cond_gradient_step.py", ALL,
         ("line", "FIDELITY weight=1.20")),
    Case("Keras fit of a fused BatchNormalization on batches of unknown size", "batchnorm_unknown_batch.py", ALL,
         ("line", "FIDELITY predicted=(40, 2)")),
    Case("TPU entry points imported by module path (from tensorflow.config import ...)", "import_by_path.py", ALL,
         ("line", "FIDELITY replicas=8 same_module=True same_class=True")),
    Case("a Python int given to run, used as one_hot's depth (an input, not a constant)", "python_int_as_depth.py",
         ALL + API_2_1[1:], ("error", "InvalidArgumentError", ["must be a compile-time constant"]),
         gaps={(TF21, "2.1"): NO_COMPILER_IR}),
    Case("a loop that grows a tensor (loop body shapes)", "loop_grows_tensor.py", ALL + API_2_1[1:],
         ("error", "InvalidArgumentError", ["shapes of loop body do not match"]), gaps={(TF21, "2.1"): NO_COMPILER_IR}),
    Case("a while_loop without maximum_iterations whose gradient the step takes", "while_gradient_unbounded.py",
         ALL + API_2_1[1:], ("error", "InvalidArgumentError", ["fixed tensor list size"]),
         gaps={(TF21, "2.1"): NO_COMPILER_IR}),
    Case("sparse inputs distributed with device prefetch (TF >= 2.3)", "sparse_input_prefetch.py", API_2_4,
         ("error", "ValueError", ["TPUStrategy does not support distributed datasets with device prefetch"])),
    Case("mixed_float16 (loss scaling) under TPUStrategy", "loss_scaling_float16.py", API_2_4,
         ("error", "ValueError", ["Mixed precision is not supported with the tf.distribute.Strategy: TPUStrategy"])),
    Case("a glob of a bucket lists names in Cloud Storage's order", "gcs_glob_order.py", ALL,
         ("line", "FIDELITY count=20 sorted=True"), run_args=("--gcs", GCS_FOLDER)),
    Case("mixed_bfloat16 convolutions trained (the TPU's type; no CPU kernel in TF 2.4.1)", "bfloat16_conv_fit.py",
         API_2_4, ("line", "FIDELITY predicted=(16, 2) bfloat16")),
    Case("tpu.outside_compilation of a print in the step (host ops, soft placement off)", "outside_compilation_print.py",
         ALL, ("line", "FIDELITY total=16.0")),
    Case("a TF1 session to the TPU's address (TPUEstimator): not emulated, fails at once", "session_to_tpu.py", API_2_4,
         ("error", "NotImplementedError", ["is not emulated"])),
    Case("Dataset.from_generator iterated eagerly after connect, TPU Node, TF 2.1", "from_generator_eager.py",
         ((TF21, "2.1"),), ("error", "NotFoundError", ["No registered 'PyFunc' OpKernel for 'CPU' devices"])),
    Case("Dataset.from_generator iterated eagerly after connect, TPU Node, TF 2.4", "from_generator_eager.py",
         API_2_4, ("error", "UnavailableError", ["failed to connect to all addresses"])),
    Case("Dataset.from_generator iterated eagerly after connect, TPU VM", "from_generator_eager.py", ALL,
         ("line", "FIDELITY first=0.0"), run_args=VM),
    Case("--replicas 3 (no TPU host has 3 cores)", "plain_step.py", API_2_4,
         ("error", "ValueError", ["no TPU has 3 cores"]), run_args=("--replicas", "3")),
]

_POOL = []
_RUNS = {}


def _execute(argv, env):
    try:
        done = subprocess.run(argv, env=env, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=TIMEOUT)
        return done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        return -9, str(expired.stdout or ""), str(expired.stderr or "") + "\n[killed after {}s]".format(TIMEOUT)


def _key(case, config):
    return case.name, config


def _start_all(selected):
    """Queue the selected tests' runs at once (an interpreter's start is mostly waiting)."""
    if _POOL:
        return
    _POOL.append(ThreadPoolExecutor(max_workers=run_jobs()))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
    env.pop("TPU_NAME", None)
    env.pop("KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", None)
    for name in ("MIGRATE_TPU_ENVIRONMENT", "MIGRATE_TPU_GCS"):  # the machine is each case's
        env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    for case, (name, api) in selected:
        argv = [sys.executable, "-m", "migrate_tpu", "run", "--python", name, "--tf-api", api]
        argv += list(case.run_args) + [str(PROGRAMS / case.program)]
        _RUNS[_key(case, (name, api))] = (argv, _POOL[0].submit(_execute, argv, env))


def _params():
    for case in CASES:
        for config in case.configs:
            marks = []
            why = case.gap(config)
            if why:
                marks.append(pytest.mark.xfail(strict=True, reason=why))
            machine = "-" + case.run_args[case.run_args.index("--tpu-env") + 1] if "--tpu-env" in case.run_args else ""
            yield pytest.param(case, config, marks=marks, id="{}-{}-api{}{}".format(case.program[:-3], *config, machine))


def _describe(argv, rc, out, err):
    return "$ {}\nexit {}\n--- stdout (tail)\n{}\n--- stderr (tail)\n{}".format(" ".join(argv), rc, out[-2000:], err[-4000:])


def _last_error(err):
    """The class name of the traceback's last ``Name: message`` line, or None."""
    for line in reversed(err.splitlines()):
        match = re.match(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception|Exit))\b", line.strip())
        if match:
            return match.group(1)
    return None


@pytest.mark.parametrize("case,config", list(_params()))
def test_behaves_as_the_tpu(case, config, request):
    require_python(config[0])
    # this module's selected tests only (other modules parametrize a "case" of their own)
    _start_all([(item.callspec.params["case"], item.callspec.params["config"])
                for item in request.session.items
                if getattr(item, "callspec", None) and item.module is request.module and "config" in item.callspec.params])
    argv, future = _RUNS[_key(case, config)]
    rc, out, err = future.result()
    where = _describe(argv, rc, out, err)
    assert rc != -9, where
    kind = case.expect[0]
    if kind == "exit0":
        assert rc == 0, where
    elif kind == "error":
        error_class, words = case.expect[1], case.expect[2]
        assert rc != 0, "the TPU failed here; the emulation exited 0\n" + where
        if error_class:
            assert error_class in err, "expected {}\n{}".format(error_class, where)
        if words:
            assert any(word in err for word in words), "expected one of {}\n{}".format(words, where)
    elif kind == "line":
        assert rc == 0, where
        assert case.expect[1] in out.splitlines(), where
    elif kind == "silent":
        assert rc == 0, where
        assert case.expect[1] not in out + err, "the TPU printed nothing on the client\n" + where
    else:  # pragma: no cover - a new kind of expectation
        raise AssertionError(kind)


def test_every_program_is_a_case():
    """A program without a case would never run."""
    used = {case.program for case in CASES}
    assert sorted(p.name for p in PROGRAMS.glob("*.py")) == sorted(used)
    assert len(CASES) >= 20
