"""How the real CLI does on real code: fixed safely, left to a person, wrong, silent.

Runs `migrate-tpu check --format json`, then `fix`, then `check` again and a second `fix`,
on a temporary copy of the corpus (benchmarks/corpus/fetch.py builds it), and classifies
every moved-API site:

- fixed safely: a finding before `fix` that is gone after it, in a file that still parses
  and that a second `fix` leaves byte-identical;
- left to a person: a finding still there after `fix` (manual, unsafe, or a note);
- wrong: a fixed site in a file that no longer parses, that uses a name `fix` left
  undefined (checked with pyflakes when it is installed) or that a second `fix` changes
  again; a rule with more findings after `fix` than before; a fix judged by reading to
  change meaning (judged.json; --diffs writes every change for that reading);
- silent: a moved API still in the code after `fix` (found as text in the catalogue's
  names, comments and strings aside, doctest lines included) with no finding on its line.

Findings are matched per (file, notebook cell, rule) by count, since fixes move lines.
Prints a table per repository and the totals; --markdown writes it for the docs. Usage:

    python benchmarks/corpus/report.py [--corpus DIR] [--markdown FILE] [--diffs FILE]
"""

import argparse
import ast
import collections
import difflib
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tokenize
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from markers import COMPILED
from paths import DEFAULT_CORPUS, HERE

# Fixes judged wrong by reading (a machine cannot tell that a rename changes meaning).
JUDGED = HERE / "judged.json"

# `lr=` is found through the syntax tree, on calls of what is named like an optimizer;
# `lr=` on the project's own functions is no moved API.
OPTIMIZER_NAME = re.compile(
    r"(?i)(adam\w*|sgd\w*|rmsprop|adagrad|adadelta|adamax|nadam|ftrl|lamb|lars|yogi|novograd|"
    r"\w*optimizer)$")
TEXT_MARKERS = {name: pattern for name, pattern in COMPILED.items() if name != "lr="}
# Under `import tensorflow.compat.v1 as tf` these names are the TF1 classes, which TF 2.4.1
# still has (checked: tf.compat.v1.distribute.experimental.TPUStrategy and
# MultiWorkerMirroredStrategy exist there); only the TF2 ones moved.
COMPAT_V1_ALIAS = re.compile(r"^\s*import\s+tensorflow\.compat\.v1\s+as\s+tf\b", re.M)
KEPT_IN_COMPAT_V1 = {"experimental.TPUStrategy", "experimental.MultiWorkerMirroredStrategy",
                     "experimental.ParameterServerStrategy"}
# A type check that names the stable class beside the experimental one is what TPU104 and
# TPU108 write: it keeps matching strategies built with either class.
STABLE_CLASS_BESIDE = {
    "experimental.TPUStrategy": re.compile(r"distribute\s*\.\s*TPUStrategy\b"),
    "experimental.MultiWorkerMirroredStrategy":
        re.compile(r"distribute\s*\.\s*MultiWorkerMirroredStrategy\b"),
}
# A class of the project's own that defines the old method name (a stand-in strategy) is
# no use of the moved API; its callers are.
DEFINITION = re.compile(r"^\s*def\s+\w+\s*\(")
# An alias bound to the namespace by an import (`from ... import experimental as mp`) is a
# site only where the alias is used: the namespace itself exists until TF 2.9 (TPU409).
IMPORT_LINE = re.compile(r"^\s*(from\s+\S+\s+)?import\s")
DOCTEST_LINE = re.compile(r"^\s*(>>>|\.\.\.)\s")
CLI_OPTIONS = ["--isolated", "--no-cache", "--no-gitignore", "--no-progress", "--quiet"]


def cli():
    """The migrate-tpu of this interpreter's environment."""
    beside = Path(sys.executable).with_name("migrate-tpu")
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "migrate_tpu"]


