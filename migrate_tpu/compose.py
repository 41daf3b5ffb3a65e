"""The composition root: the one place that knows the engine, the codemod and the settings.

The engine (files, processes, reports) and the codemod (LibCST, rules) do not
import each other; this module wires them for one run:

- settings: the settings file is found and read here, then
  :func:`migrate_tpu.settings.resolve` decides; ``--target auto`` asks the
  engine for the requirement on the packages the codemod names;
- the migrator handed to the engine is :class:`EngineMigrator`: it picks the
  codemod variant for a file's path (per-file ignores) and turns the codemod's
  :class:`CannotMigrate` into the engine's :class:`FileError`, so a file the
  codemod cannot handle becomes one ``path:line: error:`` line;
- the codemod reaches other modules of the project through
  :class:`ProjectFiles`, which uses the engine's module resolution and decoding.

The CLI parses options and calls :class:`Run` and the functions here; it reaches
neither the codemod nor the engine's pipeline by itself (``tests/test_walls.py``).
The CLI imports this module to build its options, so its own imports of either
side wait until a command needs them.

Beside it, each in a room of its own, the other top-level modules that may import
both sides: ``rule_lookup`` (the rules by id or name, as rows, as the engine's
``RuleInfo``), ``invocation`` (pre-commit, the stop signals, the patch's folder),
``migrated_copy`` (verify's copy, migrated as ``fix`` would) and ``installed_check``
(``check --installed``). Nothing else imports both sides.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Tuple

from migrate_tpu.codemod.foundation.targets import TARGETS, TENSORFLOW_PACKAGES, target_for_requirement
from migrate_tpu.invocation import under_pre_commit
from migrate_tpu.rule_lookup import rule_ids

if TYPE_CHECKING:
    from migrate_tpu.codemod.migration.migrator import TPUMigrator
    from migrate_tpu.engine.contracts import Outcome
    from migrate_tpu.engine.one_file import FileResult
    from migrate_tpu.engine.progress import Progress
    from migrate_tpu.settings import CommandLine, Settings

__all__ = ["TARGETS", "NOTEBOOK_DIFF_STYLES"]  # what the CLI's options offer

# Up to this many files named one by one (a pre-commit batch, an editor) run in
# this process' single worker: pre-commit already runs one hook process per core.
SMALL_BATCH = 64

NOTEBOOK_DIFF_STYLES = ("json", "cells")


# What marks the top folder of a project (``ProjectFiles.tree_top``).
_PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")


class ProjectFiles:
    """How the codemod finds and reads the other modules of the project (picklable).

    ``seen_as`` (``(copy, original)``): the files under folder ``copy`` are a copy of
    ``original``'s (verify's migrated copy, before it is migrated): their project is the
    original's, so that the copy gets the findings ``fix`` gives the user's files, other
    files of the user's project included (their paths are the user's)."""

    def __init__(self, roots: Tuple[str, ...], seen_as: Optional[Tuple[str, str]] = None,
                 tops: Tuple[Tuple[str, ...], Tuple[str, ...]] = ((), ()), exclude: Tuple[str, ...] = ()) -> None:
        self.seen_as = seen_as
        # the settings' ``exclude``: what the project keeps out of the run is not one of its modules
        # either (a folder of rule examples whose stand-in classes are fixtures, not the tree's)
        self.exclude = tuple(exclude)
        if seen_as is not None:
            roots = tuple(self.as_original(root) for root in roots)
        self.roots = roots
        # ``tops``: (folders each a project of its own, whatever marks a folder above them
        # has, and those of them whose project is only the modules right in them): an
        # installed distribution's top-level packages, and its folder of distributions
        # (``check --installed``: site-packages in a git repository's virtualenv is not
        # that repository's project).
        self.tops = tops
        self._resolved: Dict[Tuple[str, str], Optional[str]] = {}
        self._folders: Dict[str, str] = {}
        self._packages: Dict[str, Tuple[str, ...]] = {}
        self._real_roots: Optional[Tuple[str, ...]] = None

    def __getstate__(self) -> Dict[str, object]:
        return {"roots": self.roots, "seen_as": self.seen_as, "tops": self.tops,  # what one process resolved is not sent to another
                "exclude": self.exclude}

    def __setstate__(self, state: Dict[str, object]) -> None:
        self.__init__(state["roots"], state.get("seen_as"), state.get("tops", ((), ())),  # type: ignore[misc]
                      state.get("exclude", ()))

    def as_original(self, path: str) -> str:
        """``path``, or where it lies under ``seen_as``'s copy, the user's file it copies."""
        if self.seen_as is None:
            return path
        copy, original = self.seen_as
        real = os.path.realpath(path)
        if real == copy or real.startswith(copy + os.sep):
            return os.path.join(original, os.path.relpath(real, copy)) if real != copy else original
        return path

    def resolve_module(self, module: str, importing_path: str) -> Optional[str]:
        """The file of ``module`` imported from ``importing_path`` (``discover.resolve_from``),
        once per module and importing folder in a run: the project lookup asks the same
        questions for every file of a folder (on tf-models-official 2.4.0, 2,415 questions
        cost 0.8 s of stat calls before)."""
        from migrate_tpu.engine.discover import package_roots, resolve_from

        folder = self._folders.get(importing_path)
        if folder is None:  # the folder it resolves from (a linked file's is its target's)
            folder = self._folders[importing_path] = os.path.dirname(os.path.realpath(self.as_original(importing_path)))
        key = (module, folder)
        if key not in self._resolved:
            if self._real_roots is None:
                self._real_roots = tuple(os.path.realpath(root) for root in self.roots)
            packages = self._packages.get(folder)
            if packages is None:
                packages = self._packages[folder] = package_roots(folder)
            self._resolved[key] = resolve_from(module, folder, packages, self._real_roots)
        return self._resolved[key]

    def read_text(self, path: str) -> str:
        from migrate_tpu.engine.source import decode, read_bytes

        return decode(read_bytes(Path(path))).text

    def tree_top(self, importing_path: str) -> Path:
        """The folder of the project a file belongs to: the nearest one above it that marks a
        project (``.git``, ``pyproject.toml``, ``setup.py``, ``setup.cfg``); else, in a run
        over a folder, the folder right under it that holds the file (a run over several
        projects, such as the real-code corpus, must not make one project's classes
        another's); else the outermost package above the file, or its own folder."""
        start = Path(self.as_original(importing_path)).resolve().parent
        own = [top for top in self.tops[0] if str(start) == top or str(start).startswith(top + os.sep)]
        if own:
            return Path(max(own, key=len))
        for folder in (start, *start.parents):
            if any((folder / marker).exists() for marker in _PROJECT_MARKERS):
                return folder
        for root in (Path(r) for r in self.roots):
            if start == root:
                return root
            if root in start.parents:
                return root / start.relative_to(root).parts[0]
        top = start
        while (top / "__init__.py").exists() and top.parent != top:
            top = top.parent
        return top

    def tree_files(self, importing_path: str) -> Tuple[str, ...]:
        """The Python files of the project ``importing_path`` belongs to (``tree_top``)."""
        top = self.tree_top(importing_path)
        found = []
        if str(top) in self.tops[1]:  # a folder of installed distributions: its modules, not its packages
            return tuple(os.path.join(top, name) for name in sorted(os.listdir(top)) if name.endswith(".py"))
        from migrate_tpu.engine.discover import is_excluded

        for folder, folders, files in os.walk(top):
            folders[:] = sorted(
                name for name in folders
                if not name.startswith(".") and name not in ("__pycache__", "node_modules", "site-packages")
                and not (Path(folder) / name / "pyvenv.cfg").exists()
                and not is_excluded(Path(folder) / name, self.exclude, top)
            )
            found += [os.path.join(folder, name) for name in sorted(files)
                      if name.endswith(".py") and not is_excluded(Path(folder) / name, self.exclude, top)]
        original = self.as_original(importing_path)
        if original != importing_path:  # a copy's file is itself, not its original elsewhere in the tree
            found = [importing_path if os.path.realpath(path) == os.path.realpath(original) else path for path in found]
        return tuple(found)


class EngineMigrator:
    """The codemod as the engine's pipeline wants it (picklable: it travels to workers).

    ``variants`` are ``(glob, codemod migrator)`` pairs (per-file ignores): the
    first glob matching a file's path picks its migrator, else ``default``
    does. ``notebook_diff`` tells the engine's notebook diff how to show a
    notebook: ``json`` (a patch of the file) or ``cells`` (cell by cell).
    """

    def __init__(
        self, default: TPUMigrator, variants: Sequence[Tuple[str, TPUMigrator]] = (), base: Optional[str] = None, notebook_diff: str = "json"
    ) -> None:
        self.default = default
        self.variants = list(variants)
        self.base = base
        self.notebook_diff = notebook_diff

    def cache_salt(self) -> str:
        parts = [self.default.cache_salt(), self.notebook_diff] + [f"{glob}:{variant.cache_salt()}" for glob, variant in self.variants]
        return "|".join(parts)

    def needs_work(self, data: bytes) -> bool:
        return self.default.needs_work(data)

    def choose(self, path: str) -> TPUMigrator:
        from migrate_tpu.engine.config import path_matches

        for glob, migrator in self.variants:
            if path_matches(path, glob, self.base):
                return migrator
        return self.default

    def consulted_files(self) -> Tuple[str, ...]:
        consulted = set(self.default.consulted_files())
        for _, variant in self.variants:
            consulted.update(variant.consulted_files())
        return tuple(sorted(consulted))

    def migrate(self, text: str, path: str = "<stdin>") -> Outcome:
        from migrate_tpu.codemod.migration.migrator import CannotMigrate
        from migrate_tpu.engine.file_error import FileError

        try:
            outcome: Outcome = self.choose(path).migrate(text, path)
            return outcome
        except CannotMigrate as error:
            raise FileError(error.message, line=error.line) from None


def build_migrator(settings: Settings, paths: Sequence[str], mode: str, choices: RunChoices) -> EngineMigrator:
    """The engine-side migrator for these settings; ``paths`` are the run's paths (folders among them are import roots);
    of ``choices``, ``want_edits``, ``notebook_diff``, ``seen_as`` and ``tops`` (:class:`RunChoices`)."""
    from migrate_tpu.codemod.migration.migrator import TPUMigrator
    from migrate_tpu.codemod.foundation.options import Options

    project = ProjectFiles(tuple(str(Path(p).resolve()) for p in paths if p != "-" and Path(p).is_dir()), choices.seen_as, choices.tops,
                           tuple(settings.exclude if settings.project_exclude is None else settings.project_exclude))

    def codemod(extra_ignores: Tuple[str, ...] = ()) -> TPUMigrator:
        options = Options(
            select=settings.select,
            ignore=settings.ignore + extra_ignores,
            target=settings.target,
            unsafe_fixes=settings.unsafe_fixes,
            want_edits=choices.want_edits,
            mode=mode,
        )
        return TPUMigrator(options, project)

    variants = [(glob, codemod(ids)) for glob, ids in settings.per_file_ignores]
    return EngineMigrator(codemod(), variants, settings.base, choices.notebook_diff)


def start_folder(paths: Sequence[str], stdin_filename: Optional[str]) -> Path:
    """Where the settings file and requirements are searched from."""
    for raw in paths:
        if raw != "-":
            return Path(raw)
    if stdin_filename and Path(stdin_filename).parent.is_dir():
        return Path(stdin_filename).parent
    return Path.cwd()


def settings_for(paths: Sequence[str], cli: CommandLine, config_file: Optional[str] = None, isolated: bool = False,
                 stdin_filename: Optional[str] = None) -> Tuple[Settings, Optional[str]]:
    """``(settings, note)``: the file read, the facts found, :func:`resolve` decides.

    ``note`` says what ``--target auto`` chose and why. Raises
    :class:`SettingsError` for settings that cannot be used.
    """
    from dataclasses import replace

    from migrate_tpu.engine.config import ConfigError, find_config, find_requirement, load_config
    from migrate_tpu.settings import AUTO_TARGET, Circumstances, SettingsError, resolve, unknown_rule_patterns

    start = start_folder(paths, stdin_filename)
    values: Dict[str, object] = {}
    config_path = None
    if not isolated:
        try:
            config_path = Path(config_file) if config_file else find_config(start)
            if config_path is not None:
                values = load_config(config_path)
        except ConfigError as error:
            raise SettingsError(str(error))
    named = [p for p in paths if p != "-"]
    circumstances = Circumstances(
        under_pre_commit=under_pre_commit(),
        small_batch=bool(named) and len(named) <= SMALL_BATCH and all(Path(p).is_file() for p in named),
        config_file=str(config_path) if config_path else None,
        base=str(config_path.parent.resolve()) if config_path else None,
    )
    settings = resolve(cli, values, TARGETS, circumstances)
    note = None
    if settings.target == AUTO_TARGET:
        found = find_requirement(start, TENSORFLOW_PACKAGES)
        if found is None:
            target, note = target_for_requirement(None, "", None)
        else:
            target, note = target_for_requirement(found.requirement, Path(found.source).name, found.lower)
        settings = replace(settings, target=target)
    if settings.select or settings.ignore or settings.per_file_ignores:
        unknown = unknown_rule_patterns(settings, rule_ids())
        if unknown:
            raise SettingsError(f"no rule matches {unknown[0]!r} (see `migrate-tpu rules`)")
    return settings, note


@dataclass(frozen=True)
class RunChoices:
    """How one invocation runs, besides its paths and settings: :class:`Run`'s keywords, from
    the command line's options (and from verify's copy and ``check --installed``)."""

    quiet: bool = False
    no_progress: bool = False
    no_cache: bool = False
    cache_dir: Optional[str] = None
    shard: Optional[Tuple[int, int]] = None
    follow_symlinks: bool = False
    timeout: Optional[float] = None
    stdin_filename: Optional[str] = None
    want_edits: bool = False
    notebook_diff: str = "json"
    # verify's copy: (the copy's folder, the user's folder it copies); ``ProjectFiles``.
    seen_as: Optional[Tuple[str, str]] = None
    # check --installed: folders each a project of its own; ``ProjectFiles``.
    tops: Tuple[Tuple[str, ...], Tuple[str, ...]] = ((), ())


class Run:
    """One invocation's files and results, once its settings are known."""

    def __init__(self, paths: Sequence[str], settings: Settings, **choices: Any) -> None:
        """``choices``: the fields of :class:`RunChoices`, by name (a name that is none of
        them is a TypeError, as an unknown keyword is)."""
        self.paths = tuple(paths)
        self.settings = settings
        self.choices = RunChoices(**choices)
        self.progress: Optional[Progress] = None

    def migrator(self, mode: str = "diff") -> EngineMigrator:
        return build_migrator(self.settings, self.paths, mode, self.choices)

    def files(self) -> Tuple[List[Path], List[FileResult], List[str]]:
        """``(files to process, problems found while walking, notes)``."""
        from migrate_tpu.engine.config import path_matches
        from migrate_tpu.engine.discover import discover, in_shard
        from migrate_tpu.engine.one_file import FileResult

        settings = self.settings
        base = Path(settings.base) if settings.base else None
        named = {os.path.normpath(p) for p in self.paths if p != "-" and Path(p).is_file()}
        files: List[Path] = []
        errors: List[FileResult] = []
        notes: List[str] = []
        shard_base = base or Path.cwd()
        for found in discover(self.paths, settings.exclude, settings.respect_gitignore, base=base, follow_symlinks=self.choices.follow_symlinks):
            if self.choices.shard is not None and not in_shard(found.path, self.choices.shard, shard_base):
                continue
            if found.problem is None:
                if (
                    settings.force_exclude
                    and os.path.normpath(str(found.path)) in named
                    and any(path_matches(str(found.path), glob, settings.base) for glob in settings.exclude)
                ):
                    continue
                files.append(found.path)
            elif found.is_error:
                errors.append(FileResult(found.path.as_posix(), error=found.problem, scanned=False))
            else:
                notes.append(f"{found.path.as_posix()}: {found.problem}")
        return files, errors, notes

    def results(self, mode: str, progress_label: str = "files") -> Iterator[FileResult]:
        """Every file's result, in path order; problems found while walking first.

        ``self.progress`` is set while this runs: messages for stderr go
        through ``self.echo`` so that they do not tear the progress bar.
        """
        from migrate_tpu.engine.pipeline import run
        from migrate_tpu.engine.progress import Progress, wanted

        files, errors, notes = self.files()
        disabled = self.choices.no_progress or self.choices.quiet
        progress = self.progress = Progress(len(files), wanted(len(files), disabled=disabled), label=progress_label)
        try:
            if not self.choices.quiet:
                for note in notes:
                    self.echo(note)
            yield from errors
            migrator = self.migrator(mode)
            cache = None
            if not self.choices.no_cache:
                from migrate_tpu.engine.cache import default_cache

                cache = default_cache(migrator.cache_salt(), self.choices.cache_dir)
            for result in run(files, migrator, mode, self.settings.jobs or None, timeout=self.choices.timeout, cache=cache):
                progress.advance(result.path)
                yield result
        finally:
            progress.close()

    def migrate_source(self, data: bytes, mode: str) -> Tuple["FileResult", Optional[bytes]]:
        """Source that is not on disk (``-``: stdin) through a worker process, as a file is:
        a parser crash or a time-out becomes the result's error, nothing is written, and in
        ``fix`` mode the new bytes come back."""
        from migrate_tpu.engine.pipeline import migrate_isolated

        name = self.choices.stdin_filename or "<stdin>"
        return migrate_isolated(data, Path(name), self.migrator(mode), mode, timeout=self.choices.timeout)

    def echo(self, text: str) -> None:
        if self.progress is not None and self.progress.enabled:
            self.progress.echo(text)
        else:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
