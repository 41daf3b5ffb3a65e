"""What ``migrate-tpu verify`` asks of a run beyond recording it: kernels on one thread each (to
take a source of nondeterminism away) and a deliberate mistake (to measure what a comparison
can catch).

* ``MIGRATE_TPU_ONE_THREAD_KERNELS=1``: TensorFlow's kernels each run on one thread
  (``intra_op_parallelism_threads=1``).  A large matmul or reduction split over threads adds
  its partial results in the order the threads finish, so two runs of one program can differ
  in their last bits on TF releases that have no deterministic CPU kernels (TF 2.4.1 has no
  switch for it; ``enable_op_determinism`` came in TF 2.9).  One thread a kernel adds in one
  order.  Replicas still run side by side (the inter-op pool is left as it is: collective ops
  of a multi-worker program wait for each other and need it).
* ``MIGRATE_TPU_PERTURB_LEARNING_RATE=F``: every Keras optimizer's learning rate, as its
  update reads it, is scaled by ``F`` (TF 2.1 to 2.4's ``OptimizerV2`` and Keras 2's legacy
  one through ``_decayed_lr``; Keras 2's newer optimizer through ``learning_rate`` as its
  ``update_step`` reads it).  A run with ``F=1.1`` is the mistake a comparison must be able to
  see: if it compares ``same`` with the original, the comparison could not have caught a
  learning rate changed by a tenth, and a ``same`` it gives says nothing.  How many reads were
  scaled is in the record (``perturbed``): none means the program's updates use no such
  optimizer, and the power was not measured.

Python 3.7 syntax; TensorFlow is passed in, never imported here.
"""

from __future__ import absolute_import, division, print_function

import functools
import importlib
import os
import sys

from migrate_tpu.runtime import patches

#: "1": TensorFlow's kernels on one thread each; a number F: every learning rate scaled by F.
ONE_THREAD_VARIABLE = "MIGRATE_TPU_ONE_THREAD_KERNELS"
PERTURB_VARIABLE = "MIGRATE_TPU_PERTURB_LEARNING_RATE"

# (module, class, attribute) where each Keras reads the learning rate its update applies.
_LEARNING_RATE_READS = (
    ("tensorflow.python.keras.optimizer_v2.optimizer_v2", "OptimizerV2", "_decayed_lr"),  # TF 2.1 to 2.5
    ("keras.optimizer_v2.optimizer_v2", "OptimizerV2", "_decayed_lr"),  # Keras 2.6 to 2.8
    ("keras.optimizers.optimizer_v2.optimizer_v2", "OptimizerV2", "_decayed_lr"),  # Keras 2.9 to 2.10
    ("keras.optimizers.legacy.optimizer_v2", "OptimizerV2", "_decayed_lr"),
    ("tf_keras.src.optimizers.legacy.optimizer_v2", "OptimizerV2", "_decayed_lr"),  # tf-keras (TF >= 2.16)
    ("tf_keras.src.optimizers.optimizer", "_BaseOptimizer", "learning_rate"),
    ("keras.optimizers.optimizer", "_BaseOptimizer", "learning_rate"),
)


def as_asked(recorder, tf):
    """Kernels on one thread, or learning rates scaled, where the environment asks (the
    recorder's ``ONE_THREAD_VARIABLE`` and ``PERTURB_VARIABLE``); noted in ``recorder``."""
    if os.environ.get(ONE_THREAD_VARIABLE) == "1":
        recorder.one_thread_kernels = one_thread_kernels(tf)
    factor = os.environ.get(PERTURB_VARIABLE)
    if factor:
        perturb_learning_rates(tf, float(factor), recorder.perturbed)


def one_thread_kernels(tf):
    """Each kernel on one thread (before TensorFlow's context starts; a no-op after)."""
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        return True
    except (RuntimeError, ValueError, AttributeError):  # the context runs already
        return False


def perturb_learning_rates(tf, factor, counter):
    """Scale every learning rate read for an update by ``factor``; ``counter[0]`` counts the
    reads scaled; the replacements go through the ledger (``patches``, as "power")."""
    for module_name, class_name, attribute in _LEARNING_RATE_READS:
        if module_name.split(".", 1)[0] not in ("tensorflow",) and module_name.split(".", 1)[0] not in sys.modules:
            continue  # a Keras the program has not imported: it updates nothing
        try:
            module = importlib.import_module(module_name)
        except Exception:
            continue
        klass = getattr(module, class_name, None)
        if klass is None or attribute not in vars(klass):
            continue
        original = vars(klass)[attribute]
        if getattr(original, "_migrate_tpu_perturbed", False) or getattr(getattr(original, "fget", None), "_migrate_tpu_perturbed", False):
            continue
        if isinstance(original, property):
            replacement = _scaled_property(tf, original, factor, counter)
        else:
            replacement = _scaled_method(tf, original, factor, counter)
        patches.patch("power", klass, attribute, replacement)


def _scaled_method(tf, original, factor, counter):
    @functools.wraps(original)
    def decayed_lr(self, *args, **kwargs):
        counter[0] += 1
        value = original(self, *args, **kwargs)
        return value * tf.cast(factor, value.dtype)

    decayed_lr.__dict__["_migrate_tpu_perturbed"] = True
    return decayed_lr


def _scaled_property(tf, original, factor, counter):
    """``learning_rate`` scaled where an ``update_step`` reads it (and nowhere else: a
    callback that assigns or prints it sees the optimizer's own)."""
    def learning_rate(self):
        value = original.fget(self)
        caller = sys._getframe(1)
        if caller.f_code.co_name != "update_step":
            return value
        counter[0] += 1
        return tf.convert_to_tensor(value) * factor

    learning_rate.__dict__["_migrate_tpu_perturbed"] = True
    return property(learning_rate, original.fset, original.fdel, original.__doc__)
