"""What a program of TF 2.1.0, 2.2.3, 2.3.4 or 2.4.1 sees of its release on a newer TensorFlow.

A surface (``--tf-api 2.1``, ``2.2``, ``2.3`` or ``2.4``) is the release it names, whatever
interpreter runs it.  :func:`install` (called by ``emulation.install`` for every surface and by
``legacy.install`` for the older ones) makes these parts of the release visible:

* **Its version**, to the user's code only: ``tf.__version__``, ``tf.version.VERSION``,
  ``GIT_VERSION`` (also through ``tf.compat.v1``/``v2``) and ``tf.keras.__version__`` are
  the release's (``2.1.0`` ... ``2.4.1``), so a version guard takes the branch it took on
  that release; TensorFlow's, Keras's, other installed packages' and the runtime's own
  code read the real ones (the ``tf`` modules' class gets a ``__getattribute__`` that
  looks at the calling frame, as :func:`is_user_code` decides).
* **Its Keras optimizers**: Keras >= 2.11 (tf-keras on TF >= 2.11) replaced
  ``tf.keras.optimizers.Adam``/``SGD``/... with new classes (``iteration`` for ``iter``,
  other update arithmetic, ``lr=`` ignored, ``decay=`` refused); TF 2.1.0's and 2.4.1's
  optimizers are what it calls ``optimizers.legacy``, and those are handed out, by
  class and by name (``tf.keras.optimizers.get('adam')``, ``compile(optimizer='adam')``:
  tf-keras makes a string the new class in eager mode).
* **Its mixed-precision API** where a release dropped it: ``tf.keras.mixed_precision.
  experimental`` (``set_policy``, ``global_policy``, ``Policy``, and
  ``LossScaleOptimizer(optimizer, loss_scale)`` taking ``'dynamic'``, a number or a
  ``FixedLossScale``/``DynamicLossScale``; from TF 2.2 on also ``get_layer_policy``), and
  ``tf.mixed_precision.experimental``'s loss-scale classes (TF >= 2.9 dropped both).

Python 3.7 syntax: the 2.1 surface also runs inside the TF 2.1 interpreter.
"""

from __future__ import absolute_import, division, print_function

import functools
import importlib
import importlib.util
import inspect
import os
import sys
import sysconfig
import types
from typing import Any, Dict, List, Tuple

import tensorflow as tf

from migrate_tpu.runtime import RUNTIME_FOLDER, patches
from migrate_tpu.runtime.tpu.tpu_system import api_version, default_tf_api, tf_version

#: What each surface's release says of itself, read on the real TF 2.1.0, 2.2.3, 2.3.4 and 2.4.1
#: interpreters (``tests/runtime/test_releases.py`` reads 2.1 and 2.4 again,
#: ``tests/runtime/test_surface.py`` 2.2 and 2.3).
RELEASES = {
    "2.1": {"version": "2.1.0", "git_version": "v2.1.0-rc2-17-ge5bf8de", "keras_version": "2.2.4-tf"},
    "2.2": {"version": "2.2.3", "git_version": "v2.2.2-246-gcfe0c80169a", "keras_version": "2.3.0-tf"},
    "2.3": {"version": "2.3.4", "git_version": "v2.3.3-137-gea90cf44f73", "keras_version": "2.4.0"},
    "2.4": {"version": "2.4.1", "git_version": "v2.4.0-49-g85c8b2a817f", "keras_version": "2.4.0"},
}

#: The Keras optimizer classes that Keras >= 2.11 replaced (the old ones are ``optimizers.legacy``).
OPTIMIZERS = ("Adadelta", "Adagrad", "Adam", "Adamax", "Ftrl", "Nadam", "Optimizer", "RMSprop", "SGD")



_INSTALLED: List[str] = []  # the surface installed, once installed


def _set(owner, name, value):
    if isinstance(owner, dict):
        patches.patch_item("releases", owner, name, value)
    else:
        patches.patch("releases", owner, name, value)


# --------------------------------------------------------------------------
# Whose code is asking
# --------------------------------------------------------------------------

_INTERNAL_PACKAGES = frozenset({"tensorflow", "tensorflow_core", "keras", "tf_keras", "tensorflow_estimator"})


