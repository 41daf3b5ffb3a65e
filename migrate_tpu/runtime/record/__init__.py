"""What ``migrate-tpu verify`` records of a run: the values a program computes, step by step
(``recorder``, through its wrappers around TensorFlow: ``wrappers``; every variable made under a
strategy while recording, held to the end; which watched lines ran: ``lines_ran``), the seeds
that make two runs record the same bits (``seeding``), and what verify asks of a run beyond
recording it (``power``: kernels on one thread, a deliberate mistake).

A new recorded value goes here.

May import: ``program/``, the runtime package's constants and ledger of patches and this folder (never the TPU or
the surfaces: a record reads TensorFlow's values, whatever emulation made them).
"""
