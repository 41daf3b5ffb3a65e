"""One traversal of a module: scopes, bindings, and the rules' hooks.

LibCST's own scope and qualified-name providers are thorough but cost several
times a parse. Migration rules only need to know what a handful of names are
bound to (TensorFlow aliases, strategies, functions), so this module records
the bindings of every scope in a single walk and answers questions about them
afterwards, when each scope is complete (Python decides that a name is local
to a function from every binding in its body, not only the ones above a use).

The same walk feeds the rules: each rule declares ``visit_<NodeType>`` hooks,
and the walk calls them with the node. This module is the bottom layer of the
codemod and knows nothing of rules beyond that duck-typed ``hooks()``: what a
rule is lives in ``rule.py``, and ``checking.py`` drives the rules (``finish``,
``settle``) and the version-guard gate once the walk is over. Which fields of a node
hold code, and ``iter_tree`` over a subtree, are ``tree.py``'s: they know no scope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, Iterator, List, Optional, Protocol, Sequence, Set, Tuple, Union, cast

import libcst as cst

from migrate_tpu.codemod.analysis.tree import NODE_TYPES, child_fields, iter_tree


# Where code takes one way or another: the nodes a version guard may be (``rules/version_guards``).
BranchPoint = Union[cst.If, cst.IfExp, cst.Try, cst.BooleanOperation]


class ProjectFacts(Protocol):
    """What the tree's other modules tell about the file being migrated, as the analysis, the
    syntax stage and the rules ask it (``Analysis.lookup``, ``SourceIndex.lookup``, a rule's
    ``ruled_out_by_text``). ``migration/project``'s ``ProjectLookup`` is the one implementation;
    its ``optimizer_class`` and ``version_values`` are asked for through ``getattr``."""

    def factory_kinds(self, dotted: str, importing_path: str, call: bool = True) -> Optional[FrozenSet[str]]: ...

    def stand_in_classes(self, method: str, instead: str, importing_path: str) -> List[Tuple[str, str]]: ...

    def class_tracing(self, dotted: str, importing_path: str) -> Optional[Tuple[Dict[str, str], Dict[str, str]]]: ...

    def compile_owners(self, dotted: str, importing_path: str) -> Optional[str]: ...


@dataclass
class Binding:
    """One way a name gets a value in a scope."""

    kind: str  # "import", "assign", "param", "def", "class", "other"
    scope: "Scope"
    node: Optional[cst.CSTNode] = None
    # "import": the dotted module path or symbol the name stands for; a relative
    # import keeps its dots (".utils.make_strategy").
    target: Optional[str] = None
    value: Optional[cst.BaseExpression] = None  # "assign"


@dataclass
class Scope:
    kind: str  # "module", "class", "function", "lambda", "comprehension"
    node: cst.CSTNode
    parent: Optional["Scope"]
    name: str = ""
    bindings: Dict[str, List[Binding]] = field(default_factory=dict)
    globals: set = field(default_factory=set)
    nonlocals: set = field(default_factory=set)
    # Class scopes: values assigned to ``self.<attr>`` in the class's methods.
    attributes: Dict[str, List[Tuple[cst.BaseExpression, "Scope"]]] = field(default_factory=dict)
    # Function scopes: parameter names in order, and returned expressions.
    params: List[str] = field(default_factory=list)
    returns: List[cst.BaseExpression] = field(default_factory=list)
    # Answers about this scope's names, kept once the walk is over (see names.py).
    memo: Dict[object, object] = field(default_factory=dict)

    def bind(self, name: str, binding: Binding) -> None:
        self.bindings.setdefault(name, []).append(binding)

    def enclosing_class(self) -> Optional["Scope"]:
        """For a method's scope: the class scope it is defined in."""
        if self.kind == "function" and self.parent is not None and self.parent.kind == "class":
            return self.parent
        return None

    def _method(self) -> "Scope":
        """The scope this code runs in, through the lambdas and comprehensions inside it."""
        method = self
        while method.kind in ("lambda", "comprehension") and method.parent is not None:
            method = method.parent
        return method

    def method_owner(self) -> Optional["Scope"]:
        """The class scope of the method this code runs in (through lambdas and comprehensions)."""
        return self._method().enclosing_class()

    def self_class(self, name: str) -> Optional["Scope"]:
        """The class scope whose instance ``name`` is here: the first parameter of the method
        this code runs in (``self``); None for any other name or outside a method."""
        method = self._method()
        owner = method.enclosing_class()
        return owner if owner is not None and method.params and name == method.params[0] else None

    def module(self) -> "Scope":
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