def _library_folders():
    """Folders whose code is a library's (TensorFlow's, Keras's, any installed package's),
    the runtime's or Python's own: code there sees what this TensorFlow has."""
    folders = [RUNTIME_FOLDER, os.path.dirname(os.path.abspath(os.__file__))]
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            folders.append(os.path.abspath(paths[key]))
    for name in sorted(_INTERNAL_PACKAGES):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            folders.extend(os.path.abspath(p) for p in spec.submodule_search_locations)
    return tuple(sorted(set(folder + os.sep for folder in folders)))


_FOLDERS: List[Tuple[str, ...]] = []  # _library_folders(), once asked
_LIBRARY_FILE: Dict[str, bool] = {}
_LIBRARY_MODULE: Dict[str, bool] = {}


def _is_library_path(path):
    known = _LIBRARY_FILE.get(path)
    if known is None:
        if not _FOLDERS:
            _FOLDERS.append(_library_folders())
        parts = path.replace("\\", "/").split("/")
        known = _LIBRARY_FILE[path] = (
            path.startswith(_FOLDERS[0]) or "site-packages" in parts or "dist-packages" in parts)
    return known


def _is_library_module(name):
    """Whether module ``name`` (a frame's ``__name__``) is a library's: TensorFlow's,
    Keras's, the runtime's or one loaded from an installed package's folder."""
    known = _LIBRARY_MODULE.get(name)
    if known is None:
        top = name.split(".")[0]
        if top in _INTERNAL_PACKAGES or name.startswith("migrate_tpu.runtime"):
            known = True
        else:
            module = sys.modules.get(top)
            filename = getattr(module, "__file__", None) if module is not None else None
            known = top != "__main__" and isinstance(filename, str) and _is_library_path(os.path.abspath(filename))
        _LIBRARY_MODULE[name] = known
    return known


def is_user_code(frame):
    """Whether ``frame`` runs the user's code (not a library's, the runtime's or Python's).
    AutoGraph runs converted code from generated files, with the globals of the module
    the function came from: the module tells whose code it is."""
    module = frame.f_globals.get("__name__") or ""
    return not (_is_library_path(frame.f_code.co_filename) or _is_library_module(module))


# --------------------------------------------------------------------------
# The release's version, for the user's code
# --------------------------------------------------------------------------

_SHOWN: Dict[int, Dict[str, str]] = {}  # id(module) -> {name: what user code reads}
_SHOWN_NAMES = frozenset({"__version__", "VERSION", "GIT_VERSION", "__git_version__"})
_HOOK_CLASSES: Dict[type, type] = {}


def _class_showing_the_release(base):
    """A subclass of the module type ``base`` (a plain module, TF 2.21's
    ``TFModuleWrapper`` or ``KerasLazyLoader``) whose version attributes read as the
    release's from user code."""
    if base in _HOOK_CLASSES.values():
        return base
    klass = _HOOK_CLASSES.get(base)
    if klass is None:
        real = base.__getattribute__

        def __getattribute__(self, name):
            if name in _SHOWN_NAMES:
                shown = _SHOWN.get(id(self))
                if shown is not None and name in shown and is_user_code(sys._getframe(1)):
                    return shown[name]
            return real(self, name)

        klass = type(base.__name__, (base,), {"__getattribute__": __getattribute__, "__slots__": (),
                                               "__module__": base.__module__, "__doc__": base.__doc__})
        _HOOK_CLASSES[base] = klass
    return klass


def _set_class(module, klass):
    """``module.__class__ = klass`` through the built-in ``__setattr__`` of its type: a
    lazy loader's own would set it on the module it loads, and ``object.__setattr__``
    does not apply to TF 2.21's ``TFModuleWrapper``."""
    for base in type(module).__mro__:
        setter = base.__dict__.get("__setattr__")
        if isinstance(setter, types.WrapperDescriptorType):
            setter(module, "__class__", klass)
            return
    object.__setattr__(module, "__class__", klass)


def _show(module, values):
    if module is None or not isinstance(module, types.ModuleType) or not values:
        return
    base = type(module)
    klass = _class_showing_the_release(base)
    if klass is not base:
        try:
            _set_class(module, klass)
        except TypeError:  # a module type whose layout a subclass cannot take
            return
        patches.note("releases", module, "__class__", base, lambda: _set_class(module, base))
    patches.patch_item("releases", _SHOWN, id(module), values)


def _has(module, name):
    try:
        return hasattr(module, name)
    except Exception:  # a lazy loader whose module fails to import
        return False


