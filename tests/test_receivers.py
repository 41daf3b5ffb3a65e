"""What the text alone tells of a method's receivers (``codemod/receivers.py``), the base of
the rules' ``ruled_out_by_text`` (their own cases are in ``test_syntax_stage.py``)."""

import subprocess
import sys

import pytest

from migrate_tpu.codemod.foundation.receivers import imported_receivers


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import re\nP = re.compile('a')\n", {"re": {"re"}}),
        ("import re as regex, os\nP = regex.compile('a')\n", {"regex": {"re"}}),
        ("from absl import app\nfrom absl import flags, app\napp.run(main)\n", {"app": {"absl.app"}}),
        ("import absl.app\nabsl.app.run(main)\n", None),  # the receiver ``app`` follows a dot
        ("import os.path\nos.compile()\n", {"os": {"os"}}),
        # A comment between the dot and the name, in brackets: the answer is None (doubt).
        ("import re\nP = (re.  # why\n     compile('a'))\n", None),
        ("from re import compile\ncompile('a')\n", None),  # no attribute access at all
        ("import re\n\n\ndef f(re):\n    return re.compile('a')\n", None),
    ],
)
def test_receivers_bound_only_by_imports(source, expected):
    assert imported_receivers(source, "compile" if "compile" in source else "run") == expected


def test_lines_of_comments_after_a_dot_are_read_in_linear_time():
    """A dot, then many comment lines with blanks: a pattern that let a comment end early read
    them in exponentially many ways (22 lines took seconds, 60 would take ages; one of
    TensorFlow's own files hung ``check`` for a minute). Run apart, with a limit a loaded
    machine meets thousands of times over, so that a regression fails instead of hanging."""
    code = (
        "from migrate_tpu.codemod.foundation.receivers import imported_receivers\n"
        "source = 'import re\\nx.\\n' + '# a b \\n' * 60 + 'y = re.compile(1)\\n'\n"
        "print(imported_receivers(source, 'run'), imported_receivers(source, 'compile'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "{'re':", "{'re'}}"]


@pytest.mark.parametrize(
    "source, shapes",
    [
        ("model.compile(opt, 'mse')\n", [(2, [])]),
        ("model.compile(optimizer=opt,  # a comment )\n              loss=')', metrics=[f(x)])\n", [(0, ["optimizer", "loss", "metrics"])]),
        ("a.compile()\nb.compile(x, y, z)\n", [(0, []), (3, [])]),
        ("model.compile (\n    opt)\n", [(1, [])]),
    ],
)
def test_the_arguments_of_each_call_are_read_from_its_text_alone(source, shapes):
    from migrate_tpu.codemod.foundation.receivers import call_arguments

    calls = call_arguments(source, "compile")
    assert [(len(call.args), [k.arg for k in call.keywords]) for call in calls] == shapes


@pytest.mark.parametrize(
    "source",
    [
        "fn = model.compile\nfn('sgd', 'mse', [], None)\n",  # not called where it is named
        "model.compile(opt\n",  # never closed
        "model.compile(" + "f(" * 40 + ")" * 41 + "\n",  # more closings than are tried
    ],
)
def test_a_call_the_text_does_not_show_whole_is_not_read(source):
    from migrate_tpu.codemod.foundation.receivers import call_arguments

    assert call_arguments(source, "compile") is None
