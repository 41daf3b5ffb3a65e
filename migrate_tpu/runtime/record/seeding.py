"""Seeding TensorFlow's sources of randomness that a TF 2.x program of 2020 draws from,
the same way in every run (``migrate-tpu verify``'s runs, ``MIGRATE_TPU_SEED``).

Verify compares two runs of a program bit for bit; its control, the same program run
twice, must record the same bits.  The recorder seeds Python's ``random`` and NumPy's
global ``RandomState`` (``recorder._seed``), and :func:`seed_tensorflow`:

* TensorFlow's global seed (``tf.random.set_seed``), from which unseeded TF random ops,
  ``Dataset.shuffle`` without a seed, Keras initializers and dropout take theirs (for
  tf-keras's initializers, :mod:`migrate_tpu.runtime.surfaces.releases` sees to it);
* TensorFlow's kernels: deterministic ones (``enable_op_determinism``, TF >= 2.9;
  ``TF_DETERMINISTIC_OPS``);
* the global ``tf.random.Generator``: made from the seed when first asked for (TF makes
  it from a non-deterministic state, and with op determinism, TF >= 2.9, refuses to);
* ``tf.random.Generator.from_non_deterministic_state()`` (the random-numbers guide's first
  generator): made from a seed that follows the run's seed and the call's rank (1st, 2nd,
  ...), so both runs get the same generators; with op determinism TF >= 2.9 refuses the call;
* TF 2.1's distributed datasets: ``experimental_distribute_dataset`` asks tf.data for its
  ``make_stateless`` rewrite, which drops every shuffle's seeds (the shuffle then uses
  fresh random ones: checked on TF 2.1.0, also with ``shuffle(n, seed=5)``); on one
  host the pipeline is not moved between devices, so the rewrite is left out in seeded
  runs, and a distributed shuffle is what TF 2.4.1 and 2.21 make of it;
* ``Dataset.map`` with ``num_parallel_calls``: its calls run on several threads, and the
  stateful random ops in them (``tf.image.random_flip_left_right``, ``random_crop``, unseeded
  ``tf.random.uniform``) draw from one kernel's generator in whatever order the threads come:
  two runs of tensorflow/examples' DenseNet pipeline gave other losses each time (4.8465,
  4.8715, ... at step 1 on TF 2.4.1).  Seeded runs map one element at a time, in order: the
  same elements, in the same order, with the same draws in every run;
* ``Dataset.prefetch``: its thread reads ahead of the consumer, and what reading ahead does
  besides producing elements depends on how far it got: keras-io's X-ray classifier of 2020
  takes one batch of ``shuffle(10000).take(208).cache().batch(200).prefetch(AUTOTUNE)``
  (``next(iter(train_ds))``) and drops the iterator; where the prefetch thread had read the
  last 8 elements and the end by then, the cache was complete and ``fit`` trained on that
  order, else the partial cache was discarded and ``fit``'s first epoch shuffled anew (other
  batches at step 1 in two runs on TF 2.4.1, 8 replicas).  Seeded runs leave the prefetch out:
  the same elements in the same order, read when asked for.

Python 3.7 syntax; TensorFlow is passed in, never imported here.
"""

from __future__ import absolute_import, division, print_function

import functools
import os
import sys
from typing import Any, List, Tuple

from migrate_tpu.runtime import patches


def seed_tensorflow(tf, seed):
    """Seed TensorFlow's randomness sources (see the module's docstring) with ``seed``; what it
    replaces goes through the ledger (``patches``, as "seeding"), undone with the recorder."""
    tf.random.set_seed(seed)
    # Deterministic kernels where this TensorFlow has the switch (TF >= 2.9; before it,
    # TF_DETERMINISTIC_OPS asks the same of the GPU kernels that honour it).
    os.environ.setdefault("TF_DETERMINISTIC_OPS", "1")
    enable = getattr(getattr(tf.config, "experimental", None), "enable_op_determinism", None)
    if enable is not None:
        try:
            enable()
        except Exception:
            pass
    _global_generator_from(tf, seed)
    _non_deterministic_states_from(tf, seed)
    _keep_distributed_shuffle_seeds(tf)
    _sequential_maps(tf)
    _prefetch_without_read_ahead(tf)


def _sequential_maps(tf):
    """``Dataset.map`` without its parallel calls (see the module's docstring)."""
    dataset: Any = getattr(getattr(tf, "data", None), "Dataset", None)
    real = getattr(dataset, "map", None) if dataset is not None else None
    if dataset is None or real is None or getattr(real, "_migrate_tpu_sequential", False):
        return

    @functools.wraps(real)
    def map(self, map_func, num_parallel_calls=None, *args, **kwargs):
        return real(self, map_func, None, *args, **kwargs)

    map.__dict__["_migrate_tpu_sequential"] = True
    patches.patch("seeding", dataset, "map", map)