def _version_seen_by_user_code(release):
    version, git = release["version"], release["git_version"]
    by_name = {"__version__": version, "VERSION": version, "GIT_VERSION": git, "__git_version__": git}
    compat = getattr(tf, "compat", None)
    for root in (tf, getattr(compat, "v1", None), getattr(compat, "v2", None)):
        if root is None:
            continue
        _show(root, {n: v for n, v in by_name.items() if _has(root, n)})
        _show(getattr(root, "version", None), {"VERSION": version, "GIT_VERSION": git})
    for keras in _keras_namespaces(""):
        _show(keras, {"__version__": release["keras_version"]})


# --------------------------------------------------------------------------
# Keras of the release
# --------------------------------------------------------------------------


def _keras_namespaces(path):
    """The module objects that user code reaches as ``tf.keras.<path>`` (also through
    ``tf.compat.v1``/``v2``) and ``import tensorflow.keras.<path>``: on TF >= 2.16 that
    import loads a second copy of Keras's API modules, loaded here so that the copy the
    program gets is the one changed."""
    found: List[Any] = []

    def add(obj):
        if obj is not None and all(obj is not f for f in found):
            found.append(obj)

    compat = getattr(tf, "compat", None)
    for root in (tf, getattr(compat, "v2", None), getattr(compat, "v1", None)):
        try:
            obj = getattr(root, "keras", None) if root is not None else None
            for part in path.split(".") if path else []:
                obj = getattr(obj, part, None) if obj is not None else None
        except Exception:  # a lazily loaded Keras that fails to import
            obj = None
        add(obj)
    if found:
        try:
            add(importlib.import_module("tensorflow.keras" + ("." + path if path else "")))
        except Exception:  # no such module in this release
            pass
    return found


def _is_keras_2_optimizer(klass):
    """A Keras 2 (``OptimizerV2``) optimizer class; Keras 3's ``optimizers.legacy`` holds
    stand-ins that refuse to be built."""
    return isinstance(klass, type) and hasattr(klass, "_create_slots")


def _legacy_by_default(function):
    """``optimizers.get``/``deserialize`` of Keras >= 2.11 with ``use_legacy_optimizer``
    defaulting to True: a name or an empty config is TF 2.1/2.4's class."""

    @functools.wraps(function)
    def legacy_by_default(*args, **kwargs):
        kwargs.setdefault("use_legacy_optimizer", True)
        return function(*args, **kwargs)

    return legacy_by_default


def _takes_use_legacy_optimizer(function):
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind == p.VAR_KEYWORD or p.name == "use_legacy_optimizer" for p in parameters)


def _optimizers_of_the_release():
    wrapped: Dict[int, Any] = {}  # id(real function) -> its wrapper
    wrappers = set()  # ids of the wrappers
    for optimizers in _keras_namespaces("optimizers"):
        legacy = getattr(optimizers, "legacy", None)
        if legacy is None:
            continue  # Keras < 2.11: its optimizers are the release's
        replaced = False
        for name in OPTIMIZERS:
            new, old = getattr(optimizers, name, None), getattr(legacy, name, None)
            if new is not None and old is not None and new is not old and _is_keras_2_optimizer(old):
                _set(optimizers, name, old)
                replaced = True
        if not replaced:
            continue
        for name in ("get", "deserialize"):
            real = getattr(optimizers, name, None)
            if real is None or id(real) in wrappers:
                continue  # absent, or this module already hands out the wrapper
            wrapper = wrapped.get(id(real))
            if wrapper is None:
                if not _takes_use_legacy_optimizer(real):
                    continue
                wrapper = wrapped[id(real)] = _legacy_by_default(real)
                wrappers.add(id(wrapper))
                home = sys.modules.get(getattr(real, "__module__", "") or "")
                if name == "get" and home is not None and getattr(home, name, None) is real:
                    # Model.compile(optimizer='adam') asks Keras's own module
                    _set(home, name, wrapper)
            _set(optimizers, name, wrapper)


