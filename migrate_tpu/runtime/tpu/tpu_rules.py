"""Every refusal of the emulated TPU, in one table: what the TPU (its compiler, TPUStrategy, Keras
under TPUStrategy, a TPU Node's worker) refused, from which release to which, with its error class
and where that is written (:data:`TPU_RULES`).  The code that refuses names its rule here: the
emulated extended object (``tpu_extended``: all-reduces, inputs, ``run``), the compile step
(``tpu_ops``, ``tpu_compiler``), Keras's check (below) and the machine (``tpu_machine``,
``tpu_worker_input``).  A new refusal gets its row here first; ``tests/runtime/test_tpu_rules.py``
holds every row to a known release and a source, and every refusal raised to a row.

Beside the table, the data two rules read: the dtypes the TPU's all-reduce takes per release,
and the core counts TPU machines have.

Python 3.7 syntax; TensorFlow is imported only by the functions that need it, so the tables
and messages can be read (and tested) without it.
"""

from __future__ import absolute_import, division, print_function

from typing import Dict, NamedTuple, Optional, Tuple


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------

#: The releases the emulation has surfaces of, oldest first (a later one is the last's).
RELEASES = ("2.1", "2.2", "2.3", "2.4")


class TPURule(NamedTuple):
    """One refusal of a real TPU: what it refuses, the error class TensorFlow raises, the first
    and last release whose TPU refused it (None: every later one too), and where that is written
    (a file at a tag, an issue, a doc page)."""
    name: str
    refuses: str
    error: str
    since: str
    until: Optional[str]
    sources: Tuple[str, ...]


