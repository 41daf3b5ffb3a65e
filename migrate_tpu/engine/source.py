"""Bytes in, text out, and back: PEP 263 encodings, BOMs, newline styles, atomic writes.

Newlines are never translated: the text keeps the file's ``\\n`` or ``\\r\\n``
exactly, so unchanged lines stay byte-identical.
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path


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
        raise SourceError(f"bad encoding declaration: {error.msg if hasattr(error, 'msg') else error}", line=getattr(error, "lineno", 0) or 1)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        hint = "" if encoding.startswith("utf-8") else f" (declared {encoding})"
        raise SourceError(f"cannot decode byte 0x{data[error.start]:02x} as {encoding}{hint}; add a PEP 263 coding line", line=line)
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r} in the coding line", line=1)
    if encoding == "utf-8-sig" and text.startswith("\ufeff"):
        text = text[1:]
    return Decoded(text, encoding)


def read_bytes(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}")


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` all at once: temp file beside it, fsync, rename.

    The file's permission bits are kept. On any failure the temp file is
    removed and the original is left as it was.
    """
    target = Path(os.path.realpath(path))
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError as error:
        raise SourceError(f"cannot write: {error.strerror or error}")
    if not os.access(target, os.W_OK):
        raise SourceError("cannot write: permission denied")
    descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".migrate-tpu.tmp", dir=str(target.parent))
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
            raise SourceError(f"cannot write: {error.strerror or error}")
        raise
