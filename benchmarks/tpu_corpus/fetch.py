"""Builds the corpus of real TF 2.x programs that ran on Cloud TPUs from programs/*.json.

Each programs/<id>.json names a public file (`path`), or a few files of one repository
(`files`, `entry`, `root`, as benchmarks/verify_corpus does), at a commit, with our own small
find/replace edits (synthetic data in place of downloads, fewer epochs and steps). The
programs are other people's code and are never committed: this script reads them from local
git mirrors (`--mirrors DIR`: folders named `owner+name` holding a bare repository or a
`repo/` one; default $MIGRATE_TPU_MIRRORS) or else from raw.githubusercontent.com, with
benchmarks/verify_corpus/fetch.py's read_source and apply_edits, and writes, per program,
outside the repository (default ~/.cache/migrate-tpu/tpu-corpus):

    <id>/program/...      the program with its edits (a notebook stays a notebook)
    <id>/gcs/BUCKET/...   the synthetic Cloud Storage files of its "gcs_files", for
                          `migrate-tpu run --gcs <id>/gcs` (made by make_gcs.py under a
                          TensorFlow interpreter: --python, default the tf2.4 env)

and `<corpus>/index.json`, which run.py reads. Usage:

    python benchmarks/tpu_corpus/fetch.py [--corpus DIR] [--mirrors DIR] [--only ID,...] [--python PY]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PROGRAMS = HERE / "programs"
DEFAULT_CORPUS = Path(os.environ.get(
    "MIGRATE_TPU_TPU_CORPUS", Path.home() / ".cache" / "migrate-tpu" / "tpu-corpus"))
DEFAULT_MIRRORS = os.environ.get("MIGRATE_TPU_MIRRORS")


def _verify_corpus_fetch():
    """benchmarks/verify_corpus/fetch.py, as a module of its own name (this file is fetch.py too)."""
    spec = importlib.util.spec_from_file_location("verify_corpus_fetch", HERE.parent / "verify_corpus" / "fetch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


VERIFY = _verify_corpus_fetch()
read_source, apply_edits, EditError = VERIFY.read_source, VERIFY.apply_edits, VERIFY.EditError
program_files, local_name, entry_name = VERIFY.program_files, VERIFY.local_name, VERIFY.entry_name


def load_programs(only=None):
    """The programs of programs/*.json, sorted by id (those of `only`, a set of ids, if given)."""
    programs = []
    for path in sorted(PROGRAMS.glob("*.json")):
        program = json.loads(path.read_text())
        if program.get("id") != path.stem:
            raise EditError(f"{path.name}: its id is {program.get('id')!r}, not {path.stem!r}")
        programs.append(program)
    if only:
        unknown = set(only) - {p["id"] for p in programs}
        if unknown:
            raise SystemExit(f"no such program: {', '.join(sorted(unknown))}")
        programs = [p for p in programs if p["id"] in only]
    return programs


def default_python():
    """The tf2.4 interpreter of `migrate-tpu envs`, else this one."""
    sys.path.insert(0, str(REPO))
    try:
        from migrate_tpu.runtime.process import envs
        return envs.interpreter("tf2.4") or sys.executable
    except ImportError:
        return sys.executable
    finally:
        sys.path.remove(str(REPO))


def make_gcs(program, folder: Path, python):
    """Writes the program's synthetic bucket files into folder (see make_gcs.py)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as spec:
        json.dump(program["gcs_files"], spec)
    try:
        environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        done = subprocess.run([python, str(HERE / "make_gcs.py"), spec.name, str(folder)],
                              capture_output=True, text=True, env=environ, timeout=600)
    finally:
        os.unlink(spec.name)
    if done.returncode != 0:
        raise EditError(f"{program['id']}: make_gcs.py: exit {done.returncode}: {done.stderr.strip()[-1500:]}")


def build(program, corpus: Path, mirrors, python):
    ident = program["id"]
    root = corpus / ident
    files = {}
    for path in program_files(program):
        data = read_source(mirrors, program["repo"], program["commit"], path)
        mine = [e for e in program.get("edits", []) if e.get("file", path) == path]
        files[local_name(program, path)] = apply_edits(data, path, mine, ident)
    VERIFY.write_variant(root / "program", files)
    entry = entry_name(program)
    record = {"id": ident, "entry": str(root / "program" / entry), "folder": "files" in program,
              "program_dir": str(root / "program"), "era": program.get("era", "2.4"),
              "notebook": entry.endswith(".ipynb"), "gcs": None}
    gcs = root / "gcs"
    if gcs.exists():
        shutil.rmtree(gcs)
    if program.get("gcs_files"):
        make_gcs(program, gcs, python)
    if program.get("gcs") or program.get("gcs_files"):
        gcs.mkdir(parents=True, exist_ok=True)
        record["gcs"] = str(gcs)
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--mirrors", type=Path, default=Path(DEFAULT_MIRRORS) if DEFAULT_MIRRORS else None,
                        help="folder of git mirrors named owner+name")
    parser.add_argument("--only", help="comma-separated program ids")
    parser.add_argument("--python", help="TensorFlow interpreter that writes the synthetic bucket files "
                                         "(default: the tf2.4 env of `migrate-tpu envs`)")
    options = parser.parse_args()
    programs = load_programs(set(options.only.split(",")) if options.only else None)
    python = options.python or default_python()
    return VERIFY.build_all(programs, options.corpus,
                            lambda program: build(program, options.corpus, options.mirrors, python), say=print)

if __name__ == "__main__":
    sys.exit(main())
