"""The codemod as a whole: a prefilter and a ``migrate(text, path)``.

Instances are sent to worker processes, so they hold only plain settings;
LibCST and the rules are imported in the process that first needs them.
Input it cannot handle (a syntax error) raises :class:`CannotMigrate`; the
composition root (``migrate_tpu/compose.py``) turns that into the engine's
per-file error, and hands in how to find and read other modules of the project
(the codemod itself knows no files). Anything else that goes wrong (a rule's
bug, a tree too deep to walk) is left to the engine, which runs every file in a
worker and maps what escapes into that file's one-line error, in one place.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Optional, Tuple

if TYPE_CHECKING:
    from migrate_tpu.codemod.stages.prefilter import Prefilter
    from migrate_tpu.codemod.migration.project.lookup import ProjectLookup


class CannotMigrate(Exception):
    """Input the codemod cannot handle: a one-line reason, and its 1-based line (0: unknown)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


_RECURSION_LIMIT = 6000


class TPUMigrator:
    def __init__(self, options=None, project=None) -> None:
        """``project``: how to reach the other modules of the project, for
        cross-module facts (a strategy made in another module). An object with
        ``resolve_module(module, importing_path) -> Optional[str]``,
        ``tree_files(importing_path) -> Tuple[str, ...]`` and
        ``read_text(path) -> str``, picklable; None: each file on its own.
        """
        from migrate_tpu.codemod.foundation.options import Options

        self.options = options or Options()
        self.project = project
        self._lookup: Optional[ProjectLookup] = None
        self._prefilter: Optional[Prefilter] = None

    def __getstate__(self):
        return {"options": self.options, "project": self.project}

    def __setstate__(self, state) -> None:
        type(self).__init__(self, state["options"], state["project"])  # (mypy refuses ``self.__init__``: the same call)

    def cache_salt(self) -> str:
        """What a cached result depends on besides the file: version, settings, rules."""
        from pathlib import Path

        from migrate_tpu import __version__
        from migrate_tpu.codemod.foundation.locations import rules_directory

        package = Path(__file__).resolve().parent.parent  # the whole codemod
        fingerprint = []
        for path in sorted(package.rglob("*.py")) + sorted(rules_directory().glob("*.toml")):
            try:
                status = path.stat()
            except OSError:
                continue
            fingerprint.append(f"{path.name}:{status.st_size}:{status.st_mtime_ns}")
        return "|".join([__version__, repr(self.options), *fingerprint])

    def needs_work(self, data: bytes) -> bool:
        """The prefilter built from the evidence the enabled rules declare (``prefilter.py``)."""
        if self._prefilter is None:
            from migrate_tpu.codemod.stages.prefilter import prefilter_for

            self._prefilter = prefilter_for(self.options.select, self.options.ignore, self.options.target)
        return self._prefilter(data)

    def consulted_files(self) -> Tuple[str, ...]:
        """The other files of the tree read for the migrations since the last call (their
        state decides the result too), and a fresh start for the next file."""
        return self._lookup.take_consulted() if self._lookup is not None else ()

    def _project(self):
        if self._lookup is None and self.project is not None:
            from migrate_tpu.codemod.migration.project.lookup import ProjectLookup

            self._lookup = ProjectLookup(self.project.resolve_module, self.project.read_text, self.project.tree_files)
        return self._lookup

    def migrate(self, text: str, path: str = "<stdin>", line_offset: int = 0):
        import libcst as cst

        from migrate_tpu.codemod.migration.api import migrate

        lookup = self._project() if path and not path.startswith("<") else None
        if sys.getrecursionlimit() < _RECURSION_LIMIT:
            # Long implicit string concatenations nest deeply in the tree.
            sys.setrecursionlimit(_RECURSION_LIMIT)
        try:
            return migrate(text, self.options, lookup=lookup, path=path)
        except cst.ParserSyntaxError as error:
            raise _syntax_error(text, error)


def _syntax_error(text: str, error) -> CannotMigrate:
    """CPython's own message where it has one: it names the line and the cause best."""
    try:
        compile(text, "<source>", "exec", dont_inherit=True, flags=0x400)  # ast.PyCF_ONLY_AST
    except SyntaxError as python_error:
        column = f", column {python_error.offset}" if python_error.offset else ""
        return CannotMigrate(f"cannot parse: {python_error.msg}{column}", line=python_error.lineno or 0)
    except (ValueError, MemoryError, RecursionError):
        pass
    message = str(error.message).splitlines()[0] if error.message else "syntax error"
    return CannotMigrate(f"cannot parse: {message}", line=error.raw_line)