_TABLE = (
    # TPUStrategy's own checks (the extended object, tpu_extended)
    TPURule("eager-plain-function", "run (experimental_run_v2) of a plain Python function, executing eagerly",
            "NotImplementedError", "2.1", None,
            ("tensorflow/python/distribute/tpu_strategy.py@v2.1.0 experimental_run_v2",
             "tensorflow/python/distribute/tpu_strategy.py@v2.4.1 validate_run_function")),
    TPURule("all-reduce-dtype", "an all-reduce in the step of a dtype CrossReplicaSum does not take "
            "(ALL_REDUCE_TYPES)", "TypeError", "2.1", None,
            ("tensorflow/python/ops/gen_tpu_ops.py (cross_replica_sum's input types)",
             "tensorflow/python/framework/op_def_library.py (_SatisfiesTypeConstraint)",
             "tensorflow/python/distribute/tpu_strategy.py@v2.4.1 TPUExtended._reduce_to")),
    TPURule("sparse-input-prefetch", "a sparse or ragged dataset distributed with device prefetch",
            "ValueError", "2.3", None,
            ("tensorflow/python/distribute/tpu_strategy.py@v2.3.4 and @v2.4.1 TPUExtended._check_spec "
             "(absent at v2.1.0 and v2.2.3)",)),
    TPURule("core-count", "a core count no TPU machine has (--replicas, --hosts)", "ValueError", "2.1", None,
            ("cloud.google.com/tpu/docs/types-zones (TPU types of 2020: v2-8 .. v2-512, v3-8 .. v3-2048)",
             "cloud.google.com/tpu/docs/v3 (2 TensorCores per chip)")),
    # Keras's check under TPUStrategy (keras_loss_scaling_patches, below)
    TPURule("loss-scaling", "a LossScaleOptimizer (mixed_float16) under TPUStrategy", "ValueError", "2.3", None,
            ("tensorflow/python/keras/mixed_precision/experimental/loss_scale_optimizer.py@v2.3.4",
             "tensorflow/python/keras/mixed_precision/loss_scale_optimizer.py@v2.4.1 "
             "(_raise_if_strategy_unsupported; v2.2.3 has no TPU check)")),
    # The compiler's op rules (tpu_ops)
    TPURule("no-kernel", "an op without an XLA kernel, soft placement off", "InvalidArgumentError", "2.1", None,
            ("tensorflow/tpu#176 (the message)",
             "tensorflow/python/distribute/tpu_strategy_test.py@v2.4.1 test_recover_from_compilation_failures",
             "tensorflow/python/tpu/tpu.py@v2.1.0 line 1003, @v2.4.1 line 1236 (allow_soft_placement)")),
    TPURule("python-on-node", "a Python op of the step moved to a TPU Node's host", "NotFoundError", "2.1", None,
            ("tensorflow#30818", "tensorflow#24099")),
    TPURule("variant-stays", "an op without an XLA kernel on a value that exists only on the TPU",
            "InvalidArgumentError", "2.1", None, ("XLA probe: scripts/xla-op-lists at v2.1.0 and v2.4.1",)),
    TPURule("padded-string", "a string input padded by the dynamic padder", "InternalError", "2.1", None,
            ("tensorflow/python/distribute/tpu_strategy_test.py@v2.4.1 "
             "test_dynamic_shape_with_outside_compilation_failure",
             "tensorflow/python/tpu/tpu.py@v2.4.1 _pad_all_input")),
    # XLA's verdict on the trace (tpu_compiler)
    TPURule("compile-time-constant", "an op input that must be a compile-time constant, fed by an input",
            "InvalidArgumentError", "2.1", None,
            ("tensorflow/compiler/tf2xla/xla_op_kernel.cc (ConstantInput)",
             "tensorflow/python/tpu/tpu.py@v2.4.1 split_compile_and_replicate (every input a tensor)")),
    TPURule("loop-shapes", "a loop whose body changes the shape it carries", "InvalidArgumentError", "2.1", None,
            ("tensorflow/compiler/tf2xla/kernels/while_op.cc (VerifyBodyInputAndOutputShapeMatch)",)),
    TPURule("fixed-list-size", "a TensorList of no fixed size (a loop's gradient accumulators)",
            "InvalidArgumentError", "2.1", None,
            ("tensorflow/compiler/tf2xla/kernels/tensor_list_utils.cc",
             "tensorflow/python/ops/while_v2.py@v2.4.1 (accumulators of a gradient)")),
    # A TPU Node's worker (tpu_machine, tpu_machine_io, tpu_worker_input)
    TPURule("local-file-on-node", "a local path reached by an op that a Node's TPU worker runs",
            "UnimplementedError", "2.1", None,
            ("tensorflow#39030", "tensorflow#43186", "cloud.google.com/tpu/docs/storage-buckets")),
    TPURule("python-input-on-node", "Python in an input pipeline a Node's TPU worker runs, which has no "
            "kernel for it", "NotFoundError", "2.1", "2.2",
            ("tensorflow#39030 (2.2.0-rc3)", "tensorflow#30818", "tensorflow#24099",
             "tensorflow#34346 (the host placement of 2.2 did not reach the pipeline)")),
    TPURule("python-input-calls-back", "Python in an input pipeline a Node's TPU worker runs, which "
            "cannot call back into the client", "UnavailableError", "2.3", None,
            ("tensorflow#43186", "tensorflow#43790", "tensorflow#43037",
             "tensorflow/python/ops/script_ops.py@v2.4.1 (host_address_space)")),
)

#: name -> rule
TPU_RULES: Dict[str, TPURule] = {rule.name: rule for rule in _TABLE}


def release_of(tf_api) -> str:
    """The release of surface ``tf_api`` the rules are read at: ``'2.1'`` ... ``'2.4'``; a mixed
    surface (``'2.1+2.4'``) is its last, and a later or unknown one (or None) is 2.4's."""
    key = str(tf_api or RELEASES[-1]).split("+")[-1]
    key = ".".join(key.split(".")[:2])
    return key if key in RELEASES else RELEASES[-1]


def holds(name, tf_api) -> bool:
    """Whether the TPU of surface ``tf_api``'s release made refusal ``name`` (a :data:`TPU_RULES`
    key; a name not in the table is an error of this package, not a rule that holds)."""
    rule = TPU_RULES[name]
    at = RELEASES.index(release_of(tf_api))
    if at < RELEASES.index(rule.since):
        return False
    return rule.until is None or at <= RELEASES.index(rule.until)


def error_of(name) -> str:
    """The error class TensorFlow raises for refusal ``name``."""
    return TPU_RULES[name].error


# --------------------------------------------------------------------------
# The all-reduce's dtypes
# --------------------------------------------------------------------------


class AllReduceTypes(NamedTuple):
    """The dtypes (TensorFlow's names, in the op's order) that ``CrossReplicaSum`` takes at
    ``release``, and where that is written in the release's wheel: ``(path under the
    tensorflow package, line, words on that line)``."""
    release: str
    allowed: Tuple[str, ...]
    sources: Tuple[Tuple[str, int, str], ...]


