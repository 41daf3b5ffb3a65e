"""Builds benchmarks/corpus/manifest.json from local sources of public TF 2.x code.

Two kinds of source, both public:
- a package archive downloaded with `pip download` (wheel or sdist) of a 2020-2021 release;
- a git mirror of a public repository, read at the last commit before one of a few dates
  in 2020-2021 (the date at which the repository has the most files using moved APIs).

Only the manifest is written into the repository; the files go to the corpus folder
(other people's code is never committed). Usage:

    python benchmarks/corpus/collect.py --packages DIR --mirrors DIR [--corpus DIR]
"""

import argparse
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from markers import count_markers, worth_collecting
from paths import DEFAULT_CORPUS, MANIFEST, corpus_path

# The GitHub repository each package is released from: the corpus is counted by repository.
PACKAGE_REPOSITORIES = {
    "tf-models-official": "tensorflow/models",
    "transformers": "huggingface/transformers",
    "tf-agents": "tensorflow/agents",
    "ktrain": "amaiya/ktrain",
    "keras-tuner": "keras-team/keras-tuner",
    "autokeras": "keras-team/autokeras",
    "tensorflow-ranking": "tensorflow/ranking",
    "neural-structured-learning": "tensorflow/neural-structured-learning",
    "deepctr": "shenweichen/DeepCTR",
    "larq": "larq/larq",
    "spektral": "danielegrattarola/spektral",
    "tensorflow-model-optimization": "tensorflow/model-optimization",
    "rasa": "RasaHQ/rasa",
    "ludwig": "ludwig-ai/ludwig",
    "dopamine-rl": "google/dopamine",
    "tensorflow-gan": "tensorflow/gan",
    "keras-ocr": "faustomorales/keras-ocr",
    "kashgari": "BrikerMan/Kashgari",
    "deepchem": "deepchem/deepchem",
    "segmentation-models": "qubvel/segmentation_models",
    "efficientnet": "qubvel/efficientnet",
    "tf-explain": "sicara/tf-explain",
    "tensorflow-hub": "tensorflow/hub",
    "dm-sonnet": "deepmind/sonnet",
}

DATES = ["2020-04-01", "2020-07-01", "2020-10-01", "2021-01-01", "2021-04-01"]


def archive_members(archive):
    """(name inside the archive, text) of every .py/.ipynb member."""
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as zipped:
            for name in zipped.namelist():
                if name.endswith((".py", ".ipynb")):
                    yield name, zipped.read(name)
    else:
        with tarfile.open(archive) as tarred:
            for member in tarred.getmembers():
                if member.isfile() and member.name.endswith((".py", ".ipynb")):
                    yield member.name, tarred.extractfile(member).read()


def package_name_and_version(archive):
    stem = archive.name
    for suffix in (".tar.gz", ".whl", ".zip"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    parts = stem.split("-")
    # Wheels: name-version-pytag-abi-platform; sdists: name-version (name may hold dashes).
    if archive.name.endswith(".whl"):
        return parts[0].replace("_", "-"), parts[1]
    return "-".join(parts[:-1]).replace("_", "-"), parts[-1]


def collect_package(archive):
    name, version = package_name_and_version(archive)
    repo = PACKAGE_REPOSITORIES.get(name.lower())
    if repo is None:
        print(f"{archive.name}: no repository known for package {name}; skipped", file=sys.stderr)
        return []
    entries = []
    found = {member: data for member, data in archive_members(archive)
             if worth_collecting(data.decode("utf-8", "replace"))}
    for member, data in most_telling(found):
        # An sdist puts everything under name-version/; the repository path is what follows.
        path = member.split("/", 1)[1] if not archive.name.endswith(".whl") else member
        entries.append(({
            "repo": repo,
            "path": path,
            "source": "pypi",
            "package": f"{name}=={version}",
            "archive": archive.name,
            "member": member,
            "url": f"https://pypi.org/project/{name}/{version}/",
        }, data))
    return entries


def git(git_dir, *args):
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], check=True,
                          capture_output=True).stdout


# Fixed strings that every selected file contains one of: `git grep` finds candidates fast,
# and the markers decide.
PREFILTER = ["experimental_run_v2", "experimental_distribute_datasets_from_function",
             "TPUStrategy", "MultiWorkerMirroredStrategy", "ParameterServerStrategy",
             "experimental_make_numpy_dataset", "mixed_precision",
             "experimental_enable_dynamic_batch_size", "auto_shard", "lr=", "lr =",
             "TPUClusterResolver"]


def files_worth_collecting(git_dir, commit):
    patterns = [arg for fixed in PREFILTER for arg in ("-e", fixed)]
    listed = subprocess.run(
        ["git", "--git-dir", str(git_dir), "grep", "-z", "-l", "-F", *patterns, commit,
         "--", "*.py", "*.ipynb"], capture_output=True).stdout.decode()
    found = {}
    for line in filter(None, listed.split("\0")):
        name = line.split(":", 1)[1]
        if not name.isascii():
            continue  # keeps corpus paths and raw URLs plain
        data = git(git_dir, "show", f"{commit}:{name}")
        if worth_collecting(data.decode("utf-8", "replace")):
            found[name] = data
    return found


# At most this many files per repository, so that no single project decides the numbers.
PER_REPOSITORY = 15


def most_telling(found):
    """The PER_REPOSITORY (path, data) pairs with most moved-API sites, in path order."""
    ranked = sorted(found.items(), key=lambda item: (-count_markers(item[1]), item[0]))
    return sorted(ranked[:PER_REPOSITORY])


def collect_mirror(git_dir, repo):
    best_commit, best = None, {}
    for date in DATES:
        commit = git(git_dir, "rev-list", "-1", f"--before={date}", "HEAD").decode().strip()
        if not commit or commit == best_commit:
            continue
        found = files_worth_collecting(git_dir, commit)
        if len(found) > len(best):
            best_commit, best = commit, found
    entries = []
    for path, data in most_telling(best):
        entries.append(({
            "repo": repo,
            "path": path,
            "source": "github",
            "commit": best_commit,
            "url": f"https://raw.githubusercontent.com/{repo}/{best_commit}/{path}",
        }, data))
    return entries


def mirror_git_dirs(mirrors):
    """(owner/name, git dir) of every mirror folder named owner+name."""
    for folder in sorted(mirrors.iterdir()):
        if "+" not in folder.name:
            continue
        repo = folder.name.replace("+", "/", 1)
        for candidate in (folder / "repo" / ".git", folder / "repo"):
            if (candidate / "HEAD").exists():
                yield repo, candidate
                break


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", type=Path, required=True)
    parser.add_argument("--mirrors", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    options = parser.parse_args()
    entries = []
    for archive in sorted(options.packages.iterdir()):
        entries += collect_package(archive)
    for repo, git_dir in mirror_git_dirs(options.mirrors):
        entries += collect_mirror(git_dir, repo)
    # One version per repository path: a package and a mirror of the same repository
    # can both hold a file; the first source listed wins.
    seen, unique = set(), []
    for entry, data in entries:
        key = (entry["repo"], entry["path"])
        if key not in seen:
            seen.add(key)
            unique.append(entry)
            target = corpus_path(options.corpus, entry["repo"], entry["path"])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    MANIFEST.write_text(json.dumps({"files": unique}, indent=1) + "\n")
    repos = {entry["repo"] for entry in unique}
    print(f"{len(unique)} files from {len(repos)} repositories -> {MANIFEST}")


if __name__ == "__main__":
    main()
