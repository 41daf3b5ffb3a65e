"""The user's program as the runtime sees it, below everything else: whose code a frame runs
(the user's, TensorFlow's, the runtime's, AutoGraph's copy of a user's function) and what a line
of it calls (``user_code``, ``call_sites``, ``call_syntax``), what AutoGraph converts
(``autograph_scope``), and what a program's code says before it runs (``program_code``: does it
build ``MultiWorkerMirroredStrategy`` or read ``TF_CONFIG`` itself, for ``run`` and verify alike).

May import: the runtime package's constants and ledger of patches (``migrate_tpu.runtime``), the notebook grammar
(``migrate_tpu.magics``) and this folder; no TensorFlow at module level.
"""
