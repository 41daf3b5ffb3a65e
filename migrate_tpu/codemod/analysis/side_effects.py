"""What in a function body would behave differently, or fail, inside ``tf.function``.

Inside a ``tf.function`` the Python code of the body runs once per trace, not
once per call: ``print``, ``.numpy()``, Python random numbers, I/O and changes
to outer Python objects then behave differently. And a ``tf.function`` may
create variables only on its first trace: a body that builds ``tf.Variable``s
or Keras layers, models, optimizers or metrics on every call fails once wrapped
(checked on TF 2.4.1, plain and under ``MirroredStrategy.run``: ``ValueError:
tf.function-decorated function tried to create variables on non-first call``).
A fix that wraps such a body is unsafe; this module names what it found, so the
user knows why.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Set, Union, cast

import libcst as cst

from migrate_tpu.codemod.analysis.tree import iter_tree
from migrate_tpu.codemod.analysis.walk import Analysis, Scope
from migrate_tpu.codemod.analysis.names import lookup, qualified_name

_IMPURE_BUILTINS = frozenset({"print", "open", "input", "breakpoint", "exec", "eval"})
_IMPURE_MODULES = (
    "random",
    "numpy.random",
    "time",
    "os",
    "sys",
    "io",
    "logging",
    "absl.logging",
    "shutil",
    "subprocess",
    "pickle",
    "json",
    "csv",
    "socket",
    "tempfile",
    "pathlib",
)
# Conversions that need a concrete value: they fail on a traced tensor.
_CONCRETE_BUILTINS = frozenset({"float", "int", "bool", "complex"})
_CONCRETE_METHODS = frozenset({"item", "tolist"})
_MUTATORS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "update", "add", "discard", "setdefault", "popitem", "write", "writelines", "sort", "reverse"}
)
_MAX_DEPTH = 3
# Constructors that create variables when called.
_VARIABLE_MAKERS = frozenset(
    {
        "tensorflow.Variable",
        "tensorflow.compat.v1.Variable",
        "tensorflow.compat.v1.get_variable",
        "tensorflow.keras.Sequential",
        "tensorflow.keras.Model",
        "tensorflow.keras.models.Sequential",
        "tensorflow.keras.models.Model",
        "tensorflow.keras.models.clone_model",
        "tensorflow.keras.models.load_model",
        "tensorflow.keras.mixed_precision.LossScaleOptimizer",
        "tensorflow.keras.mixed_precision.experimental.LossScaleOptimizer",
    }
)
# Modules whose classes (capitalised names) hold variables once built.
_VARIABLE_MODULES = (
    "tensorflow.keras.layers.",
    "tensorflow.keras.optimizers.",
    "tensorflow.keras.metrics.",
    "tensorflow.keras.applications.",
    "tensorflow.keras.experimental.",
    "keras.layers.",
    "keras.optimizers.",
    "keras.metrics.",
    "keras.applications.",
)
_NO_VARIABLES = ("tensorflow.keras.optimizers.schedules.", "keras.optimizers.schedules.")
# Base classes whose subclasses hold variables.
_VARIABLE_BASES = ("tensorflow.Module", "tensorflow.keras.", "keras.")


def creates_variables(name: str) -> bool:
    """Whether calling the TensorFlow callable ``name`` creates variables."""
    if name in _VARIABLE_MAKERS or name.startswith("keras.") and name[len("keras."):] in ("Sequential", "Model"):
        return True
    if name.startswith(_NO_VARIABLES):
        return False
    last = name.rsplit(".", 1)[-1]
    return name.startswith(_VARIABLE_MODULES) and last[:1].isupper()


class _Finder:
    def __init__(self, analysis: Analysis, scope: Scope, depth: int, seen: Set[int]) -> None:
        self.analysis = analysis
        self.scope = scope
        self.depth = depth
        self.seen = seen
        self.reasons: List[str] = []
        self.local = {name for name, bindings in scope.bindings.items() if all(b.kind != "param" for b in bindings)}
        self._not_reads: Set[int] = set()
        self.reads: List[str] = []

    def _add(self, reason: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)

    def _outer(self, expr: cst.BaseExpression) -> Optional[str]:
        """The outer (non-local) name an attribute/subscript chain starts from."""
        while isinstance(expr, (cst.Attribute, cst.Subscript)):
            expr = expr.value
        if isinstance(expr, cst.Name) and expr.value not in self.local:
            return expr.value
        return None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            if func.attr.value == "numpy":
                self._add("`.numpy()`")
                return
            if func.attr.value in _CONCRETE_METHODS and not node.args:
                self._add(f"`.{func.attr.value}()`")
                return
            if func.attr.value in _MUTATORS:
                owner = self._outer(func.value)
                if owner is not None and qualified_name(func.value, self.scope) is None:
                    self._add(f"a change to `{owner}`")
                    return
        if isinstance(func, cst.Name) and func.value in _IMPURE_BUILTINS and lookup(self.scope, func.value) is None:
            self._add(f"`{func.value}()`")
            return
        if (
            isinstance(func, cst.Name)
            and func.value in _CONCRETE_BUILTINS
            and lookup(self.scope, func.value) is None
            and node.args
            and not isinstance(node.args[0].value, (cst.Integer, cst.Float, cst.SimpleString))
        ):
            self._add(f"`{func.value}()` of a value that is a tensor while tracing")
            return
        name = qualified_name(func, self.scope)
        if name is not None and creates_variables(name) or name is None and self._builds_module(func):
            label = self.analysis.module.code_for_node(func).strip()
            self._add(f"`{label}(...)` (creates variables)")
            return
        if name is not None:
            for module in _IMPURE_MODULES:
                if name == module or name.startswith(module + "."):
                    self._add(f"`{name}()`")
                    return
        self._follow(func)

    def _builds_module(self, func: cst.BaseExpression) -> bool:
        """A class of this file that subclasses a Keras layer/model or ``tf.Module``."""
        if not isinstance(func, cst.Name):
            return False
        found = lookup(self.scope, func.value)
        if found is None:
            return False
        classes = [b for b in found[1] if b.kind == "class"]
        for binding in classes:
            for base in cast(cst.ClassDef, binding.node).bases:
                base_name = qualified_name(base.value, binding.scope) or ""
                if base_name == "tensorflow.Module" or base_name.startswith(_VARIABLE_BASES[1:]):
                    return True
        return False

    def _follow(self, func: cst.BaseExpression) -> None:
        """Look into functions of the same file that the body calls."""
        if self.depth >= _MAX_DEPTH:
            return
        target = None
        if isinstance(func, cst.Name):
            found = lookup(self.scope, func.value)
            if found is not None:
                defs = [b.node for b in found[1] if b.kind == "def"]
                target = cast(cst.FunctionDef, defs[0]) if len(defs) == 1 else None
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            method = self.scope
            owner = method.enclosing_class()
            if owner is not None and method.params and func.value.value == method.params[0]:
                defs = [b.node for b in owner.bindings.get(func.attr.value, []) if b.kind == "def"]
                target = cast(cst.FunctionDef, defs[0]) if len(defs) == 1 else None
        if target is not None and id(target) not in self.seen:
            for reason in side_effects(target, self.analysis, self.depth + 1, self.seen):
                self._add(reason if "(in" in reason else f"{reason} (in `{target.name.value}`)")

    def _check_targets(self, targets) -> None:
        for target in targets:
            if isinstance(target, (cst.Attribute, cst.Subscript)):
                owner = self._outer(target)
                if owner is not None:
                    self._add(f"an assignment to `{self.analysis.module.code_for_node(target).strip()}`")
            elif isinstance(target, cst.Name) and (target.value in self.scope.globals or target.value in self.scope.nonlocals):
                self._add(f"a rebinding of outer `{target.value}`")

    def visit_Assign(self, node: cst.Assign) -> None:
        self._check_targets([t.target for t in node.targets])

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_targets([node.target])

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check_targets([node.target])

    def visit_Yield(self, node: cst.Yield) -> None:
        self._add("`yield`")

    # Reads of outer names that are rebound elsewhere: a tf.function keeps the
    # Python value it saw while tracing.
    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._not_reads.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._not_reads.add(id(node.keyword))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._not_reads and node.value not in self.local:
            self.reads.append(node.value)

    def check_reads(self) -> None:
        for name in dict.fromkeys(self.reads):
            found = lookup(self.scope, name)
            if found is None or found[0] is self.scope:
                continue
            bindings = [b for b in found[1] if b.kind in ("assign", "other")]
            if len(bindings) >= 2 or any(b.kind == "other" for b in bindings):
                self._add(f"a read of `{name}`, which is rebound elsewhere")


def side_effects(function: cst.CSTNode, analysis: Analysis, depth: int = 0, seen: Optional[Set[int]] = None) -> List[str]:
    """Reasons the body of ``function`` (a ``def`` or a lambda) is not pure, at most three."""
    seen = set() if seen is None else seen
    seen.add(id(function))
    scope = analysis.scopes_by_node.get(id(function))
    if scope is None:
        return ["its body is not in view"]
    finder = _Finder(analysis, scope, depth, seen)
    hooks: Dict[type, Callable[[Any], None]] = {
        cst.Call: finder.visit_Call,
        cst.Assign: finder.visit_Assign,
        cst.AugAssign: finder.visit_AugAssign,
        cst.AnnAssign: finder.visit_AnnAssign,
        cst.Yield: finder.visit_Yield,
        cst.Attribute: finder.visit_Attribute,
        cst.Arg: finder.visit_Arg,
        cst.Name: finder.visit_Name,
    }
    for node in iter_tree(cast("Union[cst.FunctionDef, cst.Lambda]", function).body):
        hook = hooks.get(type(node))
        if hook is not None:
            hook(node)
    finder.check_reads()
    return finder.reasons[:3]
