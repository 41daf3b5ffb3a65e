"""The codemod: LibCST analysis and rules. Knows nothing of files.

Its folders are its layers, bottom first; a module imports its own layer or one below,
never one above (``tests/test_walls.py``, ``CODEMOD_LAYERS``):

- ``foundation/``: text, positions and their maps, options, what the text alone tells;
- ``analysis/``: one walk of a module: scopes, bindings, names, tracing, strategies;
- ``stages/``: what spares a file LibCST's parse: the prefilter, the syntax stage, the partial parse;
- ``framework/``: what a rule, a finding and a change are; building and applying fixes;
- ``rules/``: the rules: the catalogue's tables, the version guards, the structural rules;
- ``migration/``: running the rules over a module and the tree, migrating a file (the engine's door).
"""