def _prefetch_without_read_ahead(tf):
    """``Dataset.prefetch`` left out (see the module's docstring): the dataset itself, whose
    elements, in their order, are the prefetched dataset's."""
    dataset: Any = getattr(getattr(tf, "data", None), "Dataset", None)
    real = getattr(dataset, "prefetch", None) if dataset is not None else None
    if dataset is None or real is None or getattr(real, "_migrate_tpu_sequential", False):
        return

    @functools.wraps(real)
    def prefetch(self, *args, **kwargs):
        return self

    prefetch.__dict__["_migrate_tpu_sequential"] = True
    patches.patch("seeding", dataset, "prefetch", prefetch)


def _random_modules(tf):
    """The modules that hand out ``get_global_generator``: ``tf.random`` (TF >= 2.2) and
    ``tf.random.experimental``, also through ``tf.compat.v1``/``v2``."""
    found: List[Any] = []
    compat = getattr(tf, "compat", None)
    for root in (tf, getattr(compat, "v1", None), getattr(compat, "v2", None)):
        module = getattr(root, "random", None) if root is not None else None
        for candidate in (module, getattr(module, "experimental", None) if module is not None else None):
            if candidate is not None and all(candidate is not f for f in found):
                found.append(candidate)
    return found


def _global_generator_from(tf, seed):
    """``get_global_generator()`` made, on first use, ``Generator.from_seed(seed)`` (in the
    caller's context, under ``init_scope``, where TensorFlow makes its own): not at once,
    which would start TensorFlow's context before a script configures collective ops."""
    modules = _random_modules(tf)
    api: Any = next((m for m in modules if hasattr(m, "set_global_generator") and hasattr(m, "Generator")), None)
    real = getattr(api, "get_global_generator", None) if api is not None else None
    if api is None or real is None or getattr(real, "_migrate_tpu_seeded", False):
        return
    home = sys.modules.get(getattr(real, "__module__", "") or "")
    generator_class, set_global = api.Generator, api.set_global_generator
    made: List[Any] = []  # the generator made from the seed, once made

    @functools.wraps(real)
    def get_global_generator():
        # TensorFlow keeps its global generator in its module's `global_generator`
        unset = getattr(home, "global_generator", None) is None if home is not None and \
            hasattr(home, "global_generator") else not made
        if unset:
            with tf.init_scope():
                made.append(generator_class.from_seed(seed))
                set_global(made[-1])
        return real()

    get_global_generator._migrate_tpu_seeded = True  # type: ignore[attr-defined]
    owners: List[Tuple[Any, str]] = [(m, "get_global_generator") for m in modules
                                     if getattr(m, "get_global_generator", None) is real]
    if home is not None and getattr(home, "get_global_generator", None) is real:
        owners.append((home, "get_global_generator"))  # TensorFlow's own callers
    for owner, name in owners:
        patches.patch("seeding", owner, name, get_global_generator)


#: Spreads the seeds of successive ``from_non_deterministic_state`` generators apart, away
#: from the global generator's (the run's seed itself).
_STATE_SEED_STRIDE = 0x9E3779B97F4A7C15


def _non_deterministic_states_from(tf, seed):
    """``Generator.from_non_deterministic_state(alg=None)`` made ``from_seed`` with the n-th
    call's seed (see the module's docstring)."""
    classes: List[Any] = []
    for module in _random_modules(tf):
        klass = getattr(module, "Generator", None)
        if isinstance(klass, type) and all(klass is not c for c in classes):
            classes.append(klass)
    calls = [0]
    for klass in classes:
        real = klass.__dict__.get("from_non_deterministic_state")
        if not isinstance(real, classmethod) or getattr(real.__func__, "_migrate_tpu_seeded", False):
            continue

        def from_non_deterministic_state(cls, alg=None):
            calls[0] += 1
            return cls.from_seed((seed + _STATE_SEED_STRIDE * calls[0]) % (1 << 63), alg=alg)

        from_non_deterministic_state.__doc__ = real.__func__.__doc__
        from_non_deterministic_state._migrate_tpu_seeded = True  # type: ignore[attr-defined]
        patches.patch("seeding", klass, "from_non_deterministic_state", classmethod(from_non_deterministic_state))


def _keep_distributed_shuffle_seeds(tf):
    """Leave tf.data's ``make_stateless`` rewrite out where a release has it (TF 2.1)."""
    options = getattr(tf.data, "Options", None)
    distribute = getattr(getattr(tf.data, "experimental", None), "DistributeOptions", None)
    if options is None or distribute is None or not hasattr(distribute, "_make_stateless"):
        return  # TF >= 2.4 keeps the seeds itself
    real = options.__dict__.get("_static_optimizations")
    if real is None or getattr(real, "_migrate_tpu_seeded", False):
        return

    @functools.wraps(real)
    def _static_optimizations(self):
        return [name for name in real(self) if name != "make_stateless"]

    _static_optimizations._migrate_tpu_seeded = True  # type: ignore[attr-defined]
    patches.patch("seeding", options, "_static_optimizations", _static_optimizations)
