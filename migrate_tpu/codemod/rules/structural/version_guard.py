"""TPU601: a branch on the TensorFlow version that the target decides."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable, Set

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Analysis
from migrate_tpu.codemod.framework.rule import Change, Expected, Finding, Rule, Safety, register, tf_example
from migrate_tpu.codemod.stages.prefilter import Evidence
from migrate_tpu.codemod.foundation.receivers import name_and_attributes
from migrate_tpu.codemod.rules.version_guards.guards import collapse

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.stages.source_index import SourceIndex

# The last name of every version ``version_guards`` reads (``_VERSION_NAMES``).
_VERSION_WORDS = frozenset({"__version__", "VERSION"})
_TARGET_NAMES = {"2.4": "TensorFlow 2.4", "latest": "TensorFlow 2.5 and later"}


def _remove(updated: cst.CSTNode) -> cst.RemovalSentinel:
    return cst.RemovalSentinel.REMOVE


@register
class VersionGuard(Rule):
    id = "TPU601"
    name = "version-guard"
    title = "A branch on the TensorFlow version that the target decides"
    safety = Safety.SAFE
    since = "2.1"
    source = "pyupgrade's `sys.version_info` collapse, applied to `tf.__version__`"
    evidence = (Evidence("__version__"), Evidence("VERSION", r"\bversion\s*\.\s*VERSION\b"))
    what = """
Finds `if` statements and conditional expressions whose test reads only the
TensorFlow version (`tf.__version__`, `tf.version.VERSION`, through
`LooseVersion`, `StrictVersion`, `packaging.version`, `split`, `int`, slices,
and names bound once to such values) that every release of the target answers
alike and TF 2.1 or an older release (1.15, 2.0) answers otherwise. It keeps
the branch the target takes and removes the other; where that branch is an
`if` body that always returns (or raises, `continue`s, `break`s), the
statements after it in its block go too, unless removing them would change the
function (a `yield`, `global`, or a name bound only there). It also reports a plain
string comparison (`tf.__version__ >= "2.2"`) that orders some release of the
target against its number (as text, "2.10.0" < "2.2"): such a guard keeps both
branches.
"""
    why = """
The branch for the older TensorFlow is dead code once the project needs the
target, and it holds the old API on purpose: no other rule rewrites it (its
findings become notes naming the guard). Removing it finishes the migration.
Guards the target does not decide (its releases disagree), feature tests such
as `hasattr(strategy, "run")`, `try: ... except AttributeError:` and
`getattr(strategy, "run", fallback)` fallbacks, versions read through a class
attribute (a subclass may replace it) or a parameter's default, and version flags
imported from outside the tree (`IS_TF2`) are never collapsed: their legacy branch
is left alone, and any old API in it is reported with a note.
"""
    fix_safety = """
Safe: the test reads nothing but the version, so on the target it always takes
the branch that is kept.
"""
    examples = (
        tf_example(
            before="""\
from distutils.version import LooseVersion

strategy = tf.distribute.TPUStrategy(resolver)
if LooseVersion(tf.__version__) < LooseVersion("2.2"):
    result = strategy.experimental_run_v2(step_fn, args=(x,))
else:
    result = strategy.run(step_fn, args=(x,))
""",
            after="""\
strategy = tf.distribute.TPUStrategy(resolver)
result = strategy.run(step_fn, args=(x,))
""",
            expected=(Expected("safe", 4, 1, '`if LooseVersion(tf.__version__) < LooseVersion("2.2")` is False on TensorFlow 2.4: only that branch can run'),),
        ),
        tf_example(
            before="""\
run = strategy.experimental_run_v2 if tf.__version__.startswith("2.1") else strategy.run
""",
            after="""\
run = strategy.run
""",
            expected=(Expected("safe", 1, 7, '`... if tf.__version__.startswith("2.1") else ...` is False on TensorFlow 2.4: only that branch can run'),),
        ),
        tf_example(
            before="""\
@tf.function
def step(x):
    if tf.__version__.startswith("2.0"):
        return strategy.experimental_run_v2(step_fn, args=(x,))
    return strategy.run(step_fn, args=(x,))
""",
            after="""\
@tf.function
def step(x):
    return strategy.run(step_fn, args=(x,))
""",
            # True on 2.0 only, False on 2.1 and the target: the branch serves 2.0 and goes.
            expected=(Expected("safe", 3, 5, '`if tf.__version__.startswith("2.0")` is False on TensorFlow 2.4: only that branch can run'),),
        ),
        tf_example(
            before="""\
