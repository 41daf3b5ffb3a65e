"""The judgement of two runs' records: the verdict (``compare``, pure: records in, verdict
out), how far two runs of one program lie apart (``spread``), whether the original repeats itself
and what a ``same`` could catch (``repeatability``), and what would help where verify cannot
judge (``advice``).

May import: ``values/``, ``runs/`` (the plan's names), this folder, and the recorder's names.
"""