class _LossScaleArguments(object):
    """TF 2.1's ``loss_scale`` argument as the keywords of the non-experimental
    ``LossScaleOptimizer`` (the conversion TF 2.4.1's experimental class makes)."""

    def __init__(self, tf_api):
        self.tf_api = tf_api
        v1 = getattr(getattr(getattr(tf, "compat", None), "v1", None), "mixed_precision", None)
        self.fixed = getattr(v1, "FixedLossScale", None)
        self.dynamic = getattr(v1, "DynamicLossScale", None)
        self.any = getattr(v1, "LossScale", None)

    def __call__(self, loss_scale):
        if isinstance(loss_scale, (int, float)) and not isinstance(loss_scale, bool):
            return {"dynamic": False, "initial_scale": loss_scale}
        if self.fixed is not None and isinstance(loss_scale, self.fixed):
            return {"dynamic": False, "initial_scale": loss_scale.get_config()["loss_scale_value"]}
        if isinstance(loss_scale, str) and loss_scale == "dynamic":
            return {}
        if self.dynamic is not None and isinstance(loss_scale, self.dynamic):
            if loss_scale.multiplier != 2:
                raise ValueError('When passing a DynamicLossScale to "loss_scale", '
                                 "DynamicLossScale.multiplier must be 2. Got: {}".format(loss_scale))
            return {"initial_scale": loss_scale.initial_loss_scale,
                    "dynamic_growth_steps": loss_scale.increment_period}
        if self.any is not None and isinstance(loss_scale, self.any):
            raise TypeError("Passing a LossScale that is not a FixedLossScale or a DynamicLossScale "
                            "is no longer supported. Got: {}".format(loss_scale))
        if api_version(self.tf_api) < (2, 4):  # TF 2.1.0, 2.2.3 and 2.3.4 say this
            raise ValueError("Could not interpret loss scale identifier: {}".format(loss_scale))
        raise ValueError('Invalid value passed to loss_scale. loss_scale must be the string "dynamic" '
                         "(recommended), an int, a float, a FixedLossScale, or a DynamicLossScale. "
                         "Got value: {}".format(loss_scale))


def _keras_2_loss_scale_optimizer(mp, optimizers):
    """The non-experimental ``LossScaleOptimizer`` class of Keras 2 (``OptimizerV2``)
    optimizers, ``LossScaleOptimizer(inner_optimizer, dynamic=True, initial_scale=None,
    dynamic_growth_steps=None)``: in tf-keras >= 2.11 the public name dispatches on the
    optimizer's kind, and this is its subclass for the Keras 2 kind.  None if there is
    no such class (Keras 3)."""
    cls = getattr(mp, "LossScaleOptimizer", None)
    legacy: Any = getattr(getattr(optimizers, "legacy", None), "Optimizer", None)
    if not isinstance(cls, type) or not _is_keras_2_optimizer(legacy):
        return None
    for candidate in [cls] + cls.__subclasses__():
        if issubclass(candidate, legacy):
            try:
                init = next(k.__dict__["__init__"] for k in candidate.__mro__ if "__init__" in k.__dict__)
                takes = "dynamic" in inspect.signature(init).parameters
            except (TypeError, ValueError):
                takes = False
            return candidate if takes else None
    return None


def _loss_scale_optimizer_v1(lso, tf_api):
    """``tf.keras.mixed_precision.experimental.LossScaleOptimizer(optimizer, loss_scale)``
    of TF 2.1/2.4, a subclass of ``lso``, the non-experimental class of a newer Keras."""
    arguments = _LossScaleArguments(tf_api)

    def __init__(self, optimizer, loss_scale):
        lso.__init__(self, optimizer, **arguments(loss_scale))

    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if "inner_optimizer" in config:  # get_config's (the non-experimental class's) form
            initial = config.pop("initial_scale", None)
            growth = config.pop("dynamic_growth_steps", None)
            if config.pop("dynamic", True):
                settings = {k: v for k, v in (("initial_loss_scale", initial), ("increment_period", growth))
                            if v is not None}
                config["loss_scale"] = arguments.dynamic(**settings) if arguments.dynamic else "dynamic"
            else:
                config["loss_scale"] = initial
            config["optimizer"] = config.pop("inner_optimizer")
        optimizer = config["optimizer"]
        if isinstance(optimizer, dict):
            optimizer = tf.keras.optimizers.deserialize(optimizer, custom_objects=custom_objects)
        return cls(optimizer, config["loss_scale"])

    def __call__(cls, *args, **kwargs):
        # tf-keras's metaclass takes the optimizer positionally only; TF 2.1's class
        # took `optimizer=` too
        return type.__call__(cls, *args, **kwargs)

    meta: Any = type(lso)
    constructed: Any = type(meta)(meta.__name__, (meta,), {"__call__": __call__, "__module__": __name__})
    name = "LossScaleOptimizer" if api_version(tf_api) < (2, 4) else "LossScaleOptimizerV1"  # TF 2.4.1 renamed it
    __init__.__qualname__ = name + ".__init__"
    from_config.__qualname__ = name + ".from_config"
    return constructed(name, (lso,), {
        "__init__": __init__, "from_config": classmethod(from_config),
        "__module__": "tensorflow.keras.mixed_precision.experimental",
        "__doc__": "TF {}'s ``LossScaleOptimizer(optimizer, loss_scale)``: ``loss_scale`` is "
                   "'dynamic', a number, or a FixedLossScale/DynamicLossScale.".format(tf_api)})


