"""One run of a program under the runtime's launcher, with the recorder switched on: its exit
status, its output and the record it wrote."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

from migrate_tpu.runtime.record import recorder as recording  # the record's variable names only (no TensorFlow)
from migrate_tpu.runtime.process.launch import launch
from migrate_tpu.verify.values.arrays import attach_blobs
from migrate_tpu.runtime.tpu.tpu_machine import GCS_VARIABLE  # the variable's name (no TensorFlow)
from migrate_tpu.verify.runs.plan import Copy, copy_tree
from migrate_tpu.verify.values.verdict import RunResult

@contextmanager
def _captured(stdout_path: Path, stderr_path: Path) -> Iterator[None]:
    """The process' stdout and stderr (and so its children's) into files, for the duration."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            yield
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


@contextmanager
def _environment(values: Dict[str, Optional[str]]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def _working_folder(folder: Path) -> Iterator[None]:
    """This process' current folder (and so the run's) is ``folder`` for the duration."""
    saved = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(saved)


def run_one(request: RunRequest) -> RunResult:
    """Run the request's program in its copy's folder, with a temporary folder of its own
    (``TMPDIR``), its output into files beside its record."""
    copy = request.copy
    started = time.monotonic()
    with _environment(request.variables()), _working_folder(copy.cwd), _captured(request.stdout_path, request.stderr_path):
        status = launch(str(copy.program), request.args, **request.launch_options())
    seconds = time.monotonic() - started
    if status == 130:  # the run was interrupted (Ctrl-C): so is verification
        raise KeyboardInterrupt
    return request.result(status, seconds)


@dataclass
class RunRequest:
    """One run of ``copy``'s program: ``watch``, a file of lines whose running the recorder
    notes; ``environment``, what else verify asks of the run (:mod:`migrate_tpu.runtime.record.power`)."""
    copy: Copy
    args: List[str]
    tf_api: str
    python: Optional[str]
    steps: Optional[int]
    seed: int
    replicas: Optional[int]
    hosts: Optional[int]
    tpu_env: Optional[str]
    timeout: Optional[float]
    record_path: Path
    watch: Optional[Path] = None
    environment: Dict[str, str] = field(default_factory=dict)

    @property
    def stdout_path(self) -> Path:
        return self.record_path.with_suffix(".stdout")

    @property
    def stderr_path(self) -> Path:
        return self.record_path.with_suffix(".stderr")

    def variables(self) -> Dict[str, Optional[str]]:
        """The environment the run gets on top of this process' (``None``: unset); makes the
        run's own temporary folder and working folder, and removes what an earlier run of this
        name left (a run stopped before it wrote its record must not be read as this one's)."""
        for host in range(int(self.hosts or 1)):
            Path(f"{self.record_path}.host{host}" if host else self.record_path).unlink(missing_ok=True)
        temporary = self.record_path.with_suffix(".tmp")
        temporary.mkdir(exist_ok=True)
        self.copy.cwd.mkdir(parents=True, exist_ok=True)
        env: Dict[str, Optional[str]] = {
            recording.RECORD_VARIABLE: str(self.record_path), recording.STEPS_VARIABLE: str(self.steps) if self.steps else None,
            recording.SEED_VARIABLE: str(self.seed), "PYTHONHASHSEED": str(self.seed), "TMPDIR": str(temporary),
            recording.WATCH_VARIABLE: str(self.watch) if self.watch else None,
            # A plot's window would wait for somebody to close it: verify's runs draw off screen.
            "MPLBACKEND": "Agg"}
        bucket = os.environ.get(GCS_VARIABLE)
        if bucket:  # gs:// as --gcs names it, in a copy of the run's own (as its folder is)
            own = self.record_path.with_suffix(".gcs")
            shutil.rmtree(own, ignore_errors=True)
            if Path(bucket).is_dir():
                copy_tree(Path(bucket), own)
            else:  # no bucket yet: the run makes what it writes (as run --gcs makes DIR)
                own.mkdir(parents=True)
            env[GCS_VARIABLE] = str(own)
        env.update(self.environment)
        return env

    def launch_options(self) -> Dict[str, Any]:
        return {"replicas": self.replicas, "tf_api": self.tf_api, "python": self.python, "hosts": self.hosts,
                "timeout": self.timeout, "tpu_env": self.tpu_env}

    def result(self, status: int, seconds: float) -> RunResult:
        """The run's result, from its status and the files it left."""
        record = _load(self.record_path)
        host_records = [_load(Path(f"{self.record_path}.host{host}"))  # the recorder of host K writes RECORD.hostK
                        for host in range(1, int(self.hosts or 1))]
        copy = self.copy
        return RunResult(status, seconds, record, self.stdout_path.read_text("utf-8", "replace"),
                         self.stderr_path.read_text("utf-8", "replace"), copy.root, host_records, shown_root=copy.shown_root,
                         program=copy.program, shown_program=copy.shown_program)


def _load(path: Path) -> Optional[dict]:
    """A record, its arrays stored as bytes named with their file; ``None`` where none was written."""
    if not path.exists():
        return None
    record = json.loads(path.read_text("utf-8"))
    attach_blobs(record)
    return record
