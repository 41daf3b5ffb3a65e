"""What the program sees of TensorFlow: the emulated TPU installed in TensorFlow's API
(``emulation``, and ``api_paths`` for API modules imported by path), the release's own surface
(``releases``), the exact TF 2.1, 2.2 and 2.3 surfaces (``legacy``), and the run's record of the
moved APIs it calls (``moves``: the catalogue's moves as data; ``moved_calls``).

A new surface (a release's names, an old API path) goes here.

May import: ``tpu/``, ``program/``, the runtime package's constants and ledger of patches and this folder.
"""
