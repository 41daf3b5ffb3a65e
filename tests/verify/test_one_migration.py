"""verify proves the migration `fix` would write for the file in the user's tree: its copy is
migrated in the user's project (the classes of the repository around it), not in a folder of
its own, so it gets the same findings and fixes (no TensorFlow)."""

import shutil
from pathlib import Path

from click.testing import CliRunner

from migrate_tpu.cli import main
from migrate_tpu.verify.runs.plan import plan

PROGRAM = '''import tensorflow as tf


def distributed(strategy, x):
    return strategy.experimental_run_v2(tf.function(lambda t: t * 2), args=(x,))


print(distributed(tf.distribute.MirroredStrategy(), tf.constant(1.0)))
'''
RUNNER = '''class Runner:
    def experimental_run_v2(self, fn, args=()):
        return fn(*args)
'''


def repository(tmp_path, with_runner):
    top = tmp_path / "repo"
    (top / "notebooks").mkdir(parents=True)
    (top / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (top / "notebooks" / "train.py").write_text(PROGRAM)
    if with_runner:
        (top / "lib").mkdir()
        (top / "lib" / "runner.py").write_text(RUNNER)
    return top / "notebooks" / "train.py"


def fix_check(path):
    return CliRunner().invoke(main, ["check", "--no-cache", str(path)]).output


def migrated_text(program):
    the_plan = plan(str(program), None, None, {})
    try:
        return the_plan.after.program.read_text(), the_plan.fixes
    finally:
        shutil.rmtree(the_plan.workdir, ignore_errors=True)


def test_a_class_elsewhere_in_the_repository_that_keeps_fix_from_renaming_keeps_verify_from_it_too(tmp_path):
    program = repository(tmp_path, with_runner=True)
    assert "[unsafe fix]" in fix_check(program) and "lib/runner.py" in fix_check(program)
    text, fixes = migrated_text(program)
    assert "strategy.experimental_run_v2(" in text and fixes == []


def test_without_such_a_class_verify_migrates_as_fix_does(tmp_path):
    program = repository(tmp_path, with_runner=False)
    assert "[*]" in fix_check(program)
    text, fixes = migrated_text(program)
    assert "strategy.run(" in text and [fix[4] for fix in fixes] == ["TPU101"]
    assert Path(program).read_text() == PROGRAM  # the user's file is never written
