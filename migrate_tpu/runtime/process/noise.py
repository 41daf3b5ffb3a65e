"""TensorFlow's start-up noise, kept off the user's screen by ``migrate-tpu run`` (standard library only).

A TPU job's log shows the script's output, not lines about CUDA drivers on a
machine without a GPU.  TensorFlow prints some whatever ``TF_CPP_MIN_LOG_LEVEL``
says: TF >= 2.16 logs through absl before absl is set up (``WARNING: All log
messages before absl::InitializeLog() ...``, then ``I0000 ...`` and
``E0000 ... failed call to cuInit``), and ``MirroredStrategy`` on CPU devices
warns on every run that it does not use NCCL.  The launcher drops exactly those
lines from the script's stderr; everything else passes at once and unchanged
(``--verbose`` turns the filter off).
"""

import re

NOISE = re.compile(
    b"|".join([
        # absl's note before its own set-up (TF >= 2.16), printed once per import.
        rb"WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR",
        # C++ INFO and WARNING lines (absl's format, TF >= 2.16; TF's own, earlier): the
        # runner asks for errors only (TF_CPP_MIN_LOG_LEVEL=2), these come before that applies.
        rb"[IW]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [\w.]+:\d+\] .*",
        rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] tensorflow/\S+\] .*",
        # C++ errors about a GPU this machine does not have (TF >= 2.16).
        rb"E\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [\w.]+:\d+\] (failed call to cuInit|Unable to register cu\w+ factory).*",
        # MirroredStrategy over the emulated cores, on every run (TF 2.1-2.4).
        rb"WARNING:tensorflow:There are non-GPU devices in `tf.distribute.Strategy`, not using nccl allreduce\.",
    ])
)
# How a noise line begins, one template character per byte ('L': a log level letter of
# the C++ lines, 'D': a digit). A partial line whose start still fits one of them waits for
# its end; any other passes at once (a prompt, a progress bar redrawn after \r).
_NOISE_STARTS = (b"WARNING", b"LDDDD ", b"DDDD-DD-")


def _fits(partial, template):
    for byte, wanted in zip(partial, template):
        if wanted == ord("L"):
            if byte not in b"IWE":
                return False
        elif wanted == ord("D"):
            if not 48 <= byte <= 57:
                return False
        elif byte != wanted:
            return False
    return True


def _may_become_noise(partial):
    if b"\r" in partial or len(partial) >= 4096:
        return False
    return any(_fits(partial, template) for template in _NOISE_STARTS)


def is_noise(line):
    """Whether ``line`` (bytes, with or without its newline) is start-up noise."""
    return NOISE.fullmatch(line.rstrip(b"\r\n")) is not None


class NoiseFilter(object):
    """Pass bytes to ``write`` with noise lines taken out.

    ``feed`` takes chunks as they come from a pipe; ``close`` hands on what is left.
    """

    def __init__(self, write):
        self._write = write
        self._pending = b""

    def feed(self, chunk):
        data = self._pending + chunk
        self._pending = b""
        out = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            line = data[start:end + 1]
            if not is_noise(line):
                out.append(line)
            start = end + 1
        rest = data[start:]
        if rest and _may_become_noise(rest):
            self._pending = rest
        elif rest:
            out.append(rest)
        if out:
            self._write(b"".join(out))

    def close(self):
        if self._pending and not is_noise(self._pending):
            self._write(self._pending)
        self._pending = b""
