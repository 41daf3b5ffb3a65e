"""The whole ``verify`` command: what it is asked (``options``), the stages wired (``session``) and
the verdict as the user reads it (``report``: text, JSON, markdown, GitHub annotations).

May import: every other folder of verify, the runtime's launcher and the recorder's names.
"""
