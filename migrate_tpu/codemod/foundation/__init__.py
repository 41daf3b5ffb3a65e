"""The foundation: what every layer above reads. Text and its lines (``lines``), the places
of nodes and how a place in one text of a file is found in another (``positions``,
``places``), LibCST's parse (``parsing``), the run's options and targets, the findings as
plain data (``findings``), where the rule tables live (``locations``, ``table_schema``), and
what the text alone tells of a module (``spelling``, ``receivers``, ``keywords``,
``outline``, ``references``) and small node helpers (``helpers``). It may import the
standard library and LibCST, and nothing else of the codemod: it is the bottom layer.
"""
