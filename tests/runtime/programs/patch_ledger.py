"""Installs what a verify run of TF 2.1 code installs (the emulation, the TF 2.1 surface, the record
of moved APIs, the recorder), lists the ledger's parts, uninstalls it all and lists what is left:
the ledger's entries and every attribute of TensorFlow's and Keras's modules and classes that
differs from before (TensorFlow's own lazy loading aside: a module object loaded, a dunder of a
lazily loaded module, the eager context created).  Run by tests/runtime/test_patches.py."""

import sys
import types

import tensorflow as tf

from migrate_tpu.runtime import patches
from migrate_tpu.runtime.record import recorder
from migrate_tpu.runtime.surfaces import emulation, legacy, moved_calls

OWNERS = ("tensorflow", "keras", "tf_keras")


def snapshot():
    seen = {}
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(OWNERS):
            continue
        for attribute, value in list(getattr(module, "__dict__", {}).items()):
            seen[(name, attribute)] = value
            if isinstance(value, type) and value.__module__.startswith(OWNERS):
                for key, member in list(value.__dict__.items()):
                    seen[(name, attribute, key)] = member
    return seen


def lazily_loaded(key, before, after):
    return (isinstance(before, types.ModuleType) or isinstance(after, types.ModuleType) or key[-1].startswith("__")
            or key == ("tensorflow.python.eager.context", "_context"))


before = snapshot()
api = sys.argv[1]
emulation.configure_devices(8)
emulation.install(tf_api=api)
if api != "2.4":
    legacy.install(release=api)
    legacy.restrict_to(api)
moved_calls.install(api, "2.4", ".")
recorder.install(sys.argv[2], steps=2, seed=1)
# a seeded run reads no element ahead of the consumer: prefetch is left out (runtime/record/seeding.py)
dataset = tf.data.Dataset.range(3)
print("PREFETCH_LEFT_OUT", dataset.prefetch(2) is dataset)
print("PARTS", " ".join(sorted({by for by, _, _ in patches.entries()})))
print("PATCHED", len(patches.entries()))
recorder.uninstall()
moved_calls.uninstall()
legacy.uninstall()
emulation.uninstall()
print("LEFT", patches.entries())
print("PREFETCH_AFTER", dataset.prefetch(2) is dataset)
after = snapshot()
changed = sorted(str(key) for key in before if key in after and before[key] is not after[key] and not lazily_loaded(key, before[key], after[key]))
print("CHANGED", changed)