def _sources(gen_tpu_ops_line, op_def_library_line, tpu_strategy_line):
    return (("python/ops/gen_tpu_ops.py", gen_tpu_ops_line, "Must be one of the following types"),
            ("python/framework/op_def_library.py", op_def_library_line, "raise TypeError("),
            ("python/distribute/tpu_strategy.py", tpu_strategy_line, "return tpu_ops.cross_replica_sum(value)"))


#: Per emulated TF API (the surface's release): the dtypes a TPU all-reduces.  Checked on the
#: real interpreters (tests/runtime/test_tpu_rules.py): ``gen_tpu_ops.cross_replica_sum`` of a
#: dtype not listed raises exactly ALL_REDUCE_MESSAGE with this list, in a graph, as when a TPU
#: traces its step (2.4.1's op def says ``half``, its message ``float16``).  The sources: the
#: generated op's docstring of ``input``'s types, op_def_library's ``_SatisfiesTypeConstraint``
#: raising the TypeError, and ``TPUExtended._reduce_to`` calling the op inside the TPU context.
ALL_REDUCE_TYPES = {
    "2.1": AllReduceTypes("2.1.0", ("bfloat16", "float32", "int32", "uint32"), _sources(360, 57, 499)),
    "2.2": AllReduceTypes("2.2.3", ("bfloat16", "float32", "int32", "uint32"), _sources(360, 57, 684)),
    "2.3": AllReduceTypes("2.3.4", ("bfloat16", "float32", "int32", "uint32"), _sources(364, 57, 882)),
    "2.4": AllReduceTypes("2.4.1", ("float16", "bfloat16", "float32", "int32", "uint32"), _sources(361, 59, 1095)),
}

#: op_def_library's words for an input whose dtype the op does not take (2.1.0 to 2.21)
ALL_REDUCE_MESSAGE = ("Value passed to parameter 'input' has DataType {dtype} not in list of "
                      "allowed values: {allowed}")


def all_reduce_types(tf_api):
    """The :class:`AllReduceTypes` of surface ``tf_api`` (``'2.1'``, ..., ``'2.4'``; the mixed
    ``'2.1+2.4'`` is 2.4's, as is any later one)."""
    return ALL_REDUCE_TYPES[release_of(tf_api)]


def all_reduce_refusal(dtype_name, tf_api):
    """The TPU's message for all-reducing a ``dtype_name`` value (rule ``all-reduce-dtype``), or None
    where it takes it."""
    rule = all_reduce_types(tf_api)
    if dtype_name in rule.allowed:
        return None
    return ALL_REDUCE_MESSAGE.format(dtype=dtype_name, allowed=", ".join(rule.allowed))


def _dtype_name(value):
    """The TensorFlow dtype name of a tensor or per-replica value, or None for anything else
    (a Python number becomes a float32 or int32 tensor, both taken)."""
    import tensorflow as tf
    parts = getattr(value, "_values", None)
    if isinstance(parts, (tuple, list)) and parts:  # PerReplica, Mirrored, a distributed variable
        value = parts[0]
    elif not tf.is_tensor(value) and not hasattr(value, "indices"):  # IndexedSlices: a tensor's dtype
        return None
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return None
    try:
        return tf.as_dtype(dtype).name
    except TypeError:
        return None


def refusal_of(value, tf_api):
    """The TPU's message for all-reducing ``value`` (a tensor or per-replica value) under surface
    ``tf_api``, or None where its dtype is taken (or it has none)."""
    name = _dtype_name(value)
    return all_reduce_refusal(name, tf_api) if name else None


# --------------------------------------------------------------------------
# Core counts of TPU machines
# --------------------------------------------------------------------------

#: Cores of one TPU host of 2020 (v2-8, v3-8: 4 chips of 2 cores, a 2x2 mesh of chips) and of
#: the whole boxes of that mesh a program can be given (one core, one chip, two chips); today's
#: single-host TPUs have 1, 4 or 8 devices too (v4-8: 4; v5e and v6e: 1, 4, 8).
HOST_CORES = (1, 2, 4, 8)
#: Cores in all of the multi-host TPU types of 2020 (8 per host): v2-32, v2-128, v2-256,
#: v2-512; v3-32, v3-64, v3-128, v3-256, v3-512, v3-1024, v3-2048.
SLICE_CORES = (32, 64, 128, 256, 512, 1024, 2048)