def _initializers_of_the_release():
    """Unseeded Keras initializers draw from TensorFlow's seeds, as in TF 2.1/2.4.

    TF 2.1 and 2.4 initialize an unseeded ``GlorotUniform`` & co. with TensorFlow's
    stateful random ops, whose seeds follow ``tf.random.set_seed``; a newer Keras
    (tf-keras on TF 2.21: checked) uses stateless ops seeded from Python's ``random``
    module, so the same program's weights differ from run to run whatever
    ``tf.random.set_seed`` says.  Keras' own
    ``legacy_stateful`` kind is TF 2.4's way: unseeded initializers get it."""
    try:
        generator = getattr(tf.keras.initializers.GlorotUniform(), "_random_generator", None)
    except Exception:  # a Keras without it
        return
    klass = type(generator)
    stateless = getattr(klass, "RNG_STATELESS", None)
    legacy = getattr(klass, "RNG_LEGACY_STATEFUL", None)
    if stateless is None or legacy is None or getattr(generator, "_rng_type", None) != stateless:
        return  # TF <= 2.10's initializers: already TensorFlow's seeds
    real = klass.__dict__["__init__"]

    @functools.wraps(real)
    def __init__(self, seed=None, rng_type=None, **kwargs):
        if seed is None and rng_type == stateless:
            rng_type = legacy
        real(self, seed, rng_type, **kwargs)

    _set(klass, "__init__", __init__)


def _get_layer_policy(layer):
    """``tf.keras.mixed_precision.experimental.get_layer_policy`` of TF 2.2 to 2.4."""
    if not isinstance(layer, tf.keras.layers.Layer):
        raise ValueError("get_policy can only be called on a layer, but got: {}".format(layer))
    return layer.dtype_policy


def _loss_scales():
    """TensorFlow's module of LossScale classes (``get`` takes ``'dynamic'``, a number or a
    LossScale), or None where this TensorFlow has none."""
    try:
        module = importlib.import_module("tensorflow.python.training.experimental.loss_scale")
    except ImportError:
        return None
    return module if hasattr(module, "get") else None


def _policy_v1(stable, loss_scales, tf_api):
    """``tf.keras.mixed_precision.experimental.Policy(name, loss_scale='auto')`` of TF 2.1 to
    2.4: the stable policy with a ``loss_scale`` (``'auto'`` is dynamic for
    ``mixed_float16``, else None), shown as the release showed it (read on 2.1.0 to 2.4.1:
    ``<Policy "mixed_float16", loss_scale=DynamicLossScale(...)>``, ``PolicyV1`` on 2.4)."""
    shown = "PolicyV1" if api_version(tf_api) >= (2, 4) else "Policy"

    def __init__(self, name, loss_scale="auto"):
        stable.__init__(self, name)
        self._using_default_loss_scale = loss_scale == "auto"
        if self._using_default_loss_scale:
            loss_scale = "dynamic" if name == "mixed_float16" else None
        self._loss_scale = loss_scales.get(loss_scale)

    def __repr__(self):
        return '<{} "{}", loss_scale={}>'.format(shown, self.name, self._loss_scale)

    def get_config(self):
        config = {"name": self.name}
        if not self._using_default_loss_scale:
            scale = self._loss_scale
            config["loss_scale"] = None if scale is None else {"class_name": type(scale).__name__, "config": scale.get_config()}
        return config

    def from_config(cls, config):
        config = dict(config)
        scale = config.get("loss_scale")
        if isinstance(scale, dict):
            config["loss_scale"] = getattr(loss_scales, scale["class_name"])(**scale["config"])
        return cls(**config)

    return type(shown, (stable,), {
        "__init__": __init__, "__repr__": __repr__, "get_config": get_config, "from_config": classmethod(from_config),
        "loss_scale": property(lambda self: self._loss_scale, doc="The policy's LossScale, or None."),
        "__module__": "tensorflow.keras.mixed_precision.experimental",
        "__doc__": "TF {}'s ``Policy(name, loss_scale='auto')``.".format(tf_api)})


