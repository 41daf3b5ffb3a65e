"""TPU401: Keras ``compile`` arguments that changed meaning or name after TF 2.1."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Tuple

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Analysis, ProjectFacts, Scope
from migrate_tpu.codemod.framework.fixes import as_keyword
from migrate_tpu.codemod.foundation.helpers import is_literal, remove_arguments
from migrate_tpu.codemod.analysis.names import is_tensorflow, lookup, module_aliases, qualified_name
from migrate_tpu.codemod.framework.rule import Change, Example, Expected, Finding, Rule, Safety, register, tf_example
from migrate_tpu.codemod.stages.prefilter import Evidence
from migrate_tpu.codemod.foundation.receivers import call_arguments, imported_receivers

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.stages.source_index import SourceIndex

# TF 2.1's compile(optimizer, loss, metrics, loss_weights, sample_weight_mode,
# weighted_metrics, target_tensors, distribute, **kwargs).
PARAMETERS_2_1 = ("optimizer", "loss", "metrics", "loss_weights", "sample_weight_mode", "weighted_metrics", "target_tensors", "distribute")
DROPPED_WHEN_NONE = ("distribute", "target_tensors")
SESSION_KEYWORDS = ("feed_dict", "fetches", "options", "run_metadata")
RENAMED = {"experimental_steps_per_execution": "steps_per_execution"}
# What ``super().compile`` reaches from a class (``compile_owner``): Keras' ``Model.compile``,
# a ``compile`` of the tree's own (a GAN trainer's ``compile(gen_model, dis_model, ...)``),
# no ``compile`` at all, or a base not in view.
KERAS = "keras"
OWN = "own"
NONE = "none"
UNKNOWN = "unknown"
# A base from these packages is taken for Keras: their classes with a ``compile`` are
# Keras models (``Model``, ``Sequential``, their subclasses in ``tf.keras.experimental``).
_KERAS_PACKAGES = ("tensorflow.", "keras.", "tf_keras.")
# Keywords ``_check`` reports or rewrites (the second stage's test, ``may_fire``).
ACTED_ON = frozenset(DROPPED_WHEN_NONE) | frozenset(SESSION_KEYWORDS) | frozenset(RENAMED) | {"experimental_run_tf_function"}


@register
class CompileArguments(Rule):
    id = "TPU401"
    name = "keras-compile-arguments"
    title = "Keras `compile` arguments moved after TF 2.1"
    safety = Safety.SAFE
    since = "2.4"
    source = "v2.1.0, v2.2.0 and v2.4.1 keras/engine/training.py `compile`; TF 2.4.0 release notes"
    evidence = (Evidence(".compile", r"\.compile\s*\(", code_only=True),)
    what = """
In `model.compile(...)`: turns positional arguments after `loss` into keywords
with their TF 2.1 names, renames `experimental_steps_per_execution=` to
`steps_per_execution=`, and drops `experimental_run_tf_function=...`,
`distribute=None` and `target_tensors=None` (a dropped argument alone on its line
takes the line, and the comments that spoke only of it). The `compile` of a class that is no
Keras model (its own, in this file or another module of the tree) is left alone:
`super().compile(...)` reaching it, `self.compile(...)` in its methods, and a call
on a name given only instances of it; `super().compile(...)` whose base is not in
view is an unsafe fix.
"""
    why = """
TF 2.4's `compile` has another positional order: the 5th positional argument is
now `weighted_metrics` (was `sample_weight_mode`), the 6th `run_eagerly`, the
7th `steps_per_execution`. `distribute` and `target_tensors` other than None
raise `ValueError`; `experimental_run_tf_function` is silently dropped; the TF 1
session arguments (`feed_dict`, `fetches`, ...) raise `TypeError`.
"""
    use_instead = "A non-None `distribute=` moves to building the model under `strategy.scope()`; `target_tensors` has no replacement."
    fix_safety = "Safe: keywords bind the same values the TF 2.1 positions did."
    examples = (
        tf_example(
            before="""\
model.compile("sgd", "mse", ["accuracy"], None, None, None, None, None, experimental_run_tf_function=False)
""",
            # Longer than any line of the file: the arguments go one to a line, under the ``(``.
            after="""\
model.compile("sgd",
              "mse",
              metrics=["accuracy"],
              loss_weights=None,
              sample_weight_mode=None,
              weighted_metrics=None)
""",
        ),
        # The last keyword removed: its ``)`` joins the line above, and the comment that spoke
        # only of it goes with it (issue 31).
        tf_example(
            before="""\
model.compile(optimizer='adam',
              loss='mse',
              # needed on TPU in TF 2.1
              experimental_run_tf_function=False)
""",
            after="""\
model.compile(optimizer='adam',
              loss='mse')
