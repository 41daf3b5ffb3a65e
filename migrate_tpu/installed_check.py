"""``check --installed``: the run over an interpreter's installed distributions.

The interpreter is found and asked where its distributions live through the runtime's envs
module (the engine starts no process); the engine's inventory picks their files; the run is
the composition root's :class:`~migrate_tpu.compose.Run`, each distribution's packages a
project of their own.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Sequence, Tuple, cast

from migrate_tpu.compose import Run

if TYPE_CHECKING:
    from migrate_tpu.engine.installed import Interpreter, Inventory
    from migrate_tpu.engine.one_file import FileResult
    from migrate_tpu.settings import Settings


# TensorFlow's own distributions: they define the APIs the rules look for, they do not call
# them, so ``check --installed`` leaves them out (``--include-tensorflow`` checks them).
API_DISTRIBUTIONS = (
    "tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tensorflow-macos", "tensorflow-aarch64",
    "tf-nightly", "tf-nightly-cpu", "tf-nightly-gpu", "tensorflow-estimator", "tf-estimator-nightly",
    "keras", "keras-nightly", "tf-keras", "tf-keras-nightly", "tensorboard", "tb-nightly",
)


def installed_python(python: Optional[str], environ: Optional[Dict[str, str]] = None) -> str:
    """The interpreter whose distributions ``check --installed`` reads: ``python`` as a path,
    a virtualenv's folder, a command on ``PATH`` or an env name of ``migrate-tpu envs``
    (``tf2.4``: resolved as ``run --python`` resolves it); without one, the active
    virtualenv's or conda env's, else the interpreter running migrate-tpu. Raises
    :class:`SettingsError` for one that is not there."""
    import shutil

    from migrate_tpu.runtime.process import envs  # the standard library only: names and folders
    from migrate_tpu.settings import SettingsError

    environ = dict(os.environ) if environ is None else environ
    # the runtime's module is written for Python 3.7 without annotations: typed here
    env_interpreter = cast(Callable[[str, Dict[str, str]], Optional[str]], envs.interpreter)
    envs_dir = cast(Callable[[Dict[str, str]], str], envs.envs_dir)
    unknown = cast(Callable[[str], str], envs.unknown_interpreter_message)
    if python is None:
        for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
            prefix = environ.get(variable)
            if prefix and os.path.isfile(os.path.join(prefix, "bin", "python")):
                return os.path.join(prefix, "bin", "python")
        return sys.executable
    if python in envs.ENVS and not os.path.exists(python):
        found = env_interpreter(python, environ)
        if found is None:
            raise SettingsError(f"--python {python}: that env is not built yet in {envs_dir(environ)}: `{envs.BUILD_COMMAND} {python}` builds it")
        return str(found)
    if os.path.isdir(python):
        for candidate in (os.path.join(python, "bin", "python"), os.path.join(python, "Scripts", "python.exe")):
            if os.path.isfile(candidate):
                return candidate
        raise SettingsError(f"--python {python}: a folder with no bin/python (name an interpreter or a virtualenv's folder)")
    if os.path.exists(python):
        return python
    on_path = shutil.which(python)
    if on_path is None:
        raise SettingsError(unknown(python))
    return on_path


def ask_interpreter(python: str) -> "Interpreter":
    """Where ``python`` keeps its installed distributions (the runtime's envs module runs it: the
    engine starts no process)."""
    from migrate_tpu.engine.installed import InstalledError, Interpreter
    from migrate_tpu.runtime.process.envs import installation_folders

    try:
        version, folders = installation_folders(python)
    except ValueError as error:
        raise InstalledError(str(error)) from None
    return Interpreter(python, version, folders)


def installed_run(names: Sequence[str], python: Optional[str], include_tensorflow: bool, settings: Settings,
                  **run_options: Any) -> Tuple[Run, Inventory]:
    """``check --installed``: the run over the ``.py`` files of ``python``'s installed
    distributions (those ``names`` names, else all but TensorFlow's own unless
    ``include_tensorflow``), each distribution's packages a project of their own, and the
    engine's :class:`~migrate_tpu.engine.installed.Inventory` of them. Raises
    :class:`SettingsError` where the interpreter or a name cannot be found."""
    from dataclasses import replace

    from migrate_tpu.engine.installed import InstalledError, inventory
    from migrate_tpu.settings import SettingsError

    interpreter_path = installed_python(python)
    try:
        found = inventory(ask_interpreter(interpreter_path), names, () if include_tensorflow else API_DISTRIBUTIONS, settings.exclude)
    except InstalledError as error:
        raise SettingsError(str(error)) from None
    # The files are named one by one; excludes were matched against their paths in their folder.
    settings = replace(settings, exclude=(), force_exclude=False, respect_gitignore=False)
    run = Run(found.files(), settings, tops=(found.tops(), found.flat_tops()), **run_options)
    return run, found


def installed_report(output_format: str, report: str, results: Sequence[FileResult], inventory: Inventory) -> str:
    """``check --installed``'s report: text grouped by distribution (``report`` unused);
    json, sarif and markdown as ``check`` writes them, with each finding's distribution."""
    from migrate_tpu.engine import installed

    if output_format == "text":
        import io

        buffer = io.StringIO()
        installed.write_text_by_distribution(results, inventory, buffer)
        return buffer.getvalue()
    if output_format == "json":
        return installed.with_distributions_json(report, results, inventory)
    if output_format == "sarif":
        return installed.with_distributions_sarif(report, inventory)
    if output_format == "markdown":
        return installed.with_distributions_markdown(report, results, inventory)
    return report


def installed_summary(results: Sequence[FileResult], inventory: Inventory) -> str:
    """``By distribution: name version N, ...`` after ``check --installed``'s summary."""
    from migrate_tpu.engine.installed import distribution_summary

    return distribution_summary(results, inventory)
