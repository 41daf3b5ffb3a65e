"""What every stage of ``verify`` shares, below them all: the verdict and a run's result
(``verdict``), when two recorded values agree (``tolerance``; ``arrays`` for the arrays stored
beside a record), and what the migration changed, as hunks (``changes``).

May import: this folder and the standard library; nothing of the runtime.
"""
