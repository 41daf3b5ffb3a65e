"""Where a call comes from: whose code a file is (the runtime's, TensorFlow's, Python's,
AutoGraph's converted copy of a function, anybody else's), the user's line behind a line of
AutoGraph's copy, and who owns a file (the program's tree, another folder on ``sys.path``, an
installed distribution, by its name and version).  The record of moved APIs
(:mod:`~migrate_tpu.runtime.surfaces.moved_calls`) names each caller with these.

Python 3.7 syntax; no TensorFlow.
"""

from __future__ import absolute_import, division, print_function

import functools
import io
import os
import sys
import sysconfig
from typing import Any, Dict, List

from migrate_tpu.runtime import RUNTIME_FOLDER
from migrate_tpu.runtime.program import user_code

# TensorFlow's own packages: what they call is TensorFlow's business, never the user's.
TENSORFLOW_PACKAGES = ("tensorflow", "tensorflow_core", "keras", "tf_keras", "tensorflow_estimator")
_RUNTIME_FOLDER = RUNTIME_FOLDER + os.sep

RUNTIME, TENSORFLOW, AUTOGRAPH, PYTHON, GENERATED, OTHER = "runtime", "tensorflow", "autograph", "python", "generated", "other"
_FILE_KINDS: Dict[str, str] = {}
_FOLDERS: List[Any] = []  # (TensorFlow's package folders, Python's own, the installed packages'), once asked


def _folders():
    if not _FOLDERS:
        import importlib.util
        tensorflow = []
        for name in TENSORFLOW_PACKAGES:
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            for location in (spec.submodule_search_locations or []) if spec is not None else []:
                tensorflow.append(os.path.abspath(location) + os.sep)
        paths = sysconfig.get_paths()
        python = [os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if paths.get(k)]
        installed = [os.path.abspath(paths[k]) + os.sep for k in ("purelib", "platlib") if paths.get(k)]
        _FOLDERS.extend([tuple(tensorflow), tuple(python), tuple(installed)])
    return _FOLDERS


def file_kind(filename):
    """Who wrote the code of ``filename``: the runtime, TensorFlow (its AutoGraph apart), Python,
    AutoGraph's generated copy of a function, or anybody else (the user, a package)."""
    kind = _FILE_KINDS.get(filename)
    if kind is None:
        kind = _FILE_KINDS[filename] = _file_kind(filename)
    return kind


def _file_kind(filename):
    if not filename or filename.startswith("<"):
        return PYTHON  # frozen importlib, exec'd strings: no file to point at
    if ".ipynb:cell" in filename:
        return OTHER  # a notebook's cell, as the runner names it
    path = os.path.abspath(filename)
    if path.startswith(_RUNTIME_FOLDER):
        return RUNTIME
    if user_code._is_generated(filename):
        return GENERATED
    tensorflow, python, installed = _folders()
    if path.startswith(tensorflow):
        return AUTOGRAPH if os.sep + "autograph" + os.sep in path else TENSORFLOW
    if path.startswith(python) and not path.startswith(installed):
        return PYTHON
    return OTHER


def place_of(frame, kind):
    if kind == GENERATED:
        origin = generated_origin(frame)
        if origin is None or file_kind(origin[0]) not in (OTHER,):
            return None
        return origin
    if kind != OTHER:
        return None
    return frame.f_code.co_filename, frame.f_lineno


def generated_origin(frame):
    """The user's ``(file, line)`` of a line of AutoGraph's converted code: the source map of the
    converted function is found from the frame's code, or from a frame of the same file out of
    it (a nested function's code carries none)."""
    filename, line = frame.f_code.co_filename, frame.f_lineno
    while frame is not None and frame.f_code.co_filename == filename:
        origin = user_code._source_lines_of(frame.f_code).get(line)
        if origin is not None:
            return origin
        frame = frame.f_back
    return None




def owner(filename, tree):
    """Who owns ``filename``: ``{"kind": "tree"}`` (under ``tree``, the program's folder),
    ``{"kind": "distribution", "name", "version", "folder", "site_packages"}`` (an installed
    distribution's file; ``site_packages``: in the interpreter's own folders of them, which
    ``check --installed`` reads), or ``{"kind": "folder", "folder"}`` (the ``sys.path`` folder it
    was imported from)."""
    path = os.path.abspath(filename.split(".ipynb:cell")[0] + ".ipynb" if ".ipynb:cell" in filename else filename)
    if tree and path.startswith(tree):
        return {"kind": "tree", "folder": tree.rstrip(os.sep)}
    entries = sorted((os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)), key=len, reverse=True)
    entry = next((p for p in entries if path.startswith(p + os.sep)), None)
    if entry is not None:
        found = _distribution(entry, os.path.relpath(path, entry))
        if found is not None:
            return {"kind": "distribution", "name": found[0], "version": found[1], "folder": entry,
                    "site_packages": entry + os.sep in _folders()[2]}
    return {"kind": "folder", "folder": entry or os.path.dirname(path)}


_DISTRIBUTIONS: Dict[str, List[Any]] = {}  # folder -> [(name, version, top-level names, a function giving its files)]


def _distribution(folder, relative):
    """(name, version) of the distribution installed in ``folder`` that holds ``relative``: the
    one whose top_level.txt names its top package, and where several do (a namespace package
    such as ``google``) or none says, the one whose RECORD lists the file; else None."""
    relative = relative.replace(os.sep, "/")
    top = relative.split("/")[0]
    top = top[:-3] if top.endswith(".py") else top
    known = _DISTRIBUTIONS.get(folder)
    if known is None:
        known = _DISTRIBUTIONS[folder] = list(_read_distributions(folder))
    claiming = [d for d in known if top in d[2]]
    if len(claiming) == 1:
        return claiming[0][:2]
    for name, version, _tops, files in claiming or [d for d in known if not d[2]]:
        if relative in files():
            return name, version
    return None


def _read_distributions(folder):
    metadata: Any = None
    try:
        from importlib import metadata  # Python >= 3.8
    except ImportError:
        pass
    if metadata is not None:
        for dist in metadata.distributions(path=[folder]):
            tops = frozenset((dist.read_text("top_level.txt") or "").split())
            files = functools.partial(lambda d: frozenset(str(f).replace(os.sep, "/") for f in (d.files or ())), dist)
            yield dist.metadata["Name"], dist.version, tops, files
        return
    for entry in sorted(os.listdir(folder)):  # Python 3.7: the .dist-info folders themselves
        if not entry.endswith(".dist-info"):
            continue
        fields = dict(line.split(": ", 1) for line in _text(folder, entry, "METADATA").splitlines()[:20] if ": " in line)
        files = functools.partial(lambda e: frozenset(line.split(",")[0] for line in _text(folder, e, "RECORD").splitlines() if line),
                                  entry)
        if "Name" in fields:
            yield fields["Name"], fields.get("Version", ""), frozenset(_text(folder, entry, "top_level.txt").split()), files


def _text(folder, entry, name):
    try:
        with io.open(os.path.join(folder, entry, name), encoding="utf-8") as handle:
            return handle.read()
    except (IOError, OSError, UnicodeDecodeError):
        return ""