def _listed(numbers):
    numbers = [str(n) for n in numbers]
    return ", ".join(numbers[:-1]) + " or " + numbers[-1]


def core_count_problem(replicas, hosts=1):
    """One line saying why no TPU has ``replicas`` cores (over ``hosts`` hosts), or None.

    One host (``--replicas`` alone): a count of :data:`HOST_CORES` or :data:`SLICE_CORES`
    (a slice's cores seen from its one client).  An emulated pod (``--hosts``): each host's
    share must be a count of :data:`HOST_CORES`; the number of hosts is the user's choice (a
    smaller pod than any TPU type, to try a pod's input pipelines, is allowed)."""
    replicas, hosts = int(replicas), int(hosts or 1)
    host_part = ("a TPU host has 8 cores (v2-8, v3-8), of which a program may be given 1, 2 or 4; "
                 "a slice has 8 per host, {} in all".format(_listed(SLICE_CORES)))
    if hosts > 1:
        per_host = replicas // hosts
        if per_host in HOST_CORES:
            return None
        return ("migrate-tpu run: no TPU host has {} cores (--hosts {} --replicas {}): {}; "
                "run with --replicas {}".format(per_host, hosts, replicas, host_part, 8 * hosts))
    if replicas in HOST_CORES or replicas in SLICE_CORES:
        return None
    return "migrate-tpu run: no TPU has {} cores (--replicas {}): {}; run with --replicas 8".format(
        replicas, replicas, host_part)


def check_core_count(replicas, hosts=1):
    """Rule ``core-count``: raise ``ValueError`` (one line) where no TPU has the emulated machine's
    core count."""
    problem = core_count_problem(replicas, hosts)
    if problem:
        raise ValueError(problem)





# --------------------------------------------------------------------------
# Keras's own refusal of loss scaling under TPUStrategy
# --------------------------------------------------------------------------

#: Keras refuses a LossScaleOptimizer (``mixed_float16``) under TPUStrategy from TF 2.3 on (rule
#: ``loss-scaling``): ``strategy_supports_loss_scaling`` is False for it and ``_raise_if_strategy_unsupported`` says
#: "Loss scaling is not supported with TPUStrategy" (``keras/mixed_precision/loss_scale_optimizer.py``
#: at v2.4.1, ``.../experimental/loss_scale_optimizer.py`` at v2.3.4, tf-keras 2.21; v2.2.3 has
#: no TPU check, v2.1.0 no check at all).  The emulated strategy is a MirroredStrategy, which
#: Keras lets scale: Keras's own check is given the emulated TPU as what it is.
KERAS_LOSS_SCALING = ("tensorflow.python.keras.mixed_precision.loss_scale_optimizer",
                      "tensorflow.python.keras.mixed_precision.experimental.loss_scale_optimizer",
                      "tf_keras.src.mixed_precision.loss_scale_optimizer")


class _TPUStrategyClasses(object):
    """What Keras's check reads as ``tpu_strategy`` (v2.3.4, v2.4.1): the emulated classes."""

    def __init__(self, experimental, stable, v1):
        self.TPUStrategy, self.TPUStrategyV2, self.TPUStrategyV1 = experimental, stable, v1


def keras_loss_scaling_patches(classes, tf_api):
    """``(module, name, value)`` changes (for the emulation's ledger) that make the loaded Keras
    refuse loss scaling under an emulated TPUStrategy with its own words; ``classes`` are the
    emulated (experimental, stable, v1) strategy classes."""
    import sys
    if not holds("loss-scaling", tf_api):
        return []
    changes = []
    for name in KERAS_LOSS_SCALING:
        module = sys.modules.get(name)
        original = getattr(module, "strategy_supports_loss_scaling", None)
        if original is None:
            continue
        changes.append((module, "strategy_supports_loss_scaling", _not_on_an_emulated_tpu(original)))
        if getattr(module, "tpu_strategy", None) is not None:
            changes.append((module, "tpu_strategy", _TPUStrategyClasses(*classes)))
    return changes


def _not_on_an_emulated_tpu(original):
    def strategy_supports_loss_scaling():
        import tensorflow as tf
        if tf.distribute.has_strategy() and getattr(tf.distribute.get_strategy().extended, "emulated_tpu", False):
            return False
        return original()
    return strategy_supports_loss_scaling
