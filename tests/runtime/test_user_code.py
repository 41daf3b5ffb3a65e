"""A line of AutoGraph's converted copy mapped back to the user's file and line
(``migrate_tpu/runtime/program/user_code.py``), without TensorFlow: a converted function carries an
``ag_source_map`` from its generated lines to the user's."""

from collections import namedtuple
from types import SimpleNamespace

from migrate_tpu.runtime.program import user_code

Location = namedtuple("Location", "filename lineno")  # AutoGraph's LineLocation

SOURCE = "def step(x):\n    y = x + 1\n    return y\n"


def _converted(generated_file, user_file):
    """A function as AutoGraph leaves it: its code compiled from a generated file, and a source
    map from each generated line to the user's file and line (lines 2 and 3 -> 11 and 12)."""
    namespace = {}
    exec(compile(SOURCE, generated_file, "exec"), namespace)
    step = namespace["step"]
    step.ag_source_map = {
        Location(generated_file, line): SimpleNamespace(loc=SimpleNamespace(filename=user_file, lineno=line + 9))
        for line in (2, 3)}
    return step


def test_a_generated_line_is_mapped_to_the_users_file_and_line():
    step = _converted("/tmp/tmp_generated_a.py", "/work/train.py")
    assert user_code._source_lines_of(step.__code__) == {2: ("/work/train.py", 11), 3: ("/work/train.py", 12)}


def test_alike_functions_converted_from_two_files_keep_their_own_files():
    # equal code objects compare equal whatever their file: the first file's map must not be the
    # second's (two alike steps in a program and its helper module)
    first = _converted("/tmp/tmp_generated_b.py", "/work/train.py")
    second = _converted("/tmp/tmp_generated_c.py", "/work/helpers/stepper.py")
    assert first.__code__ == second.__code__
    assert user_code._source_lines_of(first.__code__)[2] == ("/work/train.py", 11)
    assert user_code._source_lines_of(second.__code__)[2] == ("/work/helpers/stepper.py", 11)
