"""The whole ``verify`` command: plan the copies, run the original and the migration, compare.
The temporary copies are removed whatever happens."""

from __future__ import annotations

import shutil
from typing import Optional, Sequence

from migrate_tpu.runtime import recorder as recording  # the default seed only (no TensorFlow)
from migrate_tpu.verify.compare import compare, error
from migrate_tpu.verify.plan import plan
from migrate_tpu.verify.running import run_one
from migrate_tpu.verify.verdict import AFTER_API, BEFORE_API, DEFAULT_ATOL, DEFAULT_RTOL, ERROR, TIMED_OUT, RunResult, Verdict

def verify(target: str, args: Sequence[str] = (), *, entry: Optional[str] = None, after: Optional[str] = None, steps: Optional[int] = None,
           python: Optional[str] = None, before_python: Optional[str] = None, rtol: Optional[float] = None, atol: Optional[float] = None,
           replicas=None, hosts=None, tpu_env=None, timeout=None, seed: int = recording.DEFAULT_SEED, fix_options: Optional[dict] = None) -> Verdict:
    """Migrate, run both, compare; the temporary copies are removed whatever happens."""
    the_plan = plan(target, entry, after, fix_options or {})
    try:
        before_python = before_python or python
        same_interpreter = (before_python or None) == (python or None)
        if rtol is None:
            rtol = 0.0 if same_interpreter else DEFAULT_RTOL
        if atol is None:
            atol = 0.0 if same_interpreter else DEFAULT_ATOL
        common = dict(steps=steps, seed=seed, replicas=replicas, hosts=hosts, tpu_env=tpu_env, timeout=timeout, extra_path=the_plan.extra_path)
        before = run_one(the_plan.before_program, the_plan.before_root, args, BEFORE_API, before_python,
                         record_path=the_plan.workdir / "before.json", **common)
        if before.record is None or before.record.get("exit_status") != 0 or before.status == TIMED_OUT:
            # no point running the migrated program against an original that does not run
            after_run = RunResult(-1, 0.0, None, "", "", the_plan.after_root)
            verdict = compare(before, after_run, rtol, atol, the_plan.original_label, hosts)
            verdict.after = None
            if verdict.verdict != ERROR:
                verdict = error(verdict, "the original did not run", "run it with `migrate-tpu run --tf-api 2.1`")
            verdict.error = _with_stderr_tail(verdict.error, before.stderr)
            return verdict
        after_run = run_one(the_plan.after_program, the_plan.after_root, args, AFTER_API, python,
                            record_path=the_plan.workdir / "after.json", **common)
        verdict = compare(before, after_run, rtol, atol, target, hosts, the_plan.after_label)
        if verdict.verdict == ERROR:
            verdict.error = _with_stderr_tail(verdict.error, after_run.stderr)
        return verdict
    finally:
        shutil.rmtree(the_plan.workdir, ignore_errors=True)


def _with_stderr_tail(error: Optional[str], stderr: str, lines: int = 12) -> str:
    """``error`` and the last lines the run wrote to stderr, less a last line the error
    already quotes (its headline is often the run's own last line)."""
    error = error or ""
    kept = [line for line in stderr.splitlines() if line.strip() and not line.startswith("migrate-tpu run: TPU emulation")]
    kept = kept[-lines:]
    if kept and error and kept[-1].strip() in error.splitlines()[0]:
        kept.pop()
    return error + ("\n" + "\n".join(kept) if kept else "")
