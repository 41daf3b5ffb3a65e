"""What would help, where verify cannot judge: the advice an ``error`` verdict carries.

Read from the failing run's record (its exception) and, for a notebook, from the cells that
verify's runs skip: a module a shell command fetches or installs is not "missing" from the
interpreter the way an uninstalled package is.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import List, Optional

from migrate_tpu import magics
from migrate_tpu.runtime.tpu import tpu_machine  # the Node's refusals, in words (no TensorFlow)
from migrate_tpu.verify.values.changes import code_cells
from migrate_tpu.verify.runs.plan import Copy
from migrate_tpu.verify.values.verdict import BEFORE_API

# Cell magics whose body is a shell script.
_SHELL_CELLS = frozenset({"bash", "sh", "shell", "script", "system"})


# The runtime refusing a surface newer than the interpreter's TensorFlow (launch/runner).
_SURFACE_TOO_NEW = re.compile(r"--tf-api (\d+\.\d+) needs TensorFlow >= (\d+\.\d+); this interpreter has TensorFlow (\S+)")
#: The releases `migrate-tpu envs` builds, by ``major.minor`` (runtime/process/tf-envs.sh).
ENVS = ("2.1", "2.2", "2.3", "2.4", "2.21")


def no_record_advice(stderr: str) -> str:
    too_new = _SURFACE_TOO_NEW.search(stderr)
    if too_new:
        surface = too_new.group(1)
        env = f"tf{surface}" if surface in ENVS else "tf2.21"
        return (f"the original is written for TF {surface} (its surface), which TensorFlow {too_new.group(3)} cannot offer: run "
                f"it on that release's interpreter with --before-python {env} (`migrate-tpu envs {env}` builds it)")
    if "TensorFlow" in stderr:
        return ("give an interpreter that has TensorFlow with --python (the original's own with --before-python), "
                "e.g. --python tf2.21 (`migrate-tpu envs` builds it)")
    return "run it with `migrate-tpu run` to see why"


_MISSING_MODULE = re.compile(r"No module named '([^']+)'")
# A library's own ImportError that names what to install: Keras' "Image transformations
# require SciPy. Install SciPy.", "You must `pip install pydot`".
_INSTALL_ADVICE = re.compile(r"\bpip install ([A-Za-z][\w.-]*)|\bInstall ([A-Za-z][\w.-]*?)\.?(?:\s|$)")


def _lacks_an_api(message: str) -> bool:
    """Whether an AttributeError's message says a TensorFlow name is missing (a later release's API)."""
    return "has no attribute" in message and any(word in message for word in ("Strategy", "module 'tensorflow", "ReplicaContext",
                                                                                "'tensorflow", "DistributedDataset"))


#: Names of TF 2.0 that TF 2.1 no longer has: the rule that moves each, and its successor
#: (the codemod's catalogue: rules/ and codemod/rules/structural/).
_TF_2_0_NAMES = {"auto_shard": ("TPU501", "auto_shard_policy")}


def stopped_for_lack_of_an_api(record: Optional[dict]) -> bool:
    """Whether a run stopped, at any step, because the surface lacks a name it uses."""
    if not record or record.get("exit_status") == 0:
        return False
    exception = record.get("exception") or {}
    return exception.get("type") == "AttributeError" and _lacks_an_api(exception.get("message") or "")


#: Words only the emulated TPU's compile step (and a TPU) gives a failure: XLA's refusal of an op,
#: the TPU worker's of a host op, the dynamic padder's of an input (runtime/tpu/tpu_ops.py).
_TPU_COMPILE_WORDS = ("TPU compilation failed", "From /job:worker/replica:0/task:0:\nNo registered")


def is_tpu_compile_failure(message: str) -> bool:
    """Whether an exception's message is the TPU compile step's refusal of the step."""
    return any(words in (message or "") for words in _TPU_COMPILE_WORDS)


def is_tpu_node_failure(message: str) -> bool:
    """Whether an exception's message is a TPU Node's worker refusing a local path or Python input."""
    return tpu_machine.node_refusal(message or "") is not None


def node_advice(message: str) -> str:
    """What `migrate-tpu run` advises about a TPU Node worker's error (gs:// with --gcs, the I/O
    device, or --tpu-env vm), for verify to say where it reports one; "" for any other error."""
    return tpu_machine.node_refusal(message or "") or ""


def failure_advice(record: dict, label: str, before_api: str = BEFORE_API, program: Optional[Path] = None) -> str:
    """What would help an original that fails before its first step."""
    exception = record.get("exception") or {}
    kind, message = exception.get("type") or "", exception.get("message") or ""
    node = tpu_machine.node_refusal(message)
    if node is not None:
        return (f"a TPU Node of that release refused it too, so there is nothing a migration can be compared with: {node}; "
                "then verify")
    if is_tpu_compile_failure(message):
        return ("a TPU of that release refused this step too, so there is nothing a migration can be compared "
                "with: make the step compile first (the op and your line are named; an op the release can move to "
                "the TPU host runs there after `tf.config.set_soft_device_placement(True)`), then verify")
    missing = _MISSING_MODULE.search(message) if kind in ("ModuleNotFoundError", "ImportError") else None
    package = missing.group(1).split(".")[0] if missing else None
    named = _INSTALL_ADVICE.search(message) if kind == "ImportError" and package is None else None
    if named:
        package = (named.group(1) or named.group(2)).lower()
    if package is None and "TensorBoard is not installed" in message:  # tf.summary's ops (TF >= 2.19 leaves it out)
        package = "tensorboard"
    command = _skipped_command_for(package, program) if missing and package else None
    if command and re.search(r"\bpip3? install\b", command):
        return (f"the notebook installs {package!r} in a shell command that verify's runs skip ({command}): install it "
                "into the interpreter, or pick one that has it with --python (--before-python for the original's)")
    if command:
        return (f"the notebook fetches {package!r} in a shell command that verify's runs skip ({command}): put what it "
                "fetches beside the notebook, where each run's copy of the folder finds it")
    if package:
        return (f"the interpreter lacks the package {package!r}: install it there, or pick an "
                "interpreter that has it with --python (--before-python for the original's)")
    older = next((name for name in _TF_2_0_NAMES if re.search(r"\b" + name + r"\b", message)), None) if kind == "AttributeError" else None
    if older is not None:
        rule, successor = _TF_2_0_NAMES[older]
        return (f"the original uses `{older}`, a TF 2.0 name that TF 2.1 already lacks, and no interpreter of TF 2.0 is "
                f"built here (`migrate-tpu envs` builds TF 2.1 to 2.21), so its original cannot run: verify cannot judge this "
                f"change (n/a); migrate that line first (`migrate-tpu fix --select {rule}`: `{successor}`), then verify the "
                "rest with the result as the original")
    if kind == "AttributeError" and _lacks_an_api(message):
        return (f"the original uses an API the TF {before_api} surface lacks: name the release it was written for with "
                "--before-api 2.2 or 2.3 (--before-api auto tries them in turn), or pick its interpreter with --before-python")
    if kind in ("FileNotFoundError", "OSError", "NotFoundError"):
        return ("the program reads a file verify did not find: each run starts in a copy of the script's folder "
                "(or of your current folder inside it); name the folder that holds the data with --entry SCRIPT FOLDER")
    return (f"see why with `migrate-tpu run --tf-api {before_api} {label}`, or pick the original's interpreter with "
            "--before-python; verify compares against a working original")


def _shell_lines(program: Optional[Path]) -> List[str]:
    """A notebook's shell commands (``!cmd``, ``x = !cmd``, the body of a ``%%bash`` cell),
    which verify's runs skip as a kernel without a shell would; none for a script."""
    if program is None or program.suffix != ".ipynb":
        return []
    try:
        cells = code_cells(program.read_text("utf-8")) or []
    except (OSError, ValueError):  # unreadable, or not UTF-8
        return []
    found: List[str] = []
    for _, source in cells:
        if magics.cell_magic(source) in _SHELL_CELLS:
            found.extend(line.strip() for line in source.splitlines()[1:] if line.strip())
            continue
        kinds = magics.line_kinds(source) or []
        found.extend(line.strip() for line, kind in zip(source.splitlines(), kinds)
                     if kind == magics.IPYTHON and "!" in line.split("%", 1)[0])
    return found


