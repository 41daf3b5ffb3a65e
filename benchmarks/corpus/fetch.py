"""Rebuilds the corpus of real TF 2.x code from benchmarks/corpus/manifest.json.

Each entry names a public source: a package release on PyPI (fetched with `pip download`,
then the member is read from the archive) or a file of a GitHub repository at a commit
(from a local git mirror when --mirrors has one, else from raw.githubusercontent.com).
Files already present are kept. Whatever cannot be fetched is listed at the end, with why,
and the exit status is 1. Usage:

    python benchmarks/corpus/fetch.py [--corpus DIR] [--mirrors DIR]
"""

import argparse
import json
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from collect import archive_members
from paths import DEFAULT_CORPUS, MANIFEST, corpus_path


def write_atomically(target, data):
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_bytes(data)
    partial.replace(target)


def from_mirror(mirrors, entry):
    if mirrors is None:
        return None
    folder = mirrors / entry["repo"].replace("/", "+", 1) / "repo"
    for git_dir in (folder / ".git", folder):
        if (git_dir / "HEAD").exists():
            shown = subprocess.run(
                ["git", "--git-dir", str(git_dir), "show", f"{entry['commit']}:{entry['path']}"],
                capture_output=True)
            if shown.returncode == 0:
                return shown.stdout
    return None


def from_github(entry):
    with urllib.request.urlopen(entry["url"], timeout=30) as response:
        return response.read()


def from_pypi(entry, downloads, archives):
    """The member's bytes, downloading each package release once."""
    package = entry["package"]
    if package not in archives:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--no-binary", ":none:", package, "-d", str(downloads)],
                       check=True, capture_output=True, timeout=300)
        archive = downloads / entry["archive"]
        archives[package] = dict(archive_members(archive))
    return archives[package][entry["member"]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--mirrors", type=Path, help="folder of git mirrors named owner+name")
    options = parser.parse_args()
    entries = json.loads(MANIFEST.read_text())["files"]
    missing, archives = [], {}
    with tempfile.TemporaryDirectory() as downloads:
        for entry in entries:
            target = corpus_path(options.corpus, entry["repo"], entry["path"])
            if target.exists():
                continue
            try:
                if entry["source"] == "pypi":
                    data = from_pypi(entry, Path(downloads), archives)
                else:
                    data = from_mirror(options.mirrors, entry) or from_github(entry)
            except Exception as error:  # any failure is reported per file, the rest go on
                missing.append(f"{entry['repo']}/{entry['path']}: {type(error).__name__}: {error}")
                continue
            write_atomically(target, data)
    print(f"{len(entries) - len(missing)} of {len(entries)} files in {options.corpus}")
    for line in missing:
        print(f"cannot fetch {line}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
