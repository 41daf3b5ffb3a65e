"""Version guards: code that branches on the TensorFlow version or on a feature.

Code written to run on several TensorFlow releases keeps the old API on purpose
in one branch::

    if LooseVersion(tf.__version__) < LooseVersion("2.2"):
        out = strategy.experimental_run_v2(step, args=(x,))   # legacy branch
    else:
        out = strategy.run(step, args=(x,))

Rewriting the legacy branch would turn it into a copy of the other one. So the
analysis finds the guards once, and every rule's findings pass through
:func:`confine`: a finding inside a legacy branch loses its fix and becomes a
note that names the guard. Rules need not know about guards at all.

Three kinds of guard, like pyupgrade's ``sys.version_info`` handling:

* a pure version comparison (``tf.__version__``, ``tf.version.VERSION``, through
  ``LooseVersion``/``StrictVersion``/``packaging.version``, ``split``, ``int``,
  slices, ...; literals and names bound once to such values only). It is
  evaluated for TF 2.1 (the code's origin), for older releases the code may
  still serve (1.15, 2.0, ...) and for the target's releases. When every
  release of the target takes one branch and some older release the other
  (``startswith("2.0")`` is False on 2.1 too), the guard is *decided*: the
  version-guard rule collapses it to the target's branch (safe: the test reads
  nothing but the version). When the target's releases disagree, the branch
  TF 2.1 takes is the legacy one and is left alone. A plain string comparison
  (``tf.__version__ >= "2.2"``) is evaluated as Python does, character by
  character, since that is what the program does; where that orders a release
  of the target against its number ("2.10.0" < "2.2") the guard is reported and
  never collapsed (keeping the branch it takes would make the slip permanent).
  A name imported from another module of the tree (``from .compat import
  IS_TF_21``) is evaluated in that module (``project.ProjectLookup``); a helper
  function there that reads the version makes a guard whose branches are both kept.
  A test that reads the version but cannot be evaluated as a whole (``and
  flag``, a helper of this file, ``re.match``) is still a guard: the branch the
  target never takes is left alone, or both branches when that is unknown.
* a feature test, ``hasattr(x, "run")`` (or ``getattr(x, "run", None) is not
  None``): the branch that needs the old name is the legacy one. It is never
  collapsed: whether ``x`` has the attribute depends on what ``x`` is, which
  the analysis cannot prove (a user's object may be passed where a strategy is
  expected), so collapsing could change behaviour.
* ``try: ... except AttributeError`` (or ``ImportError``): either side may be
  the fallback, so both the ``try`` body and those handlers are left alone; so is
  the fallback of ``getattr(x, "run", fallback)`` and of ``getattr(x, "run", None) or
  fallback`` where ``run`` is the new name.

Where a name cannot settle the version, the test is still a guard and never
collapsed: a class attribute (``self.TF_OLD``; a subclass may replace it: its value
on the target only says which branch is legacy), a parameter defaulting to the
version, and a name imported from outside the tree whose name says it tests the
TensorFlow version (``IS_TF2``, ``compat.IS_OLD_TF``): both branches are kept.

Two modules: ``values.py`` evaluates a test on each release (``evaluate``, ``reads_version``,
what a module offers its importers: ``module_version_summary``); ``guards.py`` finds the
guards of a module (``find_guards``), keeps every rule out of their legacy branches
(``confine``, ``guard_note``) and collapses a decided one (``collapse``).
"""