def _skipped_command_for(module: str, program: Optional[Path]) -> Optional[str]:
    """The notebook's shell command that installs or fetches ``module``, if one does."""
    names = re.compile(r"(?<![\w.-])" + re.escape(module) + r"(?![\w-])")
    return next((line for line in _shell_lines(program) if names.search(line)), None)


def moved_api_calls(record: Optional[dict], copy: Copy, whole_folder: bool) -> List[dict]:
    """The moved APIs the migrated run still called (the runtime's record of them), each with the
    place as the user names it, who owns the file, whether the migration covered it and what
    covers it: ``--entry`` for a file of the folder that verify did not migrate (``whole_folder``
    False: the program alone), ``check`` for one it migrated (the fix was left to a person); for a
    file in another folder or an installed distribution, what the runtime says (``fix`` it where
    it is, upgrade the distribution)."""
    found = []
    for call in ((record or {}).get("moved_apis") or {}).get("calls") or []:
        file, _, cell = call["file"].partition(".ipynb:cell")
        path = Path(file + ".ipynb" if cell else file)
        owner = call.get("owner") or {}
        entry = {key: call.get(key) for key in ("line", "count", "failed", "error", "rule", "old", "new", "title", "kind")}
        entry["owner"] = owner.get("kind")
        try:
            relative = path.relative_to(copy.root)
        except ValueError:
            relative = None
        if relative is not None:
            shown = copy.shown_program if path == copy.program else os.path.normpath(os.path.join(copy.shown_root or ".", relative))
            entry["covered"] = whole_folder or path == copy.program
            program = copy.program.relative_to(copy.root).as_posix()
            entry["to_do"] = (f"the migration left it (`migrate-tpu check {shown}` says why)" if entry["covered"] else
                              f"verify migrated {copy.shown_program} alone: `--entry {program} {copy.shown_root or '.'}` migrates the folder")
            entry["owner"] = "tree"
        else:  # another folder, an installed distribution: the runtime says what covers it
            shown = str(path)
            entry.update(covered=False, distribution=owner.get("name"), version=owner.get("version"),
                         to_do=call.get("to_do") or f"migrate-tpu fix {shown}")
        entry["where"] = f"{shown}{' cell ' + cell if cell else ''}:{call['line']}"
        found.append(entry)
    return found


def moved_api_line(call: dict) -> str:
    """One call of a moved API as the report shows it."""
    old, new = (re.sub(r"^tensorflow\.", "tf.", str(name or "")) for name in (call.get("old"), call.get("new")))
    how = f"failed: {call['error']}" if call.get("failed") else f"{call.get('count')} {'call' if call.get('count') == 1 else 'calls'}"
    return f"{call['where']}: {call['rule']} `{old}` -> `{new}` ({how}); {call['to_do']}"

