"""check --format json|github|sarif|markdown and --output-file, each parsed back."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from .conftest import FIXTURES, TRAIN

# ::warning file=PATH,line=N,col=N,title=ID::MESSAGE (GitHub workflow command).
GITHUB_LINE = re.compile(r"^::(warning|error) file=([^,:]+),line=(\d+),col=(\d+),title=(TPU\d{3})::(.+)$")
GITHUB_ERROR = re.compile(r"^::error file=([^,:]+)(?:,line=(\d+))?,title=migrate-tpu::(.+)$")


@pytest.fixture
def project(tmp_path, fixture_copy):
    (tmp_path / "train.py").write_text(TRAIN, "utf-8")
    (tmp_path / "broken.py").write_text("import tensorflow as tf\nstrategy.experimental_run_v2(f\n", "utf-8")
    (tmp_path / "clean.py").write_text("print('nothing to do')\n", "utf-8")
    fixture_copy("tpu_colab.ipynb")
    return tmp_path


def test_json_has_every_finding_with_its_fields_and_edits(run_cli, project):
    result = run_cli("check", "--format", "json", ".")
    assert result.returncode == 2  # broken.py
    report = json.loads(result.stdout)
    required = {"path", "rule", "message", "line", "column", "end_line", "end_column", "safety", "applied", "edits"}
    for finding in report["findings"]:
        assert required <= set(finding), finding
    by_place = {(f["path"], f.get("cell"), f["line"], f["rule"]): f for f in report["findings"]}
    rename = by_place[("train.py", None, 9, "TPU101")]
    assert rename["safety"] == "safe" and rename["applied"] is True
    (edit,) = rename["edits"]
    line = TRAIN.splitlines()[8]
    assert edit["line"] == edit["end_line"] == 9
    edited = line[: edit["column"] - 1] + edit["content"] + line[edit["end_column"] - 1 :]
    assert edited == "    return strategy.run(lambda x: x * 2, args=(batch,))"
    manual = by_place[("train.py", None, 3, "TPU202")]
    assert manual["applied"] is False and manual["edits"] == []
    assert ("tpu_colab.ipynb", 6, 24, "TPU101") in by_place
    assert report["errors"] == [{"path": "broken.py", "line": 2, "message": report["errors"][0]["message"]}]
    assert report["summary"]["errors"] == 1 and report["summary"]["by_rule"]["TPU101"] == 2
    # The summary agrees with the text one: train.py and the notebook would change, clean.py is skipped.
    assert {key: report["summary"][key] for key in ("files", "parsed", "skipped", "changed")} == {
        "files": 4, "parsed": 2, "skipped": 1, "changed": 2,
    }
    assert "2 would change" in result.stderr


def test_github_annotations(run_cli, project):
    result = run_cli("check", "--format", "github", ".")
    assert result.returncode == 2
    lines = result.stdout.splitlines()
    findings = [GITHUB_LINE.match(line) for line in lines if line.startswith("::warning")]
    errors = [GITHUB_ERROR.match(line) for line in lines if line.startswith("::error")]
    assert findings and all(findings), lines
    assert len(errors) == 1 and errors[0] and errors[0].group(1) == "broken.py"
    seen = {(m.group(2), m.group(3), m.group(4), m.group(5)) for m in findings}
    assert ("train.py", "4", "12", "TPU103") in seen
    assert ("train.py", "9", "21", "TPU101") in seen
    # In a notebook the line and column are those of the JSON text, and the
    # message names the cell.
    notebook = (project / "tpu_colab.ipynb").read_text("utf-8").splitlines()
    for match in findings:
        if match.group(2) == "tpu_colab.ipynb":
            line, col = int(match.group(3)), int(match.group(4))
            assert match.group(6).startswith("cell ")
            if match.group(5) == "TPU101":
                assert notebook[line - 1][col - 1 :].startswith("experimental_run_v2(step_fn")
    assert len(findings) == 6


def test_github_escapes_properties_and_data(run_cli, tmp_path):
    odd = tmp_path / "a,b:c.py"
    odd.write_text(TRAIN, "utf-8")
    result = run_cli("check", "--format", "github", odd.name)
    assert "file=a%2Cb%3Ac.py," in result.stdout
    for line in result.stdout.splitlines():
        assert GITHUB_LINE.match(line), line


def _apply_sarif_fixes(text: str, results) -> str:
    """Apply every fix's replacements (line/column regions, code points)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    replacements = []
    for result in results:
        for fix in result.get("fixes", []):
            for change in fix["artifactChanges"]:
                for replacement in change["replacements"]:
                    region = replacement["deletedRegion"]
                    start = starts[region["startLine"] - 1] + region["startColumn"] - 1
                    end = starts[region["endLine"] - 1] + region["endColumn"] - 1
                    replacements.append((start, end, replacement["insertedContent"]["text"]))
    for start, end, content in sorted(replacements, reverse=True):
        text = text[:start] + content + text[end:]
    return text


