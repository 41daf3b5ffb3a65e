"""A content-hash cache of per-file results, for warm re-runs (pre-commit, CI).

An entry is keyed by the file's bytes, its path (diff headers and imports of
sibling modules depend on it), the run's mode and a *salt* that the migrator
provides (tool version, settings, rule tables). Entries are small pickles in
``.migrate-tpu-cache/`` (or ``--cache-dir``), written atomically; a damaged
or unreadable entry is a miss, never an error.

What a cached result cannot know: a change to *another* module that this
file imports a strategy factory from. The rule tables and the tool version are
part of the salt; use ``--no-cache`` after editing such a factory.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Optional

CACHE_DIRECTORY = ".migrate-tpu-cache"
_FORMAT = b"3"  # 3: findings are the engine's FileFinding records; 2: parsed no longer counts failed parses


class ResultCache:
    def __init__(self, directory: Path, salt: str) -> None:
        self.directory = Path(directory)
        self._salt = hashlib.sha256(_FORMAT + salt.encode("utf-8")).digest()
        self._ready = False

    def key(self, display: str, mode: str, data: bytes) -> str:
        digest = hashlib.sha256(self._salt)
        digest.update(mode.encode())
        digest.update(b"\0")
        digest.update(display.encode("utf-8", "surrogateescape"))
        digest.update(b"\0")
        digest.update(data)
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / key[2:]

    def load(self, key: str) -> Optional[object]:
        """The result stored under ``key``, or None; the caller checks that it is the kind it stores."""
        try:
            with open(self._path(key), "rb") as handle:
                result: object = pickle.load(handle)
        except Exception:  # missing, damaged or from another version: a miss
            return None
        return result

    def store(self, key: str, result: object) -> None:
        path = self._path(key)
        try:
            if not self._ready:
                self.directory.mkdir(parents=True, exist_ok=True)
                marker = self.directory / "CACHEDIR.TAG"
                if not marker.exists():
                    marker.write_text("Signature: 8a477f597d28d172789f06886806bc55\n# migrate-tpu result cache\n")
                ignore = self.directory / ".gitignore"
                if not ignore.exists():
                    ignore.write_text("*\n")
                self._ready = True
            path.parent.mkdir(exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(dir=str(path.parent), prefix=".tmp-")
        except OSError:
            return  # a cache that cannot be written only costs speed
        try:
            with os.fdopen(descriptor, "wb") as handle:
                pickle.dump(result, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, path)
        except Exception:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def default_cache(salt: str, directory: Optional[str] = None) -> ResultCache:
    return ResultCache(Path(directory) if directory else Path.cwd() / CACHE_DIRECTORY, salt)
