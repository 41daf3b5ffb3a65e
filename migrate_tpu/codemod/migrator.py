"""The codemod as the engine sees it: a prefilter and a ``migrate(text, path)``.

Instances are sent to worker processes, so they hold only plain settings;
LibCST and the rules are imported in the process that first needs them.
"""

from __future__ import annotations

import sys
from typing import Tuple

from migrate_tpu.engine.pipeline import FileError

_RECURSION_LIMIT = 6000


class TPUMigrator:
    def __init__(self, options=None, roots: Tuple[str, ...] = ()) -> None:
        from migrate_tpu.codemod.options import Options

        self.options = options or Options()
        self.roots = roots
        self._lookup = None
        self._prefilter = None

    def __getstate__(self):
        return {"options": self.options, "roots": self.roots}

    def __setstate__(self, state) -> None:
        self.__init__(state["options"], state["roots"])

    def cache_salt(self) -> str:
        """What a cached result depends on besides the file: version, settings, rules."""
        from pathlib import Path

        from migrate_tpu import __version__
        from migrate_tpu.codemod.locations import rules_directory

        package = Path(__file__).resolve().parent
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
            from migrate_tpu.codemod.prefilter import prefilter_for

            self._prefilter = prefilter_for(self.options.select, self.options.ignore, self.options.target)
        return self._prefilter(data)

    def _project(self):
        if self._lookup is None:
            from migrate_tpu.codemod.project import ProjectLookup
            from migrate_tpu.engine.discover import resolve_module
            from migrate_tpu.engine.source import decode, read_bytes

            def read_text(path: str) -> str:
                return decode(read_bytes(path)).text

            self._lookup = ProjectLookup(lambda module, path: resolve_module(module, path, self.roots), read_text)
        return self._lookup

    def migrate(self, text: str, path: str = "<stdin>", line_offset: int = 0):
        import libcst as cst

        from migrate_tpu.codemod.api import OutputDoesNotParse, migrate

        lookup = self._project() if path and not path.startswith("<") else None
        if sys.getrecursionlimit() < _RECURSION_LIMIT:
            # Long implicit string concatenations nest deeply in the tree.
            sys.setrecursionlimit(_RECURSION_LIMIT)
        try:
            return migrate(text, self.options, lookup=lookup, path=path)
        except cst.ParserSyntaxError as error:
            raise _syntax_error(text, error)
        except OutputDoesNotParse as error:
            raise FileError(f"internal error: {error}; please report it")
        except RecursionError:
            raise FileError("too deeply nested to analyse")
        except Exception as error:  # a rule bug must cost one file, never the run
            raise FileError(f"internal error ({type(error).__name__}: {error}); file left unchanged, please report it")


def _syntax_error(text: str, error) -> FileError:
    """CPython's own message where it has one: it names the line and the cause best."""
    try:
        compile(text, "<source>", "exec", dont_inherit=True, flags=0x400)  # ast.PyCF_ONLY_AST
    except SyntaxError as python_error:
        column = f", column {python_error.offset}" if python_error.offset else ""
        return FileError(f"cannot parse: {python_error.msg}{column}", line=python_error.lineno or 0)
    except (ValueError, MemoryError, RecursionError):
        pass
    message = str(error.message).splitlines()[0] if error.message else "syntax error"
    return FileError(f"cannot parse: {message}", line=error.raw_line)
