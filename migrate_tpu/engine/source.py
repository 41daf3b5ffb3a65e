"""Bytes in, text out, and back: PEP 263 encodings, BOMs, newline styles, atomic writes.

Newlines are never translated: the text keeps the file's ``\\n`` or ``\\r\\n``
exactly, so unchanged lines stay byte-identical.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple


class SourceError(Exception):
    """A file that cannot be read or decoded; ``line`` is 1-based or 0 when unknown."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str  # "utf-8-sig" when the file starts with a BOM

    def encode(self, text: str) -> bytes:
        return text.encode(self.encoding)


def decode(data: bytes) -> Decoded:
    if b"\x00" in data:
        raise SourceError("binary file (contains NUL bytes), not Python source", line=data[: data.index(b"\x00")].count(b"\n") + 1)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        message = error.msg if hasattr(error, "msg") else str(error)
        if "invalid or missing encoding declaration" in message:
            # No usable coding line and the first lines are not UTF-8.
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as problem:
                raise _undecodable(data, problem, "utf-8")
        raise SourceError(f"bad encoding declaration: {message}", line=getattr(error, "lineno", 0) or 1)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        raise _undecodable(data, error, encoding)
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r} in the coding line", line=1)
    if encoding == "utf-8-sig" and text.startswith("\ufeff"):
        text = text[1:]
    return Decoded(text, encoding)


def _undecodable(data: bytes, error: UnicodeDecodeError, encoding: str) -> SourceError:
    line = data[: error.start].count(b"\n") + 1
    hint = "; add a PEP 263 coding line" if encoding.startswith("utf-8") else " (as the coding line declares)"
    return SourceError(f"cannot decode byte 0x{data[error.start]:02x} as {encoding}{hint}", line=line)


def read_bytes(path: Path) -> bytes:
    return read_snapshot(path)[0]


def read_snapshot(path: Path) -> Tuple[bytes, os.stat_result]:
    """The file's bytes and its status when read, to tell later whether it changed."""
    # O_NONBLOCK: a FIFO named like a source file must not hang the run.
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as error:
        raise SourceError(f"cannot read: {_reason(error)}")
    with os.fdopen(descriptor, "rb") as handle:
        try:
            status = os.fstat(descriptor)
            if stat.S_ISDIR(status.st_mode):
                raise SourceError("is a directory")
            if not stat.S_ISREG(status.st_mode):
                raise SourceError("not a regular file (a device, pipe or socket); left alone")
            return handle.read(), status
        except OSError as error:
            raise SourceError(f"cannot read: {_reason(error)}")


def _reason(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "symbolic link loop"
    return (error.strerror or str(error)).lower()


def _same_file_state(before: os.stat_result, now: os.stat_result) -> bool:
    return (before.st_ino, before.st_dev, before.st_size, before.st_mtime_ns) == (now.st_ino, now.st_dev, now.st_size, now.st_mtime_ns)


def atomic_write(path: Path, data: bytes, expected: Optional[os.stat_result] = None) -> None:
    """Replace ``path`` with ``data`` all at once: temp file beside it, fsync, rename.

    The file's permission bits are kept. A file without any write permission
    bit is refused even where the operating system would allow the write (as
    for root): someone marked it read-only. With ``expected`` (the status
    from :func:`read_snapshot`), a file that changed since it was read is
    left alone. On any failure the temp file is removed and the original is
    left as it was.
    """
    target = Path(os.path.realpath(path))
    try:
        status = os.stat(target)
    except OSError as error:
        raise SourceError(f"cannot write: {_reason(error)}")
    mode = stat.S_IMODE(status.st_mode)
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
        raise SourceError("cannot write: the file is read-only (no write permission); left unchanged")
    if expected is not None and not _same_file_state(expected, status):
        raise SourceError("changed on disk while being migrated; left as it is now (run again)")
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".migrate-tpu.tmp", dir=str(target.parent))
    except OSError as error:
        raise SourceError(f"cannot write a temporary file beside it: {_reason(error)}; left unchanged")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(error, OSError):
            raise SourceError(f"cannot write: {_reason(error)}; left unchanged")
        raise
