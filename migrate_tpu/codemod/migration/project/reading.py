"""Reading the tree's files for the project lookup, and which files each answer read (the
engine's cache checks them before reusing a file's result): the base of ``ProjectLookup``.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

from migrate_tpu.codemod.foundation.outline import Outline, outline_of
from migrate_tpu.codemod.foundation.spelling import holds_word


# (dotted module name, path of the importing file) -> path of the module's file.
ModuleResolver = Callable[[str, str], Optional[str]]
# path of a file -> the Python files of its tree.
TreeFiles = Callable[[str], Tuple[str, ...]]


class TreeReader:
    """How the lookup finds and reads a module of the tree (``_module_file``, ``_read_text``,
    ``_outline``), and the record of what each answer read (``_computing``, ``_used``,
    ``take_consulted``); ``_made`` keeps an answer for the run."""

    def __init__(self, resolve_module: ModuleResolver, read_text: Callable[[str], str], tree_files: Optional[TreeFiles] = None) -> None:
        self._resolve = resolve_module
        self._read = read_text
        self._tree_files = tree_files
        self._outlines: Dict[str, Optional[Outline]] = {}
        # Which files each answer read (its own and those of the answers it used), so that
        # a file's result can name every other file it depends on: the engine's cache checks
        # them before reusing the result. The innermost record is the answer being computed;
        # the outermost, the migration of one file (``take_consulted``).
        self._recording: List[Set[str]] = [set()]
        self._depends: Dict[object, FrozenSet[str]] = {}

    def take_consulted(self) -> Tuple[str, ...]:
        """The files read to answer the lookups since the last call (for the file just
        migrated), cached answers included; and a fresh record for the next file."""
        consulted = tuple(sorted(self._recording[0]))
        self._recording = [set()]
        return consulted

    def _read_text(self, path: str) -> str:
        for record in self._recording:
            record.add(path)
        return self._read(path)

    def _used(self, key: object) -> None:
        """A cached answer is used: what it read counts as read now."""
        files = self._depends.get(key, frozenset())
        for record in self._recording:
            record.update(files)

    @contextmanager
    def _computing(self, key: object) -> Iterator[None]:
        record: Set[str] = set()
        self._recording.append(record)
        try:
            yield
        finally:
            self._recording.pop()
            self._depends[key] = frozenset(record)
            for outer in self._recording:
                outer.update(record)

    def _made(self, made: Dict[str, Optional[object]], kind: str, path: str, make: Callable[[str], Optional[object]]) -> Optional[object]:
        """``made[path]`` (a table of the module), made once by ``make`` for the run."""
        if path in made:
            self._used((kind, path))
            return made[path]
        made[path] = None  # guards import cycles
        with self._computing((kind, path)):
            result = make(path)
        made[path] = result
        return result

    def _module_file(self, dotted: str, importing_path: str) -> Optional[str]:
        """The tree file of the module defining ``dotted`` (``pkg.mod.Symbol``), if any."""
        if dotted.startswith("tensorflow") or "." not in dotted.strip("."):
            return None
        module_name = dotted.rpartition(".")[0] or "."
        return self._resolve(module_name, importing_path)

    def _names(self, path: str, symbol: str) -> bool:
        """Whether the module's text holds ``symbol`` as a word (a module not read holds nothing)."""
        try:
            text = self._read_text(path)
        except Exception:  # as ``_walked``: a module we cannot read offers nothing
            return False
        return holds_word(text, symbol)

    def _outline(self, path: str) -> Optional[Outline]:
        """The module's outline (``outline.py``), read once for the run; None when it cannot
        be read or parsed."""
        if path in self._outlines:
            for record in self._recording:
                record.add(path)
            return self._outlines[path]
        try:
            found = outline_of(self._read_text(path))
        except Exception:  # as ``_walked``: a module we cannot read offers nothing
            found = None
        self._outlines[path] = found
        return found
