"""The rule framework: what a rule, a finding, a change, evidence and an example are, and
the registry rules add themselves to (``rule``); building fixes (``fixes``: the common
rewrites; ``hoisting``: moving a callable out of a loop) and applying changes to the tree
with the code spliced back (``edits``). It may import the foundation, the analysis and the
stages (a rule declares its ``Evidence``), never the rules themselves or the migration.
"""