@dataclass
class Site:
    """Where a node sits: its scope, its statement, and the path from the module."""

    scope: Scope
    statement: Optional[cst.CSTNode]
    path: Tuple[cst.CSTNode, ...]


_STATEMENTS = frozenset(
    {
        cst.SimpleStatementLine,
        cst.If,
        cst.For,
        cst.While,
        cst.With,
        cst.Try,
        cst.FunctionDef,
        cst.ClassDef,
    }
)


def target_names(node: cst.CSTNode) -> Iterator[cst.Name]:
    """Names bound by an assignment target (``a``, ``a, (b, *c)``)."""
    if isinstance(node, cst.Name):
        yield node
    elif isinstance(node, (cst.Tuple, cst.List)):
        for element in node.elements:
            yield from target_names(element.value)
    elif isinstance(node, cst.StarredElement):
        yield from target_names(node.value)


def dotted_name(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


class Analysis(cst.CSTVisitor):
    """Walks a module once; holds its scopes and the sites rules asked about."""

    _order: Dict[int, int]  # set by _top_level_order when first asked

    def __init__(self, module: cst.Module, rules: Sequence = (), lookup: Optional[ProjectFacts] = None, path: str = "", target: str = "2.4") -> None:
        super().__init__()
        self.module = module
        self.rules = list(rules)
        self.lookup = lookup  # cross-module facts
        self.path = path
        self.target = target  # the TensorFlow the code migrates to ("2.4", "latest")
        self.module_scope = Scope("module", module, None)
        self.scope = self.module_scope
        self.scopes_by_node: Dict[int, Scope] = {}
        self.sites: Dict[int, Site] = {}
        self._stack: List[cst.CSTNode] = []
        self._statements: List[cst.CSTNode] = []
        self._body_scopes: Dict[int, Tuple[Scope, cst.CSTNode]] = {}
        self.functions: List[Tuple[cst.FunctionDef, Scope]] = []  # (def, its own scope)
        self.calls_by_name: Dict[str, List[Tuple[cst.Call, Scope]]] = {}
        self.defined_names: set = set()  # every def/class name in the file
        # Names bound by ``from m import a as b`` (b != a): a call through one
        # does not spell the callee's own last name (see ``rule.CallRule``).
        self.renamed_imports: set = set()
        # ``if``/``try`` statements and conditional expressions, and the guards
        # on the TensorFlow version found among them once the walk is over.
        self.branch_points: List[Tuple[BranchPoint, Scope]] = []
        self.guards: list = []  # version_guards.Guard, filled by checking.run_rules
        self._dispatch: Dict[type, List] = {}
        # Rules of one family may ask to be walked together: ``batch_hooks(members)`` gives
        # one hook per node type for all of them (a dozen catalogue tables look at every
        # name; one shared test says which of them care).
        batches: Dict[Callable[[List[Any]], Dict[str, Callable[..., Any]]], List[Any]] = {}
        for rule in self.rules:
            batch = getattr(rule, "batch_hooks", None)
            if batch is not None:
                batches.setdefault(batch, []).append(rule)
                continue
            for node_type, method in type(rule).hooks().items():
                self._add_hook(node_type, getattr(rule, method))
        for batch, members in batches.items():
            for node_type, hook in batch(members).items():
                self._add_hook(node_type, hook)
        self._pops: Dict[int, int] = {}
        self._plans: Dict[type, tuple] = {}
        self._names_in_use: Optional[Set[str]] = None
        # The text of the top-level statements left out of the parse (``partial_parse``):
        # its words are names a new name must avoid too.
        self.unparsed_text = ""
        self.scopes_by_node[id(module)] = self.module_scope

    def _add_hook(self, node_type: str, hook) -> None:
        node_class = getattr(cst, node_type, None)
        if node_class is not None:
            self._dispatch.setdefault(node_class, []).append(hook)

    # -- the walk ---------------------------------------------------------------

    def names_in_use(self) -> Set[str]:
        """Every name read anywhere in the module and every name bound in any scope
        (defs, classes, parameters): what a new name must not be. Computed once, when asked."""
        if self._names_in_use is None:
            used = {node.value for node in iter_tree(self.module) if isinstance(node, cst.Name)}
            used.update(re.findall(r"[^\W\d]\w*", self.unparsed_text))
            for scope in self.scopes_by_node.values():
                used.update(scope.bindings)
            self._names_in_use = used
        return self._names_in_use

    def walk(self) -> None:
        """Record every scope and binding of the module, calling the rules' hooks on the way."""
        self._walk(self.module)

    def _walk(self, node: cst.CSTNode) -> None:
        """Visit ``node`` and its semantic children, reading fields directly.

        LibCST's own ``visit`` rebuilds every node it passes through, even for
        a read-only visitor; reading the dataclass fields, and skipping
        whitespace, commas and parentheses, is several times cheaper. This is
        the hot loop of the whole tool: one table lookup per node gives what to
        do with it (see :meth:`_plan`).
        """
        node_type = type(node)
        plan = self._plans.get(node_type)
        if plan is None:
            plan = self._plan(node_type)
        fields, is_statement, opens_scope, binder, hooks, owns_scope = plan
        stack = self._stack
        stack.append(node)
        if opens_scope and self._body_scopes:
            entry = self._body_scopes.pop(id(node), None)
            if entry is not None:
                self._push(*entry)
        if is_statement:
            self._statements.append(node)
        if binder is not None:
            binder(self, node)
        if hooks:
            for hook in hooks:
                hook(node, self)
        if fields:
            is_node, walk = NODE_TYPES, self._walk
            for name in fields:
                value = getattr(node, name)
                kind = type(value)
                if kind is list or kind is tuple:
                    for item in value:
                        if is_node[type(item)]:
                            walk(item)
                elif is_node[kind]:
                    walk(value)
        if owns_scope:
            for _ in range(self._pops.pop(id(node), 0)):
                # A scope pushed here is never the module's: it has a parent.
                self.scope = cast(Scope, self.scope.parent)
        if is_statement:
            self._statements.pop()
        stack.pop()

    def _plan(self, node_type: type):
        plan = (
            child_fields(node_type),
            node_type in _STATEMENTS,
            node_type in _BODY_TYPES,
            _BINDERS.get(node_type),
            tuple(self._dispatch.get(node_type, ())),
            node_type in _SCOPE_OWNERS,
        )
        self._plans[node_type] = plan
        return plan

    def _push(self, scope: Scope, owner: cst.CSTNode) -> None:
        self.scope = scope
        self._pops[id(owner)] = self._pops.get(id(owner), 0) + 1

    # -- what rules ask while walking -------------------------------------------

    def remember(self, node: cst.CSTNode) -> Site:
        """Record where ``node`` sits (call from a hook while visiting it or a child)."""
        path = tuple(self._stack)
        if not path or path[-1] is not node:
            index = len(path) - 1
            while index >= 0 and path[index] is not node:
                index -= 1
            path = path[: index + 1] if index >= 0 else path + (node,)
        site = Site(self.scope, self._statements[-1] if self._statements else None, path)
        self.sites[id(node)] = site
        return site

    @property
    def parent(self) -> Optional[cst.CSTNode]:
        return self._stack[-2] if len(self._stack) > 1 else None

    def ancestors(self) -> Sequence[cst.CSTNode]:
        return self._stack

    def site(self, node: cst.CSTNode) -> Optional[Site]:
        return self.sites.get(id(node))

    def name_ready(self, name: str, node: cst.CSTNode) -> bool:
        """Whether a fix may write ``name`` at ``node`` (remembered during the walk).

        False only when ``node`` runs as the module is imported (at the top level or in a
        class body there, not in a function) and every binding of ``name`` in the module
        is an import in a later top-level statement: ``tf.x`` written there would raise
        ``NameError``. Unknown cases answer True."""
        site = self.sites.get(id(node))
        if site is None or len(site.path) < 2 or site.path[0] is not self.module:
            return True
        scope = site.scope
        while scope.kind in ("class", "comprehension") and scope.parent is not None:
            scope = scope.parent
        bindings = self.module_scope.bindings.get(name)
        if scope is not self.module_scope or not bindings:
            return True
        order = self._top_level_order()
        here = order.get(id(site.path[1]))
        if here is None:
            return True
        for binding in bindings:
            there = order.get(id(binding.node)) if binding.kind == "import" else None
            if there is None or there <= here:
                return True
        return False

    def _top_level_order(self) -> Dict[int, int]:
        """Index in the module's body of each top-level statement and of each import in one."""
        order = getattr(self, "_order", None)
        if order is None:
            order = self._order = {}
            for index, statement in enumerate(self.module.body):
                order[id(statement)] = index
                if isinstance(statement, cst.SimpleStatementLine):
                    for small in statement.body:
                        order[id(small)] = index
        return order

    def statement_of(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        site = self.sites.get(id(node))
        return site.statement if site else None

    # -- binders ----------------------------------------------------------------

    def _bind_import(self, node: cst.Import) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                name, target = alias.asname.name.value, full
            else:
                name = full.split(".")[0]
                target = name
            self.scope.bind(name, Binding("import", self.scope, node, target=target))

    def _bind_import_from(self, node: cst.ImportFrom) -> None:
        module = dotted_name(node.module) if node.module is not None else ""
        prefix = "." * len(node.relative) + (module or "")
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            imported = dotted_name(alias.name) or ""
            name = imported
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                name = alias.asname.name.value
                if name != imported:
                    self.renamed_imports.add(name)
            joiner = "" if prefix.endswith(".") else "."
            target = f"{prefix}{joiner}{imported}" if prefix else imported
            self.scope.bind(name, Binding("import", self.scope, node, target=target))

    def _bind_assign(self, node: cst.Assign) -> None:
        for assign_target in node.targets:
            self._bind_target(assign_target.target, node.value, node)

    def _bind_ann_assign(self, node: cst.AnnAssign) -> None:
        self._bind_target(node.target, node.value, node)

    def _bind_target(self, target: cst.BaseExpression, value, node) -> None:
        if isinstance(target, cst.Name):
            kind = "assign" if value is not None else "other"
            self.scope.bind(target.value, Binding(kind, self.scope, node, value=value))
        elif isinstance(target, cst.Attribute):
            self._bind_self_attribute(target, value)
        else:
            for name in target_names(target):
                self.scope.bind(name.value, Binding("other", self.scope, node))

    def _bind_self_attribute(self, target: cst.Attribute, value) -> None:
        """``self.x = value`` inside a method: remember it on the class."""
        if value is None or not isinstance(target.value, cst.Name):
            return
        scope = self.scope
        while scope.kind in ("lambda", "comprehension") and scope.parent is not None:
            scope = scope.parent
        owner = scope.enclosing_class()
        if owner is None or not scope.params or target.value.value != scope.params[0]:
            return
        owner.attributes.setdefault(target.attr.value, []).append((value, scope))

    def _bind_other_target(self, node) -> None:
        target = getattr(node, "target", None)
        if target is not None:
            for name in target_names(target):
                self.scope.bind(name.value, Binding("other", self.scope, node))

    def _bind_with_item(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            for name in target_names(node.asname.name):
                self.scope.bind(name.value, Binding("other", self.scope, node))

    def _bind_except(self, node: cst.ExceptHandler) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self.scope.bind(node.name.name.value, Binding("other", self.scope, node))

    def _bind_named_expr(self, node: cst.NamedExpr) -> None:
        scope = self.scope
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        for name in target_names(node.target):
            scope.bind(name.value, Binding("assign", scope, node, value=node.value))

    def _bind_global(self, node: cst.Global) -> None:
        for item in node.names:
            self.scope.globals.add(item.name.value)

    def _bind_nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self.scope.nonlocals.add(item.name.value)

    def _bind_del(self, node: cst.Del) -> None:
        for name in target_names(node.target):
            self.scope.bind(name.value, Binding("other", self.scope, node))

    def _enter_function(self, node: cst.FunctionDef) -> None:
        name = node.name.value
        self.defined_names.add(name)
        self.scope.bind(name, Binding("def", self.scope, node))
        qualified = f"{self.scope.name}.{name}" if self.scope.name else name
        scope = Scope("function", node, self.scope, name=qualified)
        self.scopes_by_node[id(node)] = scope
        self.functions.append((node, scope))
        self.sites[id(node)] = Site(self.scope, node, tuple(self._stack))
        # Parameters and body belong to the function; decorators do not.
        self._body_scopes[id(node.params)] = (scope, node)

    def _enter_params(self, node: cst.Parameters) -> None:
        if self.scope.kind not in ("function", "lambda") or not hasattr(self.scope.node, "params"):
            return
        if self.scope.node.params is not node:
            return
        every = list(node.posonly_params) + list(node.params)
        if isinstance(node.star_arg, cst.Param):
            every.append(node.star_arg)
        every += list(node.kwonly_params)
        if node.star_kwarg is not None:
            every.append(node.star_kwarg)
        for param in every:
            self.scope.params.append(param.name.value)
            self.scope.bind(param.name.value, Binding("param", self.scope, param))

    def _enter_lambda(self, node: cst.Lambda) -> None:
        scope = Scope("lambda", node, self.scope, name=f"{self.scope.name}.<lambda>")
        self.scopes_by_node[id(node)] = scope
        self.sites[id(node)] = Site(self.scope, self._statements[-1] if self._statements else None, tuple(self._stack))
        self._push(scope, node)

    def _enter_class(self, node: cst.ClassDef) -> None:
        name = node.name.value
        self.defined_names.add(name)
        self.scope.bind(name, Binding("class", self.scope, node))
        qualified = f"{self.scope.name}.{name}" if self.scope.name else name
        scope = Scope("class", node, self.scope, name=qualified)
        self.scopes_by_node[id(node)] = scope
        self.sites[id(node)] = Site(self.scope, node, tuple(self._stack))
        self._body_scopes[id(node.body)] = (scope, node)

    def _enter_comprehension(self, node) -> None:
        scope = Scope("comprehension", node, self.scope, name=self.scope.name)
        self._push(scope, node)

    def _note_return(self, node: cst.Return) -> None:
        scope = self.scope
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        if node.value is not None:
            scope.returns.append(node.value)

    def _note_branch_point(self, node: BranchPoint) -> None:
        self.remember(node)
        self.branch_points.append((node, self.scope))

    def _note_or(self, node: cst.BooleanOperation) -> None:
        # ``getattr(s, "run", None) or s.experimental_run_v2``: a fallback, one of the guards.
        left = node.left
        if isinstance(node.operator, cst.Or) and isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "getattr":
            self._note_branch_point(node)

    def _note_call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name):
            self.calls_by_name.setdefault(func.value, []).append((node, self.scope))
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            self.calls_by_name.setdefault("." + func.attr.value, []).append((node, self.scope))


# Nodes whose arrival may open a scope recorded by their owner (a function's
# parameters, a class's body), and the owners that close scopes on leaving.
_BODY_TYPES = frozenset({cst.Parameters, cst.IndentedBlock, cst.SimpleStatementSuite})
_SCOPE_OWNERS = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp})