if tf.__version__ >= "2.2":
    result = strategy.run(step_fn)
else:
    result = strategy.experimental_run_v2(step_fn)
""",
            target="latest",
            expected=(
                Expected(
                    "manual",
                    1,
                    4,
                    '`if tf.__version__ >= "2.2"` compares version strings as text: on TensorFlow 2.10.0 it is False, '
                    "though by release number it is True; both branches are kept (compare parsed versions, `packaging.version.parse`)",
                ),
            ),
        ),
        tf_example(
            before="""\
if hasattr(strategy, "run"):
    result = strategy.run(step_fn)
else:
    result = strategy.experimental_run_v2(step_fn)
""",
        ),
        tf_example(
            before="""\
if tf.__version__ >= "2.5":
    policy = tf.keras.mixed_precision.Policy("mixed_bfloat16")
""",
        ),
    )

    @classmethod
    def may_fire(cls, index: SourceIndex) -> bool:
        """An ``if`` or conditional expression whose test may read the TensorFlow version
        (``syntax_stage.py``): it names ``__version__`` or ``VERSION``, or a name that an
        assignment anywhere in the file (followed, as ``version_guards`` follows names bound
        once) or an import binds to one, also a name another module of the tree binds to one.
        A test that reads no version is never decided. A name or attribute chain reached through a
        relative import is asked of the tree as the analysis names it (``.compat.IS_TF2``)."""
        followed: Set[str] = set()

        def imported_reads_version(dotted: str) -> bool:
            """A name another module of the tree binds to a version test (``from .compat import IS_TF2``)."""
            finder = getattr(index.lookup, "version_values", None)
            return finder is not None and not dotted.startswith("tensorflow") and finder(dotted, index.path) is not None

        def reads_version(expr: ast.AST) -> bool:
            for node in ast.walk(expr):
                if isinstance(node, ast.Attribute):
                    if node.attr in _VERSION_WORDS:
                        return True
                    # ``compat.IS_TF2`` after ``import compat`` (or ``from . import compat``): the
                    # analysis asks the tree about the whole chain, ``compat.IS_TF2``.
                    chain = name_and_attributes(node)
                    if chain is not None:
                        head, rest = chain
                        if any(imported_reads_version(target + rest) for target in index.import_targets(head)):
                            return True
                if isinstance(node, ast.Name) and node.id not in followed:
                    if node.id in _VERSION_WORDS:
                        return True
                    followed.add(node.id)
                    for kind, value in index.bindings(node.id):
                        if kind == "import":
                            # A relative import (None here) is asked as the analysis names it.
                            targets = [value] if isinstance(value, str) else index.import_targets(node.id)
                            if any(t.rpartition(".")[2] in _VERSION_WORDS or imported_reads_version(t) for t in targets):
                                return True
                        if kind == "assign" and isinstance(value, ast.AST) and reads_version(value):  # an assignment's value
                            return True
            return False

        return any(reads_version(test) for test in index.tests)

    def finish(self, analysis: Analysis) -> Iterable[Finding]:
        target = _TARGET_NAMES.get(analysis.target, f"TensorFlow {analysis.target}")
        for guard in analysis.guards:
            if guard.misordered is not None:
                self.report(
                    guard.node.test,
                    f"`{guard.text}` compares version strings as text: {guard.misordered}; "
                    "both branches are kept (compare parsed versions, `packaging.version.parse`)",
                    analysis=analysis,
                )
            if not guard.decided or not isinstance(guard.node, (cst.If, cst.IfExp)):
                continue
            site = analysis.site(guard.node)
            if site is None:
                continue
            parent = site.path[-2] if len(site.path) > 1 else None
            elif_ = isinstance(parent, cst.If) and parent.orelse is guard.node
            alone = isinstance(parent, cst.IndentedBlock) and len(parent.body) == 1
            finding = self.report(
                guard.node,
                f"`{guard.text}` is {guard.value} on {target}: only that branch can run",
                analysis=analysis,
                changes=[Change(guard.node, collapse(guard, alone, elif_))] + [Change(node, _remove) for node in guard.unreachable],
                fix_title="Keep only the branch the target takes",
            )
            finding.releases.extend(guard.test_names)
            guard.collapsed = True
        return self.findings
