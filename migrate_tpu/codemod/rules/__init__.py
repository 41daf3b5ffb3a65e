"""The rule families: the rules built from the catalogue's TOML tables (``tables/``), the
version guards every rule's findings pass through (``version_guards/``), the structural
rules, one module (or package) each (``structural/``), and on top the catalogue that loads
them all and chooses those of a run (``catalogue``). A new structural rule goes into
``structural/`` and is found by itself; a moved API is one entry in a table of the
repository's ``rules/*.toml``. It may import the foundation, the analysis, the stages and
the framework, never the migration.
"""