""",
        ),
        # From the middle: its whole line goes (its comment too); a comment on another
        # argument's line stays, and so does the ``)`` on its own line.
        tf_example(
            before="""\
model.compile(
    optimizer='adam',  # Adam
    # needed on TPU in TF 2.1
    experimental_run_tf_function=False,  # TPU only
    loss='mse',
)
""",
            after="""\
model.compile(
    optimizer='adam',  # Adam
    loss='mse',
)
""",
        ),
        # Sharing a line with other arguments: the others stay on it, with the comment at its end.
        tf_example(
            before="""\
model.compile(optimizer='adam', experimental_run_tf_function=False,  # TPU
              loss='mse')
model.compile(optimizer='adam', loss='mse',
              distribute=None, experimental_run_tf_function=False)
""",
            after="""\
model.compile(optimizer='adam',  # TPU
              loss='mse')
model.compile(optimizer='adam', loss='mse')
""",
        ),
        # ``super().compile`` of a base with its own ``compile`` (a GAN trainer, not a Keras model):
        # its arguments are its own, left alone (issue 19, real code).
        tf_example(
            before="""\
class GanTrainer(object):
  def compile(self, gen_model, dis_model, gen_optimizer, dis_optimizer): ...
class MelganTrainer(GanTrainer):
  def compile(self, gen_model, dis_model, gen_optimizer, dis_optimizer, pqmf):
    super().compile(gen_model, dis_model, gen_optimizer, dis_optimizer)
""",
            findings=0,
        ),
        # The same for an instance of such a class, and for `self.compile` in its methods.
        tf_example(
            before="""\
class GanTrainer(object):
  def compile(self, gen_model, dis_model, gen_optimizer, dis_optimizer):
    self.gen_model = gen_model
  def restart(self):
    self.compile(self.gen_model, None, None, None)
trainer = GanTrainer()
trainer.compile(gen, dis, gen_opt, dis_opt)
""",
            findings=0,
        ),
        # The base is a Keras model: the call is Keras' `compile`, fixed as any other.
        tf_example(
            before="""\
class Net(tf.keras.Model):
  def compile(self, optimizer, loss, metrics):
    super().compile(optimizer, loss, metrics)
""",
            after="""\
class Net(tf.keras.Model):
  def compile(self, optimizer, loss, metrics):
    super().compile(optimizer, loss, metrics=metrics)
""",
            expected=(Expected("safe", 3, 5, "positional arguments after `loss` bind to other parameters in TF 2.4"),),
        ),
        # A base not in view may define its own `compile`: the fix is only suggested.
        tf_example(
            before="""\
from trainers import Base
class Net(Base):
  def compile(self, optimizer, loss, metrics):
    super().compile(optimizer, loss, metrics)
""",
            after="""\
from trainers import Base
class Net(Base):
  def compile(self, optimizer, loss, metrics):
    super().compile(optimizer, loss, metrics=metrics)
""",
            unsafe_fixes=True,
            expected=(
                Expected(
                    "unsafe",
                    4,
                    5,
                    "positional arguments after `loss` bind to other parameters in TF 2.4; the base class `super()` "
                    "reaches here is not in view: check that its `compile` is Keras' `Model.compile`",
                ),
            ),
        ),
        Example(
            before="""\
import re

