"""Where the corpus lives: outside the repository, since its files are other people's code."""

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
DEFAULT_CORPUS = Path(os.environ.get(
    "MIGRATE_TPU_CORPUS", Path.home() / ".cache" / "migrate-tpu" / "corpus"))


def corpus_path(corpus, repo, path):
    owner, name = repo.split("/", 1)
    return Path(corpus) / f"{owner}__{name}" / path
