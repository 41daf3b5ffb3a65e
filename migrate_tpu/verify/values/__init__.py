"""What every stage of ``verify`` shares, below them all: the verdict, a frozen value, and a run's
result (``verdict``), when two recorded values agree (``tolerance``; ``arrays`` for the arrays
stored beside a record), the one walk of two recorded values every comparison reads them through
(``record_walk``), and what the migration changed, as hunks (``changes``).

May import: this folder and the standard library; nothing of the runtime.
"""