def _mixed_precision_of_the_release(tf_api):
    optimizers = None
    for found in _keras_namespaces("optimizers"):
        optimizers = found
        break
    made: Dict[str, Any] = {}  # one experimental namespace for every copy of the module
    for mp in _keras_namespaces("mixed_precision"):
        if _has(mp, "experimental") or not _has(mp, "set_global_policy"):
            continue  # the release's own (TF <= 2.8), or a Keras without it
        if "ns" not in made:
            ns: Any = types.ModuleType("tf.keras.mixed_precision.experimental")  # Any: names set below
            ns.set_policy = mp.set_global_policy
            ns.global_policy = mp.global_policy
            loss_scales = _loss_scales()
            ns.Policy = mp.Policy if loss_scales is None else _policy_v1(mp.Policy, loss_scales, tf_api)
            lso = _keras_2_loss_scale_optimizer(mp, optimizers)
            if lso is not None:
                ns.LossScaleOptimizer = _loss_scale_optimizer_v1(lso, tf_api)
            elif hasattr(mp, "LossScaleOptimizer"):
                ns.LossScaleOptimizer = mp.LossScaleOptimizer
            if api_version(tf_api) >= (2, 2):  # TF 2.2.3 has it, 2.1.0 not
                ns.get_layer_policy = _get_layer_policy
            made["ns"] = ns
        try:
            _set(mp, "experimental", made["ns"])
        except (AttributeError, TypeError):
            continue
        name = getattr(mp, "__name__", None)
        if name and sys.modules.get(name) is mp:  # `import tensorflow.keras.mixed_precision.experimental`
            _set(sys.modules, name + ".experimental", made["ns"])
    # tf.mixed_precision.experimental: the LossScale classes TF 2.1 and 2.4 had there
    v1 = getattr(getattr(getattr(tf, "compat", None), "v1", None), "mixed_precision", None)
    if v1 is None or not hasattr(v1, "DynamicLossScale"):
        return
    compat = getattr(tf, "compat", None)
    for root in (tf, getattr(compat, "v2", None)):
        if root is None or _has(root, "mixed_precision"):
            continue
        top: Any = types.ModuleType("tf.mixed_precision")  # Any: names set below
        top.experimental = types.ModuleType("tf.mixed_precision.experimental")
        for name in ("DynamicLossScale", "FixedLossScale", "LossScale"):
            setattr(top.experimental, name, getattr(v1, name))
        _set(root, "mixed_precision", top)


def install(tf_api):
    """Show the user's code TF ``tf_api``'s release (see the module's docstring) where
    this TensorFlow is newer.  Idempotent; nothing on the release itself."""
    if _INSTALLED:
        return
    if tf_api not in RELEASES:
        raise ValueError("tf_api must be one of {}; got {!r}".format(sorted(RELEASES), tf_api))
    _INSTALLED.append(tf_api)
    release = RELEASES[tf_api]
    if tf.__version__ != release["version"]:
        _version_seen_by_user_code(release)
    if tf_version() > (2, 4):
        try:
            _optimizers_of_the_release()
            _initializers_of_the_release()
            _mixed_precision_of_the_release(tf_api)
        except ImportError:  # a Keras that cannot be imported: nothing of it to show
            pass


def native_release():
    """The release ``--tf-api native`` gives a program: the interpreter's own, nothing restored and
    nothing hidden (``'2.21'`` on TF 2.21); on TF 2.0 to 2.4 that release's surface, which is the
    interpreter itself there (``'2.1'`` on TF 2.0 and 2.1)."""
    version = tf_version()
    return default_tf_api() if version <= (2, 4) else "{}.{}".format(*version)


def installed():
    """The surface installed (``'2.1'`` ... ``'2.4'``), or None."""
    return _INSTALLED[0] if _INSTALLED else None


def uninstall():
    """Put back what :func:`install` changed."""
    patches.undo("releases")
    del _INSTALLED[:]

