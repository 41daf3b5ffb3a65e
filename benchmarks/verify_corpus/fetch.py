"""Rebuilds the corpus of real programs for `migrate-tpu verify` from manifest.json.

Each program of the manifest is a public file (or a few files of one repository) at a
commit. This script reads them from local git mirrors (`--mirrors DIR`, folders named
`owner+name` holding a bare repository or a `repo/` one; by default the folder of
$MIGRATE_TPU_MIRRORS) or else from raw.githubusercontent.com, and writes, per program,
into the corpus folder (default ~/.cache/migrate-tpu/verify-corpus, outside the
repository, since the files are other people's code):

    <id>/before/...            the program at its commit, with the manifest's edits
    <id>/human/...             the same files at the commit where the repository migrated
                               them itself (when it did), with the same edits
    <id>/fixed/...             what `migrate-tpu fix` makes of before/ (the base of the
                               planted mistakes unless one names another base)
    <id>/planted-<name>/...    a base variant with one planted mistake

The edits are small find/replace pairs of our own (synthetic data in place of a
download, fewer epochs): applied to the code cells of a notebook (the find string is
Python text, not JSON) or to a script's text; each must match exactly `count` times
(default 1) in every variant it applies to, or the script stops and says where. An
edit's replacement carries the marker `verify-corpus:` where the code allows a comment.

`<corpus>/index.json` lists what was written (read by run.py). Usage:

    python benchmarks/verify_corpus/fetch.py [--corpus DIR] [--mirrors DIR] [--only ID,...]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MANIFEST = HERE / "manifest.json"
DEFAULT_CORPUS = Path(os.environ.get(
    "MIGRATE_TPU_VERIFY_CORPUS", Path.home() / ".cache" / "migrate-tpu" / "verify-corpus"))
DEFAULT_MIRRORS = os.environ.get("MIGRATE_TPU_MIRRORS")


class EditError(Exception):
    """A find string that does not match as the manifest says: the corpus would be wrong."""


def git_dirs(mirrors: Path | None, repo: str):
    if mirrors is None:
        return []
    folder = mirrors / repo.replace("/", "+", 1)
    return [d for d in (folder / "repo", folder / "repo" / ".git", folder / ".git", folder) if (d / "HEAD").exists()]


def read_source(mirrors, repo, commit, path):
    """The bytes of repo:path at commit, from a mirror, else from GitHub."""
    for git_dir in git_dirs(mirrors, repo):
        shown = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], capture_output=True)
        if shown.returncode == 0:
            return shown.stdout
    url = f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read()


def _cells(notebook):
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "code":
            yield cell


def _get(cell):
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _set(cell, text):
    if isinstance(cell.get("source"), list):
        cell["source"] = text.splitlines(keepends=True)
    else:
        cell["source"] = text


def apply_edits(data: bytes, path: str, edits, where: str) -> bytes:
    """data with each edit applied; an edit must match exactly `count` times (default 1)."""
    notebook = path.endswith(".ipynb")
    if notebook:
        document = json.loads(data.decode("utf-8"))
        texts = [_get(cell) for cell in _cells(document)]
    else:
        texts = [data.decode("utf-8")]
    for edit in edits:
        find, replace, count = edit["find"], edit["replace"], edit.get("count", 1)
        found = sum(text.count(find) for text in texts)
        if found != count:
            raise EditError(f"{where}: {path}: find string found {found} times, not {count}: {find!r}")
        texts = [text.replace(find, replace) for text in texts]
    if not notebook:
        return texts[0].encode("utf-8")
    for cell, text in zip(list(_cells(document)), texts):
        _set(cell, text)
    return (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def program_files(program):
    """The repository paths of a program: `path`, or `files` for a program of several files."""
    return program.get("files") or [program["path"]]


def local_name(program, path):
    """Where a file lands inside a variant folder: the basename, or the path below `root`."""
    if "files" in program:
        root = program.get("root", "")
        return path[len(root):].lstrip("/") if root and path.startswith(root) else path
    return Path(path).name


def entry_name(program):
    """The file verify is given: the program itself, or the entry of a folder program."""
    return program["entry"] if "files" in program else Path(program["path"]).name


def edits_for(program, variant):
    return [e for e in program.get("edits", []) if variant in e.get("variants", ["before", "human", "fixed"])]


def write_variant(folder: Path, files: dict):
    if folder.exists():
        shutil.rmtree(folder)
    for name, data in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def migrate(folder: Path, cli):
    """Runs `migrate-tpu fix` on a variant folder (in place): what verify migrates to."""
    done = subprocess.run(cli + ["fix", "--isolated", "--no-cache", "--exit-zero", "--quiet", str(folder)],
                          capture_output=True, text=True, cwd=str(folder))
    if done.returncode not in (0, 1):
        raise EditError(f"migrate-tpu fix {folder}: exit {done.returncode}: {done.stderr[-2000:]}")


def build(program, corpus: Path, mirrors, cli):
    ident = program["id"]
    root = corpus / ident
    entry = entry_name(program)
    record = {"id": ident, "entry": entry, "folder": "files" in program, "variants": {}}

    def fetched(commit, edits, variant):
        files = {}
        for path in program_files(program):
            data = read_source(mirrors, program["repo"], commit, path)
            mine = [e for e in edits if e.get("file", path) == path]
            files[local_name(program, path)] = apply_edits(data, path, mine, f"{ident} ({variant})")
        return files

    def place(variant, files):
        write_variant(root / variant, files)
        target = root / variant
        record["variants"][variant] = str(target if record["folder"] else target / entry)

    place("before", fetched(program["commit"], edits_for(program, "before"), "before"))
    human = program.get("human")
    if human:
        place("human", fetched(human["commit"], edits_for(program, "human") + human.get("edits", []), "human"))
    for stale in (root / "fixed.tmp", root / "fixed"):
        if stale.exists():
            shutil.rmtree(stale)
    shutil.copytree(root / "before", root / "fixed.tmp")
    migrate(root / "fixed.tmp", cli)
    (root / "fixed.tmp").rename(root / "fixed")
    record["variants"]["fixed"] = str(root / "fixed" if record["folder"] else root / "fixed" / entry)
    for planted in program.get("planted", []):
        base = planted.get("base", "fixed")
        source = root / base
        files = {}
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            name = str(path.relative_to(source))
            data = path.read_bytes()
            target_file = planted.get("file", entry)
            if name == target_file:
                data = apply_edits(data, name, [planted], f"{ident} (planted {planted['id']} on {base})")
            files[name] = data
        place(f"planted-{planted['id']}", files)
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--mirrors", type=Path, default=Path(DEFAULT_MIRRORS) if DEFAULT_MIRRORS else None,
                        help="folder of git mirrors named owner+name")
    parser.add_argument("--only", help="comma-separated program ids")
    parser.add_argument("--cli", default=str(REPO / ".venv" / "bin" / "migrate-tpu"),
                        help="the migrate-tpu command that makes the fixed variant (a shell-quoted command line)")
    options = parser.parse_args()
    programs = json.loads(MANIFEST.read_text())["programs"]
    if options.only:
        wanted = set(options.only.split(","))
        programs = [p for p in programs if p["id"] in wanted]
    cli = shlex.split(options.cli)
    return build_all(programs, options.corpus, lambda program: build(program, options.corpus, options.mirrors, cli))


def build_all(programs, corpus: Path, build_one, say=None) -> int:
    """Build each program with ``build_one`` into ``corpus``, keeping ``corpus/index.json`` (what
    was written, by id); a program that cannot be built is reported and the others go on.
    Returns the exit status: 1 when one failed."""
    corpus.mkdir(parents=True, exist_ok=True)
    index_path = corpus / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    failed = []
    for program in programs:
        try:
            index[program["id"]] = build_one(program)
            if say is not None:
                say(f"built {program['id']}")
        except Exception as error:  # reported per program; the others go on
            failed.append(f"{program['id']}: {type(error).__name__}: {error}")
            index.pop(program["id"], None)
    index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    print(f"{len(programs) - len(failed)} of {len(programs)} programs in {corpus}")
    for line in failed:
        print(f"cannot build {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
