"""Textual markers of the TF 2.1 APIs that moved by TF 2.4.1 (shared by collect, fetch and report).

They are deliberately plain text: the report uses them to find a moved API that the codemod
did not see at all, so they must not depend on the codemod's own name resolution.
"""

import re

# One pattern per move in /work/shared/tf_api_changes.md and rules/*.toml; the name says
# which rule family owns it, so the report can say what a left-over site should have hit.
MOVED_API_PATTERNS = {
    "experimental_run_v2": r"\bexperimental_run_v2\b",
    "experimental_distribute_datasets_from_function": r"\bexperimental_distribute_datasets_from_function\b",
    "experimental.TPUStrategy": r"\bexperimental\s*\.\s*TPUStrategy\b|\bexperimental\s+import\s+(?:[^\n]*\b)?TPUStrategy\b",
    "experimental.MultiWorkerMirroredStrategy": r"\bexperimental\s*\.\s*MultiWorkerMirroredStrategy\b",
    "experimental.ParameterServerStrategy": r"\bexperimental\s*\.\s*ParameterServerStrategy\b",
    "experimental_make_numpy_dataset": r"\bexperimental_make_numpy_dataset\b",
    "mixed_precision.experimental": r"\bmixed_precision\s*\.\s*experimental\b|\bmixed_precision\s+import\s+experimental\b",
    "experimental_enable_dynamic_batch_size": r"\bexperimental_enable_dynamic_batch_size\b",
    "experimental_distribute.auto_shard": r"\bexperimental_distribute\s*\.\s*auto_shard\b(?!_policy)",
    "lr=": r"[(,]\s*lr\s*=(?!=)",
}

COMPILED = {name: re.compile(pattern) for name, pattern in MOVED_API_PATTERNS.items()}

# A file is worth collecting when it uses TensorFlow and one of the moves above, or the TPU
# cluster resolver (TPU202 territory: `TPUClusterResolver(tpu='')`).
SELECT = re.compile("|".join([*MOVED_API_PATTERNS.values(), r"\bTPUClusterResolver\s*\("]))
USES_TENSORFLOW = re.compile(r"\btensorflow\b")


def worth_collecting(text):
    return bool(USES_TENSORFLOW.search(text) and SELECT.search(text))


def count_markers(data):
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return sum(len(pattern.findall(text)) for pattern in COMPILED.values())
