"""One run of a program under the runtime's launcher, with the recorder switched on: its exit
status, its output and the record it wrote."""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, Optional, Sequence

from migrate_tpu.runtime import recorder as recording  # the record's variable names only (no TensorFlow)
from migrate_tpu.runtime.launch import launch
from migrate_tpu.verify.arrays import attach_blobs
from migrate_tpu.verify.plan import Copy
from migrate_tpu.verify.verdict import RunResult

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


def run_one(copy: Copy, args: Sequence[str], tf_api: str, python: Optional[str], steps: Optional[int],
            seed: int, replicas: Optional[int], hosts: Optional[int], tpu_env: Optional[str], timeout: Optional[float],
            record_path: Path, watch: Optional[Path] = None, environment: Optional[Dict[str, str]] = None) -> RunResult:
    """Run ``copy``'s program in its own folder, with a temporary folder of its own (``TMPDIR``);
    ``watch``: a file of lines whose running the recorder notes; ``environment``: what else
    verify asks of the run (:mod:`migrate_tpu.runtime.power`)."""
    out_path, err_path = record_path.with_suffix(".stdout"), record_path.with_suffix(".stderr")
    temporary = record_path.with_suffix(".tmp")
    temporary.mkdir(exist_ok=True)
    env = {recording.RECORD_VARIABLE: str(record_path), recording.STEPS_VARIABLE: str(steps) if steps else None,
           recording.SEED_VARIABLE: str(seed), "PYTHONHASHSEED": str(seed), "TMPDIR": str(temporary),
           recording.WATCH_VARIABLE: str(watch) if watch else None,
           # A plot's window would wait for somebody to close it: verify's runs draw off screen.
           "MPLBACKEND": "Agg"}
    env.update(environment or {})
    copy.cwd.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with _environment(env), _working_folder(copy.cwd), _captured(out_path, err_path):
        status = launch(str(copy.program), list(args), replicas=replicas, tf_api=tf_api, python=python,
                        hosts=hosts, timeout=timeout, tpu_env=tpu_env)
    seconds = time.monotonic() - started
    if status == 130:  # the run was interrupted (Ctrl-C): so is verification
        raise KeyboardInterrupt
    record = _load(record_path)
    host_records = [_load(Path(f"{record_path}.host{host}"))  # the recorder of host K writes RECORD.hostK
                    for host in range(1, int(hosts or 1))]
    return RunResult(status, seconds, record, out_path.read_text("utf-8", "replace"), err_path.read_text("utf-8", "replace"), copy.root,
                     host_records, shown_root=copy.shown_root, program=copy.program, shown_program=copy.shown_program)


def _load(path: Path) -> Optional[dict]:
    """A record, its arrays stored as bytes named with their file; ``None`` where none was written."""
    if not path.exists():
        return None
    record = json.loads(path.read_text("utf-8"))
    attach_blobs(record)
    return record
