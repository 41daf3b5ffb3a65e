"""TensorFlow's API modules imported by path (``from tensorflow.config import ...``) are the ones
the emulation patched.

TensorFlow's public modules are attributes of ``tensorflow`` (``tf.config`` is the module object
``tensorflow._api.v2.config``), and the package's ``__path__`` also lists the folder they come
from.  ``import tensorflow.config`` (or ``from tensorflow.config import X``, as some 2020 code
wrote) is not in ``sys.modules`` under that name, so Python loads the file again: a fresh module,
whose functions are TensorFlow's own, and binds it as ``tensorflow.config`` in place of the one
the emulation patched.  On a TPU that was harmless (both modules held the same functions); here
TensorFlow's own ``experimental_connect_to_cluster`` would dial the TPU address the emulated
machine announces and wait for ever.

A finder placed first on ``sys.meta_path`` answers such an import with the module the attribute
path already reaches (``tf.config`` for ``tensorflow.config``), patched as the program sees it
through ``tf``: the same objects, whichever way the program spells the import.  Only API modules
are answered; TensorFlow's implementation packages (``tensorflow.python...``) load as always.

Python 3.7 syntax: TensorFlow 2.1.0 runs it.
"""

from __future__ import absolute_import, division, print_function

import importlib.abc
import sys
import types

from migrate_tpu.runtime import patches

_ROOTS = ("tensorflow", "tensorflow_core")
#: where TensorFlow's generated API modules live (``tensorflow_core`` in TF 2.1.0's wheel)
_API_PACKAGES = tuple(root + "._api." for root in _ROOTS)


def _api_module(fullname):
    """The module object ``tensorflow.a.b`` reaches as attributes, when it is an API module."""
    parts = fullname.split(".")
    if len(parts) < 2 or parts[0] not in _ROOTS:
        return None
    found = sys.modules.get(parts[0])
    for part in parts[1:]:
        found = getattr(found, part, None) if found is not None else None
    if not isinstance(found, types.ModuleType):
        return None
    name = getattr(found, "__name__", "") or ""
    if name.startswith(_API_PACKAGES) or name == fullname:
        return found
    return None


class _ExistingModule(importlib.abc.Loader):
    """A loader that hands Python the module the attribute path reaches, leaving it as it is
    (Python sets the import's spec on it in between: its own goes back)."""

    def __init__(self, module):
        self.module = module
        self.own_spec = getattr(module, "__spec__", None)

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        if self.own_spec is not None:
            try:
                module.__spec__ = self.own_spec
            except AttributeError:
                pass


class ApiModuleFinder(object):
    """Answers ``import tensorflow.<api path>`` with the module object ``tf.<api path>``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in sys.modules:
            return None
        module = _api_module(fullname)
        if module is None:
            return None
        from importlib.machinery import ModuleSpec
        spec = ModuleSpec(fullname, _ExistingModule(module), is_package=hasattr(module, "__path__"))
        spec.submodule_search_locations = getattr(module, "__path__", None)
        return spec


_FINDER = ApiModuleFinder()
#: TensorFlow's implementation packages: no API path names them (and an attribute walk there
#: could import what the program never asked for)
_NOT_API = _API_PACKAGES + tuple("tensorflow." + name + "." for name in
                                 ("python", "core", "compiler", "tsl", "lite", "include", "security", "dtensor"))


def _align_twins():
    """Where a module is already loaded under an API path and is not the module that path
    reaches as attributes (TF 2.21 ships its API packages twice, ``tensorflow/distribute/
    experimental/`` beside ``_api/v2/distribute/experimental/``, and its own code imports the
    first), give it the public classes and functions of the second, as the emulation patched
    them: ``from tensorflow.distribute.experimental import TPUStrategy`` is then the
    emulated strategy there too.  Submodules stay the twin's own (TensorFlow imports under them)."""
    for fullname, twin in list(sys.modules.items()):
        if twin is None or not fullname.startswith("tensorflow.") or fullname.startswith(_NOT_API):
            continue
        seen = _api_module(fullname)
        if seen is None or seen is twin:
            continue
        for name, value in list(vars(seen).items()):
            if name.startswith("_") or isinstance(value, types.ModuleType):
                continue
            if getattr(twin, name, patches.MISSING) is not value:
                patches.patch("api_paths", twin, name, value)


def install():
    """Put the finder first on ``sys.meta_path``, and align the API modules already loaded
    twice.  Idempotent."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
        _align_twins()


def uninstall():
    """Take the finder off ``sys.meta_path`` and put the twins back."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    patches.undo("api_paths")
