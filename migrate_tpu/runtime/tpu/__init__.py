"""The emulated TPU and the machine it is attached to, as TensorFlow's own TPU path has them:
the TPU system calls of each release (``tpu_system``), topology and device assignment, the
cluster resolver, the ``TPUStrategy`` classes (``strategies``) and their one extended object
(``tpu_extended``: the TPU's cross-replica operations, run and refusals), the compile step
(``tpu_replicate`` builds a step as ``tpu.replicate`` does, in ``tpu_contexts``; ``tpu_ops`` holds
the release's op lists, ``tpu_compiler`` lets XLA judge the trace, ``bfloat16_kernels`` what the
CPU lacks), the one table of every refusal with its releases and sources (``tpu_rules``),
and the machine (``tpu_machine``: a TPU Node or a TPU VM; ``tpu_machine_io``: files and buckets
on it; ``tpu_worker_input``: the input pipeline on a Node's worker).

A new TPU rule goes here: its row into ``tpu_rules``' table, then its check where the TPU makes
it (an op rule in ``tpu_ops``, TPUStrategy's in ``tpu_extended``, a Node worker's in ``tpu_machine``).

May import: ``program/``, the runtime package's constants and ledger of patches and this folder.
"""
