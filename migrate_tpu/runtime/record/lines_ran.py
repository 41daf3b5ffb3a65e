"""Which of the migration's lines a recorded run ran: verify watches the lines each change of the
migration touched (``MIGRATE_TPU_WATCH_LINES``) and reports a change none of whose lines ran as
not exercised.  Read by :mod:`~migrate_tpu.runtime.record.recorder`, into its ``lines_ran``.

Python 3.7 syntax (the recorder runs inside the TF 2.1 interpreter too); no TensorFlow.
"""

from __future__ import absolute_import, division, print_function

import sys
import threading
from typing import Set


def watch_lines(recorder, watched):
    """Note in ``recorder.lines_ran`` which of the ``watched`` lines run (``{file: lines}``).

    A trace function sees only frames of the watched files (one dict lookup a call for the
    others), and lets go of a file once all its lines were seen."""
    remaining = recorder.watching
    remaining.update((name, set(lines)) for name, lines in watched.items() if lines)

    def local(frame, event, arg):
        if event == "line":
            name = frame.f_code.co_filename
            lines = remaining.get(name)
            if lines is not None and frame.f_lineno in lines:
                lines.discard(frame.f_lineno)
                recorder.lines_ran.setdefault(name, set()).add(frame.f_lineno)
                if not lines:
                    del remaining[name]
                    return None
        return local

    def on_call(frame, event, arg):
        if frame.f_code.co_filename in remaining:
            return local
        return None

    if remaining:
        threading.settrace(on_call)
        sys.settrace(on_call)


def note_function_lines(recorder, code):
    """A tf.function's lines (its nested functions' too) count as run once it is called:
    AutoGraph runs a converted copy of them from a generated file, which no trace of the
    user's file sees."""
    if code in recorder.codes_seen or code.co_filename not in recorder.watching:
        return
    recorder.codes_seen.add(code)
    import dis
    lines: Set[int] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        lines.update(line for _, line in dis.findlinestarts(current) if line)
        stack.extend(c for c in current.co_consts if hasattr(c, "co_code"))
    remaining = recorder.watching[code.co_filename]
    found = remaining & lines
    if found:
        recorder.lines_ran.setdefault(code.co_filename, set()).update(found)
        remaining -= found