_BINDERS: Dict[type, Callable[[Analysis, Any], None]] = {
    cst.Import: Analysis._bind_import,
    cst.ImportFrom: Analysis._bind_import_from,
    cst.Assign: Analysis._bind_assign,
    cst.AnnAssign: Analysis._bind_ann_assign,
    cst.AugAssign: Analysis._bind_other_target,
    cst.For: Analysis._bind_other_target,
    cst.CompFor: Analysis._bind_other_target,
    cst.WithItem: Analysis._bind_with_item,
    cst.ExceptHandler: Analysis._bind_except,
    cst.NamedExpr: Analysis._bind_named_expr,
    cst.Global: Analysis._bind_global,
    cst.Nonlocal: Analysis._bind_nonlocal,
    cst.Del: Analysis._bind_del,
    cst.FunctionDef: Analysis._enter_function,
    cst.Parameters: Analysis._enter_params,
    cst.Lambda: Analysis._enter_lambda,
    cst.ClassDef: Analysis._enter_class,
    cst.ListComp: Analysis._enter_comprehension,
    cst.SetComp: Analysis._enter_comprehension,
    cst.DictComp: Analysis._enter_comprehension,
    cst.GeneratorExp: Analysis._enter_comprehension,
    cst.Call: Analysis._note_call,
    cst.Return: Analysis._note_return,
    cst.If: Analysis._note_branch_point,
    cst.IfExp: Analysis._note_branch_point,
    cst.Try: Analysis._note_branch_point,
    cst.BooleanOperation: Analysis._note_or,
}
