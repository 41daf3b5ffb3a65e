"""The migration: running the rules over one module (``checking``: the walk, the version
guards, each rule's findings), asking the tree's other modules what they offer
(``project/``), the examples of docstrings (``doctests``), migrating a file's text
(``api``) and the door the engine uses, through the composition root (``migrator``). It
is the top layer: it may import every layer below it.
"""