def check(tree):
    done = subprocess.run([*cli(), "check", "--format", "json", "--exit-zero", *CLI_OPTIONS,
                           str(tree)], capture_output=True, text=True, cwd=tree)
    if done.returncode != 0 and not done.stdout.strip():
        sys.exit(f"migrate-tpu check failed on {tree}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def fix(tree):
    subprocess.run([*cli(), "fix", *CLI_OPTIONS, str(tree)], capture_output=True, cwd=tree)


def snapshot(tree):
    return {path.relative_to(tree).as_posix(): path.read_bytes()
            for path in sorted(tree.rglob("*")) if path.is_file()}


def relative(tree, path):
    # The CLI runs in the tree and names files relative to it.
    return (tree / path).resolve().relative_to(tree.resolve()).as_posix()


def findings_by_unit(tree, report):
    """{(file, cell): [finding, ...]}; cell is None for a script."""
    units = collections.defaultdict(list)
    for finding in report["findings"]:
        units[(relative(tree, finding["path"]), finding.get("cell"))].append(finding)
    return units


def code_units(path, data):
    """(cell, source) of a script (cell None) or of a notebook's code cells (1-based, as
    the CLI numbers them among all cells); magics and shell lines are blanked."""
    text = data.decode("utf-8", "replace")
    if not path.endswith(".ipynb"):
        return [(None, text)]
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return []
    units = []
    for number, cell in enumerate(cells, 1):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        lines = ["" if line.lstrip().startswith(("%", "!")) else line
                 for line in source.splitlines()]
        units.append((number, "\n".join(lines) + "\n"))
    return units


def parses(source):
    try:
        ast.parse(source)
        return True
    except (SyntaxError, ValueError):
        return False


def imported_modules(sources):
    """{name: module it is imported from} over all of a file's code (a notebook's cells)."""
    bound = {}
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound[alias.asname or alias.name.split(".")[0]] = alias.name
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def marker_sites(source, imports, compat_v1):
    """[(line, marker, where)] of moved APIs left in code; where is 'code' or 'doctest'.
    imports maps the file's imported names to modules; compat_v1 says `tf` is the v1 API."""
    sites = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return sites
    lines = source.splitlines()
    # Code without its comments and strings, position for position.
    blanked = [list(line) for line in lines]
    for token in tokens:
        if token.type in (tokenize.COMMENT, tokenize.STRING):
            (start_row, start_col), (end_row, end_col) = token.start, token.end
            for row in range(start_row, end_row + 1):
                line = blanked[row - 1]
                first = start_col if row == start_row else 0
                last = end_col if row == end_row else len(line)
                line[first:last] = " " * (last - first)
        if token.type == tokenize.STRING:
            for offset, text in enumerate(token.string.splitlines()):
                if DOCTEST_LINE.match(text):
                    for name, pattern in TEXT_MARKERS.items():
                        if pattern.search(text):
                            sites.append((token.start[0] + offset, name, "doctest"))
    code_lines = ["".join(chars) for chars in blanked]
    for number, code in enumerate(code_lines, 1):
        if DEFINITION.match(code):
            continue
        for name, pattern in TEXT_MARKERS.items():
            if not pattern.search(code):
                continue
            if compat_v1 and name in KEPT_IN_COMPAT_V1:
                continue
            # The stable class may follow on the next lines of the same tuple.
            nearby = " ".join(code_lines[number - 1:number + 2])
            if name in STABLE_CLASS_BESIDE and STABLE_CLASS_BESIDE[name].search(
                    pattern.sub("", nearby)):
                continue
            if IMPORT_LINE.match(code) and not alias_used(code, code_lines):
                continue
            sites.append((number, name, "code"))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return sites
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if not any(keyword.arg == "lr" for keyword in node.keywords):
            continue
        callee = ast.unparse(node.func)
        if not OPTIMIZER_NAME.search(callee.split(".")[-1]):
            continue
        if "raw_ops" in callee or "training_ops" in callee:
            continue  # a kernel's own `lr` input, not a Keras optimizer argument
        # Only TensorFlow's optimizers (tf.keras, its internal keras, TF Addons) moved;
        # standalone Keras, PyTorch and other packages keep their own `lr`.
        module = imports.get(callee.split(".")[0])
        if module is not None and not module.startswith(("tensorflow", "tensorflow_addons")):
            continue
        sites.append((node.lineno, "lr=", "code"))
    return sites


def alias_used(import_code, code_lines):
    """Whether the name an import binds is used on any other line."""
    bound = re.search(r"\bas\s+(\w+)\s*$", import_code.strip()) or re.search(
        r"import\s+(\w+)\s*$", import_code.strip())
    if bound is None:
        return True
    use = re.compile(rf"\b{bound.group(1)}\b")
    return sum(1 for line in code_lines if use.search(line)) > 1


def undefined_names(source):
    """Names pyflakes finds used but never bound, or None without pyflakes or a parse."""
    try:
        from pyflakes import checker, messages
        tree = ast.parse(source)
    except (ImportError, SyntaxError, ValueError):
        return None
    found = checker.Checker(tree).messages
    return {m.message_args[0] for m in found if isinstance(m, messages.UndefinedName)}


def repository_of(path):
    return path.split("/", 1)[0].replace("__", "/", 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--markdown", type=Path, help="write the tables here")
    parser.add_argument("--json", type=Path, help="write every site's class here")
    parser.add_argument("--diffs", type=Path, help="write the changes `fix` made here")
    options = parser.parse_args()
    if not options.corpus.is_dir():
        sys.exit(f"{options.corpus}: no corpus; run benchmarks/corpus/fetch.py first")

    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "corpus"
        shutil.copytree(options.corpus, tree)
        original = snapshot(tree)
        before = check(tree)
        fix(tree)
        fixed = snapshot(tree)
        after = check(tree)
        fix(tree)
        refixed = snapshot(tree)
        before_units = findings_by_unit(tree, before)
        after_units = findings_by_unit(tree, after)

    judged = collections.defaultdict(list)
    for entry in json.loads(JUDGED.read_text())["wrong"]:
        judged[(entry["path"], entry.get("cell"), entry["rule"])].append(entry)
    counts = collections.defaultdict(collections.Counter)
    by_rule = collections.defaultdict(collections.Counter)
    cases = []  # (class, file:line, rule or marker, why)
    for path in sorted(original):
        repo = repository_of(path)
        counts[repo]["files"] += 1
        old_units = dict(code_units(path, original[path]))
        new_units = dict(code_units(path, fixed[path]))
        unparsable = any(parses(old_units.get(cell, "")) and not parses(source)
                         for cell, source in new_units.items())
        broke = unparsable
        unstable = fixed[path] != refixed[path]
        # A fix that drops an import still used, or uses an alias never bound, parses but
        # fails at run time: compare the undefined names of the whole program.
        if original[path] != fixed[path]:
            old_names = undefined_names("\n".join(old_units.values()))
            new_names = undefined_names("\n".join(new_units.values()))
            if old_names is not None and new_names is not None and new_names - old_names:
                broke = True
                cases.append(("wrong", path, "-", "fix leaves undefined name(s) "
                              + ", ".join(sorted(new_names - old_names))))
        if unparsable:
            cases.append(("wrong", path, "-", "no longer parses after fix"))
        if unstable:
            cases.append(("wrong", path, "-", "a second fix changes it again"))
        cells = {cell for (file, cell) in [*before_units, *after_units] if file == path}
        for cell in cells:
            old = collections.Counter(f["rule"] for f in before_units.get((path, cell), []))
            new = collections.Counter(f["rule"] for f in after_units.get((path, cell), []))
            where = path if cell is None else f"{path}[cell {cell}]"
            for rule in sorted(set(old) | set(new)):
                gone = max(old[rule] - new[rule], 0)
                counts[repo]["left"] += new[rule]
                by_rule[rule]["left"] += new[rule]
                read_wrong = judged.get((path, cell, rule), [])[:gone]
                for entry in read_wrong:
                    cases.append(("wrong", f"{where}:{entry['line']}", rule, entry["why"]))
                if broke or unstable:
                    counts[repo]["wrong"] += gone
                    by_rule[rule]["wrong"] += gone
                else:
                    counts[repo]["safe"] += gone - len(read_wrong)
                    by_rule[rule]["safe"] += gone - len(read_wrong)
                    counts[repo]["wrong"] += len(read_wrong)
                    by_rule[rule]["wrong"] += len(read_wrong)
                if new[rule] > old[rule]:
                    counts[repo]["wrong"] += new[rule] - old[rule]
                    counts[repo]["left"] -= new[rule] - old[rule]
                    cases.append(("wrong", where, rule,
                                  f"{new[rule] - old[rule]} more finding(s) after fix"))
            for finding in after_units.get((path, cell), []):
                cases.append(("left", f"{where}:{finding['line']}", finding["rule"],
                              f"{finding['safety']}: {finding['message'][:140]}"))
        imports = imported_modules(new_units.values())
        compat_v1 = any(COMPAT_V1_ALIAS.search(source) for source in new_units.values())
        for cell, source in new_units.items():
            flagged = {f["line"] for f in after_units.get((path, cell), [])}
            for line, marker, kind in sorted(set(marker_sites(source, imports, compat_v1))):
                if line not in flagged:
                    counts[repo]["silent"] += 1
                    by_rule[f"silent: {marker}"]["silent"] += 1
                    where = path if cell is None else f"{path}[cell {cell}]"
                    cases.append(("silent", f"{where}:{line}", marker,
                                  f"{kind} still uses it after fix, no finding on the line"))

    rows = []
    total = collections.Counter()
    for repo in sorted(counts, key=str.lower):
        total.update(counts[repo])
        rows.append(row(repo, counts[repo]))
    rows.append(row("**total**", total))
    table = ["| repository | files | sites | fixed safely | left to a person | wrong | silent |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |", *rows]
    table += ["", "| rule | sites | fixed safely | left to a person | wrong | silent |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for rule in sorted(by_rule):
        table.append(row(rule, by_rule[rule], with_files=False))
    try:
        import pyflakes  # noqa: F401
    except ImportError:
        print("pyflakes is not installed: names left undefined by fix were not checked",
              file=sys.stderr)
    listing = [f"- {kind}: `{where}` {what}: {why}" for kind, where, what, why in cases
               if kind in ("wrong", "silent")]
    text = "\n".join(table) + "\n"
    print(text)
    print("\n".join(listing) if listing else "no wrong or silent case")
    if options.markdown:
        options.markdown.write_text(text + "\n" + "\n".join(listing) + "\n")
    if options.json:
        options.json.write_text(json.dumps(
            {"counts": {repo: dict(c) for repo, c in counts.items()}, "total": dict(total),
             "cases": [dict(zip(("class", "where", "what", "why"), case)) for case in cases]},
            indent=1) + "\n")
    if options.diffs:
        with options.diffs.open("w") as out:
            for path in sorted(original):
                if original[path] != fixed[path]:
                    out.writelines(difflib.unified_diff(
                        original[path].decode("utf-8", "replace").splitlines(True),
                        fixed[path].decode("utf-8", "replace").splitlines(True),
                        f"a/{path}", f"b/{path}"))
    return 0


def row(name, count, with_files=True):
    sites = count["safe"] + count["left"] + count["wrong"] + count["silent"]
    share = f" ({100 * count['safe'] / sites:.1f}%)" if sites else ""
    files = f" {count['files']} |" if with_files else ""
    return (f"| {name} |{files} {sites} | {count['safe']}{share} | {count['left']} "
            f"| {count['wrong']} | {count['silent']} |")


if __name__ == "__main__":
    sys.exit(main())