@pytest.mark.slow
def test_sarif_is_valid_and_its_fixes_reproduce_fix(run_cli, project, tmp_path):
    out = tmp_path / "report.sarif"
    result = run_cli("check", "--format", "sarif", "--output-file", out, ".")
    assert result.returncode == 2 and result.stdout == ""
    document = json.loads(out.read_text("utf-8"))
    schema = json.loads((FIXTURES / "schemas" / "sarif-2.1.0-required.json").read_text("utf-8"))
    jsonschema.validate(document, schema)
    assert document["version"] == "2.1.0"
    run = document["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [rule["id"] for rule in rules]
    assert "TPU101" in ids and all(rule["fullDescription"]["text"] and rule["help"]["markdown"].startswith("# TPU") for rule in rules)
    for item in run["results"]:
        assert ids[item["ruleIndex"]] == item["ruleId"]
    train = [r for r in run["results"] if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "train.py"]
    assert {r["ruleId"] for r in train} == {"TPU101", "TPU103", "TPU202"}
    assert [r for r in train if r["ruleId"] == "TPU202"][0].get("fixes") is None
    # Applying the SARIF fixes gives what `fix` writes.
    fixed_by_sarif = _apply_sarif_fixes(TRAIN, train)
    run_cli("fix", "train.py")
    assert fixed_by_sarif == (project / "train.py").read_text("utf-8")
    assert run["invocations"][0]["executionSuccessful"] is False
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "broken.py"


def test_sarif_without_findings(run_cli, tmp_path):
    (tmp_path / "clean.py").write_text("x = 1\n", "utf-8")
    result = run_cli("check", "--format", "sarif", "clean.py")
    assert result.returncode == 0
    document = json.loads(result.stdout)
    schema = json.loads((FIXTURES / "schemas" / "sarif-2.1.0-required.json").read_text("utf-8"))
    jsonschema.validate(document, schema)
    assert document["runs"][0]["results"] == []


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_markdown_summary_table_and_diff(run_cli, project):
    result = run_cli("check", "--format", "markdown", ".")
    assert result.returncode == 2
    text = result.stdout
    assert text.startswith("## migrate-tpu\n")
    rows = re.findall(r"^\| `(TPU\d+)` \| (.*?) \| (\d+) \| (\d+) \|$", text, re.M)
    counts = {rule: (int(total), int(fixable)) for rule, _, total, fixable in rows}
    assert counts["TPU101"] == (2, 2) and counts["TPU202"] == (2, 0)
    diff = re.search(r"^```diff\n(.*?)^```$", text, re.M | re.S).group(1)
    assert "--- a/train.py\n+++ b/train.py\n" in diff
    assert "--- a/tpu_colab.ipynb:cell 6\n" in diff
    assert "-strategy = tf.distribute.experimental.TPUStrategy(resolver)\n+strategy = tf.distribute.TPUStrategy(resolver)" in diff
    assert "`broken.py:2: error: cannot parse" in text
    # check does not write, even when the report shows the diff.
    assert (project / "train.py").read_text("utf-8") == TRAIN


def test_markdown_when_clean(run_cli, tmp_path):
    (tmp_path / "clean.py").write_text("x = 1\n", "utf-8")
    result = run_cli("check", "--format", "markdown", "clean.py")
    assert result.returncode == 0
    assert "Nothing to migrate: 1 file scanned." in result.stdout


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
@pytest.mark.parametrize("output_format", ["text", "json", "github", "sarif", "markdown"])
def test_output_file_for_every_format(run_cli, project, tmp_path, output_format):
    out = tmp_path / "out" / f"report.{output_format}"
    out.parent.mkdir()
    result = run_cli("check", "--format", output_format, "-o", out, "train.py")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "TPU101" in out.read_text("utf-8")
    # The closing summary still goes to stderr.
    assert "1 file scanned (1 parsed, 0 skipped by the prefilter), 1 would change, 3 findings" in result.stderr


UNSAFE_FIXABLE = """\
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
strategy = tf.distribute.TPUStrategy(resolver)


def step(x):
    print(x)
    return x


strategy.run(step, args=(1.0,))
"""


@pytest.mark.slow  # about 1 s or more on 2 cores (the CLI's runs)
def test_markdown_keeps_unsafe_fixes_apart_from_manual_work(run_cli, tmp_path):
    (tmp_path / "train.py").write_text(UNSAFE_FIXABLE, "utf-8")
    text = run_cli("check", "--format", "markdown", ".").stdout
    sections = dict(re.findall(r"<summary>(.*?) \(\d+\)</summary>\n\n\| Where \| Rule \| Message \|\n\| --- \| --- \| --- \|\n((?:\|.*\n)+)", text))
    assert set(sections) == {"Fixable with `--unsafe-fixes`", "Manual work"}
    assert re.findall(r"`(TPU\d+)`", sections["Fixable with `--unsafe-fixes`"]) == ["TPU301"]
    assert re.findall(r"`(TPU\d+)`", sections["Manual work"]) == ["TPU202"]
    assert "0 fixable with `migrate-tpu fix`, 1 with `migrate-tpu fix --unsafe-fixes`, 1 for manual work" in text
