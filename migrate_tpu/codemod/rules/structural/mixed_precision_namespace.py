"""TPU409: the ``tf.keras.mixed_precision.experimental`` namespace itself, where no other rule reaches.

TPU402 moves the namespace's functions and ``Policy``, TPU403 and TPU406 its
``LossScaleOptimizer``. What is left, this rule reports: the namespace used
as a value (``prec = tf.keras.mixed_precision.experimental``, ``return prec``),
its members no other rule moves (``get_layer_policy``), and an import of it that stays after those fixes (a name the
fixes do not release, such as ``prec = None`` in an ``except ImportError``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple, Union, cast

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Analysis, Scope
from migrate_tpu.codemod.analysis.names import possible_names, qualified_name
from migrate_tpu.codemod.stages.prefilter import Evidence
from migrate_tpu.codemod.framework.rule import Finding, Rule, Safety, register, registered_rules, tf_example

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.stages.source_index import SourceIndex

NAMESPACE = "tensorflow.keras.mixed_precision.experimental"
MESSAGE = (
    "`{code}`: the `tf.keras.mixed_precision.experimental` namespace{detail}, deprecated in TF 2.4, is gone "
    "from TF 2.9 (`AttributeError`; `ImportError` for an import); use `tf.keras.mixed_precision` "
    "(`set_global_policy`, `global_policy`, `Policy`, `LossScaleOptimizer`)"
)


def _taken_over() -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """Members other rules handle: at every reference (a catalogue table's entry, such as
    TPU402's ``set_policy`` or TPU406's ``LossScaleOptimizer``), or only where called (a
    call rule's callee, TPU403's constructor)."""
    prefix = NAMESPACE + "."
    anywhere: Set[str] = set()
    called: Set[str] = set()
    for rule in registered_rules():
        if rule.id == MixedPrecisionNamespace.id:
            continue
        anywhere.update(e.old[len(prefix) :] for e in getattr(rule, "entries", ()) if e.old.startswith(prefix))
        called.update(c[len(prefix) :] for c in getattr(rule, "callees", ()) if c.startswith(prefix))
    return frozenset(anywhere), frozenset(called)


def _in_import(ancestors: Iterable[cst.CSTNode]) -> bool:
    return any(isinstance(node, (cst.Import, cst.ImportFrom)) for node in ancestors)


@register
class MixedPrecisionNamespace(Rule):
    id = "TPU409"
    name = "mixed-precision-experimental-namespace"
    title = "The `tf.keras.mixed_precision.experimental` namespace is gone from TF 2.9"
    safety = Safety.MANUAL
    since = "2.4"
    source = (
        "TF 2.4.0 release notes (`tf.keras.mixed_precision` non-experimental); TF 2.9.0 release notes (experimental "
        "namespace removed); checked: `from tensorflow.keras.mixed_precision import experimental` raises ImportError "
        "on 2.21, members on 2.4.1: LossScaleOptimizer, Policy, get_layer_policy, global_policy, set_policy"
    )
    # Every reference spells the namespace `mixed_precision.experimental` or `mixed_precision import experimental`.
    evidence = (Evidence("mixed_precision", r"mixed_precision\s*(?:\.|\bimport\s*\(?)\s*experimental\b"),)
    what = """
Reports what is left of `tf.keras.mixed_precision.experimental` once TPU402,
TPU403 and TPU406 have done their part: the namespace as a value (an alias assignment, an
argument, a return), members no other rule moves (`get_layer_policy`), and an
import of the namespace whose name stays in use (also where the use is another rule's
but left for a person, such as `Policy(..., loss_scale=...)`).
"""
    why = """
The namespace was deprecated in TF 2.4 and removed in 2.9: an attribute chain
through it raises `AttributeError`, an import of it `ImportError`. TPU code of
2020 imported it as a module (`from tensorflow.keras.mixed_precision import
experimental as mixed_precision`); once its functions are rewritten, such a
leftover is what still breaks.
"""
    use_instead = """
`tf.keras.mixed_precision`: `set_global_policy`, `global_policy`, `Policy`,
`LossScaleOptimizer` (with `dynamic`/`initial_scale`). `get_layer_policy(layer)`
is `layer.dtype_policy` (checked on 2.4.1 and 2.21).
"""
    fix_safety = "No fix: a module object passed around has no one replacement."
    examples = (
        tf_example(
            before="""\
