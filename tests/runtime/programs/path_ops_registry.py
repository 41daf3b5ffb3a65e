"""The ops of this interpreter's registry whose string inputs name files, against the table of
migrate_tpu.runtime.tpu.tpu_machine_io.PATH_OPS: prints `MISSING [...]` (ops the table lacks) and
`STALE [...]` (its functions this TensorFlow lacks, which must be another release's)."""
import re

import tensorflow as tf  # noqa: F401 - registers the ops
from tensorflow.core.framework import op_def_pb2

from migrate_tpu.runtime.tpu import tpu_machine_io

try:
    from tensorflow.python.client import pywrap_tf_session as c_api
except ImportError:  # TF 2.1
    from tensorflow.python import pywrap_tensorflow as c_api

ops = op_def_pb2.OpList()
ops.ParseFromString(bytes(c_api.TF_GetBuffer(c_api.TF_GetAllOpList())))
FILE_INPUTS = re.compile(r"^(filenames?|prefix|file_?pattern|patterns?|logdir|path|ckpt_path|\w*vocab_file|"
                         r"checkpoint_prefixes|destination_prefix|db_uri)$")
#: not file paths, or not code of 2020: regexes, a SQLite URI, DTensor (TF >= 2.9)
NOT_FILES = {"RegexFullMatch", "RegexReplace", "CreateSummaryDbWriter", "DTensorRestoreV2"}


def snake(name):
    """An op's Python function name, as TensorFlow's generated wrappers spell it."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


table = {function: names for _, function, names, _, _ in tpu_machine_io.PATH_OPS}
found = {snake(op.name): [a.name for a in op.input_arg if a.type == 7 and FILE_INPUTS.match(a.name)]
         for op in ops.op if op.name not in NOT_FILES}
found = {function: names for function, names in found.items() if names}
print("MISSING", sorted(f for f in found if f not in table or set(found[f]) - set(table[f])))
print("STALE", sorted(f for f in table if f not in found))
