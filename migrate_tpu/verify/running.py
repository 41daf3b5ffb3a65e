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


def run_one(program: Path, root: Path, args: Sequence[str], tf_api: str, python: Optional[str], steps: Optional[int],
            seed: int, replicas, hosts, tpu_env, timeout, extra_path: Optional[str], record_path: Path) -> RunResult:
    out_path, err_path = record_path.with_suffix(".stdout"), record_path.with_suffix(".stderr")
    python_path = os.pathsep.join(p for p in (extra_path, os.environ.get("PYTHONPATH")) if p) or None
    env = {recording.RECORD_VARIABLE: str(record_path), recording.STEPS_VARIABLE: str(steps) if steps else None,
           recording.SEED_VARIABLE: str(seed), "PYTHONPATH": python_path, "PYTHONHASHSEED": str(seed)}
    started = time.monotonic()
    with _environment(env), _captured(out_path, err_path):
        status = launch(str(program), list(args), replicas=replicas, tf_api=tf_api, python=python,
                        hosts=hosts, timeout=timeout, tpu_env=tpu_env)
    seconds = time.monotonic() - started
    if status == 130:  # the run was interrupted (Ctrl-C): so is verification
        raise KeyboardInterrupt
    record = None
    if record_path.exists():
        record = json.loads(record_path.read_text("utf-8"))
    host_records = []
    for host in range(1, int(hosts or 1)):  # the recorder of host K writes RECORD.hostK
        path = Path(f"{record_path}.host{host}")
        host_records.append(json.loads(path.read_text("utf-8")) if path.exists() else None)
    return RunResult(status, seconds, record, out_path.read_text("utf-8", "replace"), err_path.read_text("utf-8", "replace"), root,
                     host_records)
