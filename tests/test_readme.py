"""The README's two copy-paste commands: one installs and previews the example, one runs the tests.

CI runs the second one (``.ci/run``); the first one's migrate-tpu part is run here against
the installed package, so a README that stops working on the shipped example fails the suite.
"""

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)


def test_the_readme_has_exactly_two_commands_and_ci_runs_the_second():
    assert len(COMMANDS) == 2, COMMANDS
    install, tests = COMMANDS
    assert "pip install ." in install and "migrate-tpu" in install
    assert tests.endswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert tests in ci


def test_the_first_command_previews_the_example_and_exits_0():
    invocation = COMMANDS[0].split("&&")[-1].strip()
    argv = shlex.split(invocation)
    assert argv[0] == ".venv/bin/migrate-tpu"
    done = subprocess.run([sys.executable, "-m", "migrate_tpu", *argv[1:], "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # A real patch of the example, and the manual work named in the summary.
    assert "--- a/examples/tpu_classifier/" in done.stdout
    assert "+++ b/examples/tpu_classifier/" in done.stdout
    assert "not fixable automatically" in done.stderr