pattern = re.compile("a+", re.IGNORECASE)
""",
        ),
    )

    @classmethod
    def ruled_out_by_text(cls, source: str, lookup: Optional[ProjectFacts] = None, path: str = "") -> bool:
        """Whether the text alone tells what ``may_fire`` would: every ``.compile`` is called
        on a name only absolute imports bind (``re.compile(...)`` after ``import re``:
        ``receivers.imported_receivers``), or given only what ``may_fire`` passes by: at most
        two positional arguments, no ``*``/``**`` and no keyword it acts on
        (``receivers.call_arguments``). On tf-models-official 2.6.0, 14 of the 18 files whose
        only lead is ``.compile(`` (15 ms of ``ast`` for ``squad_utils.py`` alone)."""
        if imported_receivers(source, "compile") is not None:
            return True
        calls = call_arguments(source, "compile")
        return calls is not None and not any(
            len(call.args) > 2
            or any(isinstance(arg, ast.Starred) for arg in call.args)
            or any(keyword.arg is None or keyword.arg in ACTED_ON for keyword in call.keywords)
            for call in calls
        )

    @classmethod
    def may_fire(cls, index: SourceIndex) -> bool:
        """A ``.compile`` call ``_check`` would report (``syntax_stage.py``): no ``*args`` or
        ``**kwargs``, not on an imported module (``re.compile``), and either more than two
        positional arguments or a keyword it reports or rewrites; ``optimizer=``, ``loss=``
        and ``metrics=`` alone give it nothing to do."""
        return any(
            call.attribute == "compile"
            and not call.starred
            and (call.positional > 2 or call.keywords & ACTED_ON)
            and not (call.receiver is not None and index.imported_only(call.receiver) is not None)
            for call in index.calls
        )

    def __init__(self) -> None:
        super().__init__()
        self._calls: List[Tuple[cst.Call, Scope]] = []

    def visit_Call(self, node: cst.Call, analysis: Analysis) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "compile":
            analysis.remember(node)
            self._calls.append((node, analysis.scope))

    def finish(self, analysis: Analysis) -> Iterable[Finding]:
        if not self._calls:
            return self.findings
        uses_tensorflow = any(is_tensorflow(target) for _, target in module_aliases(analysis.module_scope))
        for call, scope in self._calls:
            if qualified_name(call.func, scope) is not None:
                continue  # re.compile and other module functions
            if any(arg.star for arg in call.args):
                continue
            owner = _super_owner(call, scope, analysis)
            if owner in (OWN, NONE) or (owner is None and _instance_owner(call, scope, analysis) in (OWN, NONE)):
                continue  # the ``compile`` of a class that is no Keras model: its own signature
            self._check(call, scope, analysis, uses_tensorflow, sure=owner != UNKNOWN)
        return self.findings

    def _check(self, call: cst.Call, scope: Scope, analysis: Analysis, uses_tensorflow: bool, sure: bool = True) -> None:
        positional = [a for a in call.args if a.keyword is None]
        keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
        reasons = _failing_arguments(positional, keywords)
        keras_like = uses_tensorflow and (len(positional) > 2 or set(keywords) & (set(PARAMETERS_2_1) | {"experimental_run_tf_function"} | set(RENAMED)))
        if not keras_like:
            return
        if reasons:
            self.report(call, "; ".join(reasons), analysis=analysis)
            return
        work = len(positional) > 2 or any(k in keywords for k in list(RENAMED) + ["experimental_run_tf_function", "distribute", "target_tensors"])
        if not work:
            return
        notes = []
        if len(positional) > 2:
            notes.append("positional arguments after `loss` bind to other parameters in TF 2.4")
        for old, new in RENAMED.items():
            if old in keywords:
                notes.append(f"`{old}=` is now `{new}=`")
        if "experimental_run_tf_function" in keywords:
            notes.append("`experimental_run_tf_function` is ignored since TF 2.2")

        if not sure:
            notes.append("the base class `super()` reaches here is not in view: check that its `compile` is Keras' `Model.compile`")
        self.report(
            call,
            "; ".join(notes) or "`compile` arguments changed after TF 2.1",
            analysis=analysis,
            changes=[Change(call, _arguments_of_2_4, wrap=True)],
            safety=None if sure else Safety.UNSAFE,
            fix_title="Use keywords with TF 2.1 names; drop ignored arguments",
        )


def _failing_arguments(positional: List[cst.Arg], keywords: Dict[str, cst.Arg]) -> List[str]:
    """Why the call's arguments fail on the target (each a reason): no fix then, only the finding."""
    reasons = []
    for name in DROPPED_WHEN_NONE:
        arg = keywords.get(name)
        if arg is None and len(positional) > PARAMETERS_2_1.index(name):
            arg = positional[PARAMETERS_2_1.index(name)]
        if arg is not None and not is_literal(arg.value, (None,)):
            reasons.append(f"`{name}` other than None raises `ValueError` since TF 2.2")
    for name in SESSION_KEYWORDS:
        if name in keywords:
            reasons.append(f"the TF 1 session argument `{name}` raises `TypeError` in TF 2.4")
    if len(positional) > len(PARAMETERS_2_1):
        reasons.append("more positional arguments than TF 2.1's `compile` had")
    return reasons


def _arguments_of_2_4(updated: cst.Call) -> cst.Call:
    """The fix: positional arguments after ``loss`` as keywords, renamed keywords under their
    new names (dropped where the new one is given too), ignored and None-only ones dropped."""
    new_args: List[Optional[cst.Arg]] = []  # None: the argument goes
    seen_positional = 0
    present = {a.keyword.value for a in updated.args if a.keyword is not None}
    for arg in updated.args:
        if arg.keyword is None:
            name = PARAMETERS_2_1[seen_positional]
            seen_positional += 1
            if seen_positional <= 2:
                new_args.append(arg)
            elif name in DROPPED_WHEN_NONE:
                new_args.append(None)
            else:
                new_args.append(as_keyword(arg, name))
            continue
        name = arg.keyword.value
        if name == "experimental_run_tf_function" or name in DROPPED_WHEN_NONE:
            new_args.append(None)
        elif name in RENAMED:
            new_args.append(None if RENAMED[name] in present else arg.with_changes(keyword=cst.Name(RENAMED[name])))
        else:
            new_args.append(arg)
    return remove_arguments(updated, new_args)


def _super_owner(call: cst.Call, scope: Scope, analysis: Analysis) -> Optional[str]:
    """For ``super().compile(...)`` in a method: whose ``compile`` it calls (``compile_owner``);
    None for any other receiver (``model.compile``, taken for Keras as before)."""
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    if not (isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super"):
        return None
    owner = scope.method_owner()
    if owner is None or not isinstance(owner.node, cst.ClassDef):
        return UNKNOWN
    return bases_compile_owner(owner.node, analysis)


def _instance_owner(call: cst.Call, scope: Scope, analysis: Analysis) -> Optional[str]:
    """For ``x.compile(...)`` where ``x`` can only be an instance of a class in view (``self`` in
    its methods, a name every value of which is a call of it): whose ``compile`` that is
    (``compile_owner``, the first class's when several agree). None when not known."""
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    if not isinstance(receiver, cst.Name):
        return None
    owner = scope.self_class(receiver.value)
    if owner is not None and isinstance(owner.node, cst.ClassDef):
        return compile_owner(owner.node, analysis)
    found = lookup(scope, receiver.value)
    if found is None:
        return None
    owners = set()
    for binding in found[1]:
        value = binding.value if binding.kind == "assign" else None
        if not isinstance(value, cst.Call):
            return None
        owners.add(_class_owner(value.func, binding.scope, analysis))
    return owners.pop() if len(owners) == 1 else None


def _class_owner(func: cst.BaseExpression, scope: Scope, analysis: Analysis) -> Optional[str]:
    """Whose ``compile`` an instance made by calling ``func`` has, when ``func`` is a class in
    view (of this file, or of the tree's other modules); None otherwise (a function, say)."""
    if isinstance(func, cst.Name):
        found = lookup(scope, func.value)
        if found is not None and len(found[1]) == 1 and found[1][0].kind == "class" and isinstance(found[1][0].node, cst.ClassDef):
            return compile_owner(found[1][0].node, analysis)
    name = qualified_name(func, scope)
    if name is not None and name.startswith(_KERAS_PACKAGES):
        return None  # ``tf.keras.Model(...)``: Keras, as any receiver is taken
    if name is not None and analysis.lookup is not None:
        return analysis.lookup.compile_owners(name, analysis.path)
    return None


def _defines_compile(class_def: cst.ClassDef) -> bool:
    body = class_def.body.body if isinstance(class_def.body, cst.IndentedBlock) else ()
    for statement in body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == "compile":
            return True
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == "compile" for t in small.targets):
                    return True
    return False


def compile_owner(class_def: cst.ClassDef, analysis: Analysis, depth: int = 0) -> str:
    """Whose ``compile`` an instance of ``class_def`` has: its own, a base's (first found in
    the bases' order, through this file and the tree's other modules), or none."""
    if _defines_compile(class_def):
        return OWN
    return bases_compile_owner(class_def, analysis, depth)


def bases_compile_owner(class_def: cst.ClassDef, analysis: Analysis, depth: int = 0) -> str:
    """Whose ``compile`` ``super().compile`` reaches from a method of ``class_def``."""
    own = analysis.scopes_by_node.get(id(class_def))
    outer = own.parent if own is not None else None
    if outer is None or depth > 8:
        return UNKNOWN
    for base in class_def.bases:
        if base.keyword is not None:
            continue
        found = _base_owner(base.value, outer, analysis, depth)
        if found != NONE:
            return found
    return NONE


def _base_owner(base: cst.BaseExpression, outer: Scope, analysis: Analysis, depth: int) -> str:
    if isinstance(base, cst.Name) and base.value == "object" and lookup(outer, "object") is None:
        return NONE
    name = qualified_name(base, outer)
    if name is not None and name.startswith(_KERAS_PACKAGES):
        return KERAS
    if isinstance(base, cst.Name):
        found = lookup(outer, base.value)
        classes = [b.node for b in found[1] if b.kind == "class"] if found else []
        if found is not None and len(classes) == 1 and len(found[1]) == 1 and isinstance(classes[0], cst.ClassDef):
            return compile_owner(classes[0], analysis, depth + 1)
    if name is not None and analysis.lookup is not None:
        summary = analysis.lookup.compile_owners(name, analysis.path)
        if summary is not None:
            return summary
    return UNKNOWN


def module_compile_owners(analysis: Analysis) -> Dict[str, str]:
    """What a module offers its importers: for each of its classes, whose ``compile`` it has."""
    result = {}
    for name, bindings in analysis.module_scope.bindings.items():
        classes = [b.node for b in bindings if b.kind == "class"]
        if len(classes) == 1 and len(bindings) == 1 and isinstance(classes[0], cst.ClassDef):
            result[name] = compile_owner(classes[0], analysis)
    return result
