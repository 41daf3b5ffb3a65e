"""The project lookup: facts one module of a tree offers another (which functions return
strategies, which classes are optimizers honouring ``lr=``, which names read the TensorFlow
version, which methods run traced, whose ``compile`` a class has).

The engine knows how to find a module's file from an import; this package knows what to
look for in it. A module's summary is five tables (``lookup._TABLES``: strategies,
optimizers, version names, traced methods, compile owners), each made the first time it
is asked for, once per process: most modules are asked one thing, and each table follows
the module's names into other modules its own way. Cheap tests on a module's text and
``ast`` come first, so that a module that cannot answer is not parsed with LibCST.

``ProjectLookup`` (``lookup.py``: the questions and the tables) is built in layers, each a
module: ``reading.py`` (reading the tree's files, and which files each answer read),
``versions.py`` (whether a name may read the version, without LibCST) and ``classes.py``
(whether a class may be an optimizer or run traced methods, from its ``ast``).
"""
