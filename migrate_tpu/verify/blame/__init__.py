"""Which of the migration's changes is to blame for a divergence: delta debugging over the
changes as hunks (``blame``), the suspects it tries first (``suspects``).

May import: ``values/``, ``runs/``, ``judge/``, this folder, and the catalogue's moves as data.
"""
