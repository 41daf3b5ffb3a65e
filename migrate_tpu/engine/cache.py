"""A content-hash cache of per-file results, for warm re-runs (pre-commit, CI).

An entry is keyed by the file's bytes, its path (diff headers and imports of
sibling modules depend on it), the run's mode and a *salt* that the migrator
provides (tool version, settings, rule tables). Entries are small pickles in
``.migrate-tpu-cache/`` (or ``--cache-dir``), written atomically; a damaged
or unreadable entry is a miss, never an error.

A result may also depend on *other* files (a module this file imports a strategy
factory or a base class from, the classes of its tree): the migrator names them,
the result keeps each one's size and modification time (:func:`fingerprints`),
and a cached result is reused only while they are unchanged (:func:`unchanged`).
A file added to the tree since is not seen: ``--no-cache`` covers that case.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path
from typing import Dict, Iterable, Optional, Tuple

CACHE_DIRECTORY = ".migrate-tpu-cache"
# 4: results name the other files they depend on; 3: findings are the engine's FileFinding
# records; 2: parsed no longer counts failed parses
_FORMAT = b"4"

Fingerprint = Tuple[str, int, int]  # (path, size, st_mtime_ns); size -1: the file was missing


def fingerprints(paths: Iterable[str], seen: Optional[Dict[str, Fingerprint]] = None) -> Tuple[Fingerprint, ...]:
    """Each file as it is now, to tell later whether it changed. ``seen``: the fingerprints
    this process took earlier in the run, by path, kept as they were: a file is read once
    in a run (what was learnt from it is kept), so a later result depends on it as it was
    then, and is not stat'ed again for each file that consults it."""
    if seen is None:
        return tuple(_fingerprint(path) for path in sorted(set(paths)))
    found = []
    for path in sorted(set(paths)):
        if path not in seen:
            seen[path] = _fingerprint(path)
        found.append(seen[path])
    return tuple(found)


def unchanged(depends_on: Iterable[Fingerprint]) -> bool:
    """Whether every file a result depends on is as it was when the result was made."""
    return all(_fingerprint(path) == (path, size, mtime) for path, size, mtime in depends_on)


def _fingerprint(path: str) -> Fingerprint:
    try:
        status = os.stat(path)
    except OSError:
        return (path, -1, 0)
    return (path, status.st_size, status.st_mtime_ns)


class ResultCache:
    def __init__(self, directory: Path, salt: str) -> None:
        # (Imported here: a run without the cache, as every cold ``--no-cache`` one, never
        # needs hashlib, whose import costs a run about 5 ms.)
        import hashlib

        self._sha256 = hashlib.sha256
        self.directory = Path(directory)
        self._salt = self._sha256(_FORMAT + salt.encode("utf-8")).digest()
        self._ready = False

    def key(self, display: str, mode: str, data: bytes) -> str:
        digest = self._sha256(self._salt)
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
