"""The emulated TPU and the machine it is attached to, as TensorFlow's own TPU path has them:
the TPU system calls of each release (``tpu_system``), topology and device assignment, the
cluster resolver, the ``TPUStrategy`` classes and their extended object (``strategies``), the
compile step (``tpu_replicate`` builds a step as ``tpu.replicate`` does, in ``tpu_contexts``;
``tpu_ops`` holds the release's op table, ``tpu_compiler`` lets XLA judge the trace,
``tpu_rules`` TPUStrategy's and Keras's own checks, ``bfloat16_kernels`` what the CPU lacks),
and the machine (``tpu_machine``: a TPU Node or a TPU VM; ``tpu_machine_io``: files and buckets
on it; ``tpu_worker_input``: the input pipeline on a Node's worker).

A new TPU rule goes here: an op the release's compiler refuses into ``tpu_ops``'s table, a
check of TPUStrategy or Keras into ``tpu_rules``.

May import: ``program/``, the runtime package's constants and ledger of patches and this folder.
"""