prec = tf.keras.mixed_precision.experimental
prec.set_policy("mixed_bfloat16")
""",
            findings=1,
        ),
        tf_example(
            before=(
                "try:\n"
                "    from tensorflow.keras.mixed_precision import experimental as prec\n"
                "except ImportError:\n"
                "    prec = None\n"
            ),
            findings=1,
        ),
        tf_example(
            before=(
                "from tensorflow.keras.mixed_precision import experimental as prec\n"
                "\n"
                "print(prec.get_layer_policy(model.layers[0]))\n"
            ),
            findings=2,
        ),
        # Uses that TPU402 and TPU403 rewrite are theirs, and the import goes with them.
        tf_example(
            before=(
                "from tensorflow.keras.mixed_precision import experimental as prec\n"
                "\n"
                'prec.set_policy(prec.Policy("mixed_bfloat16"))\n'
                'optimizer = prec.LossScaleOptimizer(optimizer, "dynamic")\n'
                "if isinstance(optimizer, prec.LossScaleOptimizer):\n"
                "    pass\n"
            ),
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self._chains: List[Tuple[cst.Attribute, Scope, object]] = []  # ``<...>.experimental``
        self._imports: List[Tuple[cst.CSTNode, str, object]] = []  # (alias node, bound name, statement)
        self._interesting: Set[str] = set()
        self._mentions: List[Tuple[cst.Name, Scope, object]] = []  # (name, scope, parent)
        # Uses another rule takes over: bound name -> ids of the nodes its finding may sit on.
        self._taken: Dict[str, Set[int]] = {}
        self._reported: Set[str] = set()

    @classmethod
    def may_fire(cls, index: SourceIndex) -> bool:
        """A reference to the namespace or an import of it (``syntax_stage.py``): the chains,
        names and imports below all resolve to it."""
        return index.may_name([NAMESPACE])

    def visit_Attribute(self, node: cst.Attribute, analysis: Analysis) -> None:
        if node.attr.value == "experimental" and not _in_import(analysis.ancestors()):
            analysis.remember(node)
            self._chains.append((node, analysis.scope, analysis.parent))

    def visit_ImportFrom(self, node: cst.ImportFrom, analysis: Analysis) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = analysis.module.code_for_node(node.module)
        for alias in node.names:
            full = f"{module}.{analysis.module.code_for_node(alias.name)}"
            if full.replace("tensorflow_core", "tensorflow") == NAMESPACE:
                self._note_import(alias, node, analysis)

    def visit_Import(self, node: cst.Import, analysis: Analysis) -> None:
        for alias in node.names:
            if alias.asname is not None and analysis.module.code_for_node(alias.name) == NAMESPACE:
                self._note_import(alias, node, analysis)

    def _note_import(self, alias: cst.ImportAlias, statement: Union[cst.Import, cst.ImportFrom], analysis: Analysis) -> None:
        # An import binds a plain name: its ``as`` name, or the name a from-import takes (a dotted
        # ``import a.b`` comes here only with an ``as``).
        bound = cast(cst.Name, alias.asname.name).value if alias.asname is not None else cast(cst.Name, alias.name).value
        analysis.remember(alias)
        self._imports.append((alias, bound, statement))
        self._interesting.add(bound)

    def visit_Name(self, node: cst.Name, analysis: Analysis) -> None:
        if node.value not in self._interesting or _in_import(analysis.ancestors()):
            return
        parent = analysis.parent
        # ``tf.keras.mixed_precision`` spells an alias named ``mixed_precision`` without using it.
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return
        analysis.remember(node)
        self._mentions.append((node, analysis.scope, parent))

    def finish(self, analysis: Analysis) -> Iterable[Finding]:
        anywhere, called = _taken_over()

        def leftover(node: cst.BaseExpression, parent: object, grandparent: Optional[cst.CSTNode]) -> Tuple[bool, cst.CSTNode, str]:
            """Whether this reference to the namespace is left to this rule, where, and how to say it."""
            if isinstance(parent, cst.Attribute) and parent.value is node:
                member = parent.attr.value
                if member in anywhere:
                    return False, parent, ""
                if member in called and isinstance(grandparent, cst.Call) and grandparent.func is parent:
                    return False, parent, ""
                return True, parent, f" (its `{member}` has no drop-in where it is used)"
            return True, node, ""

        for chain, scope, parent in self._chains:
            if NAMESPACE not in possible_names(chain, scope) and qualified_name(chain, scope) != NAMESPACE:
                continue
            left, where, detail = leftover(chain, parent, self._grandparent(analysis, chain))
            if left:
                self._say(where, detail, analysis)
        surviving: Set[str] = set()
        for node, scope, parent in self._mentions:
            if NAMESPACE not in possible_names(node, scope):
                # ``prec = None`` beside the import: the import stays for it, but it names no namespace
                surviving.add(node.value)
                continue
            grandparent = self._grandparent(analysis, node)
            left, where, detail = leftover(node, parent, grandparent)
            if left:
                surviving.add(node.value)
                if not self._is_store(analysis, node):
                    self._say(where, detail, analysis)
            elif qualified_name(node, scope) == NAMESPACE:
                # (A name a fallback import also binds is left to the other rule's "may be" note.)
                self._taken.setdefault(node.value, set()).update({id(parent), id(grandparent)})
        for alias, bound, _statement in self._imports:
            if bound in surviving:
                self._reported.add(bound)
                self._say(alias, " (imported; the name stays in use after the fixes)", analysis)
        return self.findings

    def settle(self, analysis: Analysis, findings: Sequence[Finding]) -> Iterable[Finding]:
        """A use taken over by another rule that it does not fix safely (TPU402's
        ``Policy(..., loss_scale=...)``, TPU406's alias, TPU403's ``LossScale`` object or loss scale known only at run time, all
        left to a person) keeps the import alive: reported at the import's line too."""
        kept = {id(f.node) for f in findings if f.rule_id != self.id and (not f.changes or f.safety != Safety.SAFE)}
        before = len(self.findings)
        for alias, bound, _statement in self._imports:
            if bound not in self._reported and self._taken.get(bound, set()) & kept:
                self._reported.add(bound)
                self._say(alias, " (imported; a use of it is left for a person)", analysis)
        return self.findings[before:]

    @staticmethod
    def _grandparent(analysis: Analysis, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        site = analysis.site(node)
        path = site.path if site is not None else ()
        return path[-3] if len(path) >= 3 else None

    @staticmethod
    def _is_store(analysis: Analysis, node: cst.Name) -> bool:
        site = analysis.site(node)
        path = site.path if site is not None else ()
        parent = path[-2] if len(path) >= 2 else None
        return isinstance(parent, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)) and getattr(parent, "target", None) is node

    def _say(self, node: cst.CSTNode, detail: str, analysis: Analysis) -> None:
        self.report(
            node,
            MESSAGE.format(code=analysis.module.code_for_node(node).strip(), detail=detail),
            analysis=analysis,
            suggestion="tf.keras.mixed_precision",
        )
