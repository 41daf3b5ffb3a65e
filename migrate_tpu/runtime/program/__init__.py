"""The user's program as the runtime sees it, below everything else: whose code a frame runs
(the user's, TensorFlow's, the runtime's, AutoGraph's copy of a user's function) and what a line
of it calls (``user_code``, ``call_sites``, ``call_syntax``), and what AutoGraph converts
(``autograph_scope``).

May import: the runtime package's constants (``migrate_tpu.runtime``) and this folder; no
TensorFlow at module level.
"""
