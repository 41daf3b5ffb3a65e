"""The table rules: rules made from the catalogue of moved symbols in ``rules/*.toml``.

Three kinds of entry:

* ``method``: an attribute renamed on any receiver (``s.experimental_run_v2`` ->
  ``s.run``). The old names exist only on TensorFlow strategies, so the receiver
  does not matter, unless the file or its tree defines a class of its own with the
  old name and not the new one (a stand-in strategy): a call on an instance of it is
  left alone, one on what may be either is an unsafe fix that says to give the class
  the new name too, one on what can only be a strategy is renamed.
* ``symbol``: a TensorFlow symbol that moved (``tf.distribute.experimental.TPUStrategy``
  -> ``tf.distribute.TPUStrategy``), found through any import alias and in every
  position (see ``references.py``). What each position may do follows from how the
  old symbol relates to the new one (``relation``): the same object is renamed
  everywhere; a subclass of the new class is renamed where only its type matters
  (``isinstance``, annotations); a base class is renamed only as an unsafe fix when
  the constructors differ; anything else is reported with what to do.
* ``flag``: a symbol with no mechanical replacement, reported with guidance in
  every position.

A rule's id, title, docs and examples sit beside its table in the TOML file.

``TableRule`` is built in layers, each a module: ``entries.py`` (an entry of a table, and
what the old symbol is to the new one), ``walk.py`` (what the walk keeps of the tree, every
table's hooks batched into one per node type), ``rewrites.py`` (what a fix may do at each
position, and the rewrites of a reference, a string annotation and an import),
``table_rule.py`` (the decisions, kind by kind: methods, symbols, flags); ``loading.py``
builds one rule class per table of the TOML files.
"""
