"""Which code is the user's: a frame's file is TensorFlow's, the standard library's, this
package's or the user's, and a line of AutoGraph's converted copy of the user's function is
mapped back to the user's file and line.  The recorder names every recorded value's place
with these.

Python 3.7 syntax (the recorder runs inside the TF 2.1 interpreter too); no TensorFlow.
"""

from __future__ import absolute_import, division, print_function

import gc
import os
import sys
import sysconfig
from types import CodeType, FrameType
from typing import Any, Dict, Optional, Tuple

from migrate_tpu.runtime import RUNTIME_FOLDER

_PACKAGE_FOLDER = os.path.dirname(RUNTIME_FOLDER)
_LIBRARY_FOLDERS = tuple(sorted(set(
    os.path.abspath(p) + os.sep for p in (sysconfig.get_paths().get("stdlib"),
                                            sysconfig.get_paths().get("purelib"),
                                            sysconfig.get_paths().get("platlib")) if p)))



_LIBRARY_FILE: Dict[str, bool] = {}  # filename -> is_library_file(filename): asked on every call recorded


def is_library_file(filename):
    """Whether code in ``filename`` is TensorFlow's, the standard library's or this
    package's, never the user's (whose frames name a step's source line)."""
    known = _LIBRARY_FILE.get(filename)
    if known is None:
        known = _LIBRARY_FILE[filename] = _is_library_file(filename)
    return known


def _is_library_file(filename):
    if not filename or filename.startswith("<"):
        return True
    path = os.path.abspath(filename)
    if path.startswith(_PACKAGE_FOLDER + os.sep):
        return True
    if "site-packages" in path or "dist-packages" in path or "__autograph_generated" in path:
        return True
    return path.startswith(_LIBRARY_FOLDERS)


def user_frame(start=None):
    """``file:line`` of the innermost frame of the user's code calling us."""
    frame = start or sys._getframe(1)
    while frame is not None:
        if not is_library_file(frame.f_code.co_filename):
            return "{}:{}".format(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return None


def called_from_user_code(depth=2):
    """Whether the direct caller (past the emulation's and recorder's frames) is the user's."""
    frame: Optional[FrameType] = sys._getframe(depth)
    while frame is not None and in_package(frame.f_code.co_filename):
        frame = frame.f_back
    return frame is not None and not is_library_file(frame.f_code.co_filename)


_IN_PACKAGE: Dict[str, bool] = {}


def in_package(filename):
    known = _IN_PACKAGE.get(filename)
    if known is None:
        known = _IN_PACKAGE[filename] = os.path.abspath(filename).startswith(_PACKAGE_FOLDER + os.sep)
    return known


_GENERATED_SOURCES: Dict[Any, Dict[int, Tuple[str, int]]] = {}  # (file, AutoGraph's code) -> its lines' origins


def _is_generated(filename):
    """Whether ``filename`` holds code AutoGraph generated from the user's (TF >= 2.5 names
    it ``__autograph_generated_file...``; TF 2.1-2.4 a ``tmp....py`` in the temporary folder)."""
    name = os.path.basename(filename)
    return "__autograph_generated" in name or (name.startswith("tmp") and name.endswith(".py")
                                              and os.path.dirname(filename) == _temporary_folder())


def _temporary_folder():
    import tempfile
    return tempfile.gettempdir()


def _source_lines_of(code: CodeType) -> Dict[int, Tuple[str, int]]:
    """The user's ``(file, line)`` for each line of AutoGraph's converted ``code``, from the
    source map on the converted function (found once per code object).  Keyed with the file:
    equal code objects compare equal whatever their file (``co_filename`` is not compared), and
    two user functions alike in two files are converted into alike code."""
    key = (code.co_filename, code)
    known = _GENERATED_SOURCES.get(key)
    if known is None:
        known = {}
        for referrer in gc.get_referrers(code):
            source_map = getattr(referrer, "ag_source_map", None)
            if getattr(referrer, "__code__", None) is code and source_map:
                for location, origin in source_map.items():
                    if getattr(location, "filename", None) == code.co_filename:
                        known[location.lineno] = (origin.loc.filename, origin.loc.lineno)
                break
        _GENERATED_SOURCES[key] = known
    return known


def traced_user_line():
    """``file:line`` of the user's code that makes the call being traced (AutoGraph's
    converted copy mapped back to the user's file), or ``None`` when TensorFlow's or a
    library's own code makes it (Keras' reduce of its logs)."""
    frame: Optional[FrameType] = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if in_package(filename) or os.sep + "autograph" + os.sep in filename:
            frame = frame.f_back
            continue
        if _is_generated(filename):
            origin = _source_lines_of(frame.f_code).get(frame.f_lineno)
            if origin is None or is_library_file(origin[0]):
                return None
            return "{}:{}".format(*origin)
        return None if is_library_file(filename) else "{}:{}".format(filename, frame.f_lineno)
    return None


def user_line_of_stack(frames):
    """``file:line`` of the innermost user frame of an op's creation stack (``(filename, lineno)``
    pairs, outermost first, as ``Operation.traceback`` gives them), a line of AutoGraph's
    converted copy mapped back to the user's file; None when no frame is the user's."""
    for filename, lineno in reversed(list(frames)):
        if _is_generated(filename):
            origin = _generated_line(filename, lineno)
            if origin is not None and not is_library_file(origin[0]):
                return "{}:{}".format(*origin)
            continue
        if not is_library_file(filename):
            return "{}:{}".format(filename, lineno)
    return None


def _generated_line(filename, lineno):
    """The user's ``(file, line)`` of line ``lineno`` of AutoGraph's generated ``filename``, from
    the source map of a converted function defined there (found by a scan: only on an error)."""
    import types
    for candidate in gc.get_objects():
        if not isinstance(candidate, types.FunctionType):
            continue
        source_map = getattr(candidate, "ag_source_map", None)
        if not isinstance(source_map, dict):
            continue
        for location, origin in source_map.items():
            if getattr(location, "filename", None) == filename and getattr(location, "lineno", None) == lineno:
                loc = getattr(origin, "loc", None)
                if loc is not None:
                    return loc.filename, loc.lineno
    return None
