"""What the syntax stage knows of a module, from one walk of its ``ast`` tree (``SourceIndex``):
its calls (``CallShape``), which run traced, and how its names are bound (``BoundNames``, in
``bound_names.py``), the facts a rule's ``may_fire`` reads (``syntax_stage.py``).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, List, NamedTuple, Optional, Set, Tuple, Union, cast

from migrate_tpu.codemod.stages.bound_names import BoundNames

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.analysis.walk import ProjectFacts


# Calls that look a name up by a string (``getattr(tf.distribute, "TPUStrategy")``).
_NAME_LOOKUPS = ("getattr", "hasattr", "setattr")

_TYPE_CHECKS = ("isinstance", "issubclass")

_Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


class CallShape(NamedTuple):
    """What a rule can see of one call without LibCST."""

    attribute: Optional[str]  # ``run`` in ``x.run(...)``; None for ``f(...)``
    receiver: Optional[str]  # ``x`` in ``x.run(...)`` when the receiver is a plain name
    positional: int
    keywords: FrozenSet[str]
    starred: bool  # ``*args`` or ``**kwargs``: the rule cannot count arguments
    # (position, value) of each constant positional argument before any ``*args``, and
    # (keyword, value) of each constant keyword argument: ``f('', tpu='')`` has (0, '') and ('tpu', '').
    literals: FrozenSet[Tuple[object, object]] = frozenset()
    # Inside (at any depth) a function decorated with ``tf.function`` or a wrapper of it
    # (``tracing.TRACING``, through this file's imports): the call runs traced.
    traced: bool = False


class _Walk(NamedTuple):
    """What ``SourceIndex``'s walk keeps for itself and ``_mark_traced``, filled in place."""

    assigned: Dict[int, ast.AST]  # id of a Name target -> the value it is given
    functions: List[_Function]  # every def
    methods: Set[int]  # the ids of the defs of class bodies
    wrappers: List[ast.Call]  # ``x.function(...)`` calls
    classes: List[ast.ClassDef]  # with bases: a library's class may trace some methods
    called: Set[str]  # the names called as ``name(...)``


class SourceIndex(BoundNames):
    """The calls of a module and how its names are bound, from one ``ast`` walk."""

    def __init__(self, tree: ast.AST, lookup: Optional[ProjectFacts] = None, path: str = "") -> None:
        super().__init__(tree, lookup, path)
        self.target: Optional[str] = None  # the run's ``--target``; None: any may be meant
        self.calls: List[CallShape] = []
        self.tests: List[ast.expr] = []  # the test of every ``if`` statement and conditional expression
        # The annotations, the names given to ``getattr``/``hasattr``/``setattr`` as literals and
        # the string constants that are identifiers (``"TPUStrategy"``).
        self.annotations: List[ast.expr] = []
        self.name_lookups: Set[str] = set()
        self.identifier_strings: Set[str] = set()
        # The classes each ``isinstance``/``issubclass`` call checks against (its second
        # argument, or that tuple's elements).
        self.type_checks: List[List[ast.expr]] = []
        self._call_index: Dict[int, int] = {}  # id of a Call node -> its place in ``calls``
        self._call_nodes: List[ast.Call] = []  # the Call node of each entry of ``calls``
        # One walk, each node noted by its kind (``_NOTES``: one table lookup a node in the stage's hot loop).
        walk = _Walk({}, [], set(), [], [], set())
        for node in nodes_of(tree):
            note = _NOTES.get(type(node))
            if note is not None:
                note(self, node, walk)
        # A file that makes no ``tf.function``, decorates no def and subclasses nothing runs nothing traced.
        if walk.wrappers or (walk.functions and (walk.classes or any(f.decorator_list for f in walk.functions))):
            self._mark_traced(tree, walk)

    # What the walk notes of each kind of node (``_NOTES``); an assignment comes before its names.
    def _note_name(self, node: ast.Name, walk: _Walk) -> None:
        ctx = type(node.ctx)
        if ctx is not ast.Load:
            self._bound.add(node.id)
            value = walk.assigned.get(id(node)) if ctx is ast.Store else None
            self._bind(node.id, "assign" if value is not None else "other", value)

    def _note_assignment(self, node: Union[ast.Assign, ast.AnnAssign, ast.NamedExpr], walk: _Walk) -> None:
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            if type(target) is ast.Name and node.value is not None:
                walk.assigned[id(target)] = node.value
        if isinstance(node, ast.AnnAssign):
            self.annotations.append(node.annotation)

    def _note_with(self, node: Union[ast.With, ast.AsyncWith], walk: _Walk) -> None:
        for item in node.items:
            if type(item.optional_vars) is ast.Name:
                walk.assigned[id(item.optional_vars)] = item.context_expr

    def _note_parameter(self, node: ast.arg, walk: _Walk) -> None:
        self._bound.add(node.arg)
        self._bind(node.arg, "param", node.annotation)
        if node.annotation is not None:
            self.annotations.append(node.annotation)

    def _note_definition(self, node: Union[_Function, ast.ClassDef], walk: _Walk) -> None:
        if not isinstance(node, ast.ClassDef) and node.returns is not None:
            self.annotations.append(node.returns)
        self._bound.add(node.name)
        self._bind(node.name, "other")
        if isinstance(node, ast.ClassDef):
            walk.methods.update(id(item) for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))
            if node.bases:
                walk.classes.append(node)
        else:
            walk.functions.append(node)

    def _note_other_binding(self, node: ast.AST, walk: _Walk) -> None:
        """``global``/``nonlocal`` names, an ``except ... as`` name, a match pattern's capture."""
        names = node.names if isinstance(node, (ast.Global, ast.Nonlocal)) else [
            getattr(node, "rest" if type(node).__name__ == "MatchMapping" else "name", None)
        ]
        for name in names:
            if name:
                self._bound.add(name)
                self._bind(name, "other")

    def _note_import(self, node: ast.Import, walk: _Walk) -> None:
        self._imports.append(node)
        for alias in node.names:
            if alias.asname:
                self._imported.setdefault(alias.asname, []).append(alias.name)
            else:
                head = alias.name.partition(".")[0]
                self._imported.setdefault(head, []).append(head)

    def _note_import_from(self, node: ast.ImportFrom, walk: _Walk) -> None:
        self._imports.append(node)
        if any(alias.name == "*" for alias in node.names):
            self._star_import = True
        for alias in node.names:
            # A relative import names a module of this project: its target is None here
            # (no absolute name), and kept apart as the analysis spells it (``.compat.X``).
            target = f"{node.module}.{alias.name}" if node.module and not node.level else None
            self._imported.setdefault(alias.asname or alias.name, []).append(target)
            if node.level:
                prefix = "." * node.level + (node.module or "")
                self._relative.setdefault(alias.asname or alias.name, []).append(prefix + ("" if prefix.endswith(".") else ".") + alias.name)

    def _note_call_kind(self, node: ast.Call, walk: _Walk) -> None:
        """The call's shape (``_note_call``), and whether it makes a ``tf.function``, looks a name
        up by a string or checks a type."""
        self._note_call(node)
        func = node.func
        if type(func) is ast.Name:
            walk.called.add(func.id)
        if _last_name(func) == "function" or (type(func) is ast.Call and _last_name(func.func) == "function"):
            walk.wrappers.append(node)  # ``tf.function(f)``, or the factory's ``tf.function(...)(f)``
        elif type(func) is ast.Name and func.id in _NAME_LOOKUPS and len(node.args) >= 2:
            name = node.args[1]
            if type(name) is ast.Constant and isinstance(name.value, str):
                self.name_lookups.add(name.value)
        elif type(func) is ast.Name and func.id in _TYPE_CHECKS and len(node.args) + len(node.keywords) == 2:
            checked = node.args[1] if len(node.args) == 2 else node.keywords[-1].value
            elements = list(checked.elts) if type(checked) is ast.Tuple else [checked]
            self.type_checks.append(elements)
            self._type_checked.update(id(element) for element in elements)

    def _note_attribute(self, node: ast.Attribute, walk: _Walk) -> None:
        self._attributes.setdefault(node.attr, []).append(node)

    def _note_constant(self, node: ast.Constant, walk: _Walk) -> None:
        if type(node.value) is str and node.value.isidentifier():
            self.identifier_strings.add(node.value)

    def _note_test(self, node: Union[ast.If, ast.IfExp], walk: _Walk) -> None:
        self.tests.append(node.test)

    def _mark_traced(self, tree: ast.AST, walk: _Walk) -> None:
        """Mark the calls in the bodies of functions that run traced, as the LibCST analysis finds them
        (``eager_run/traced.traced_functions``): a def with a decorator naming a tracing wrapper
        (``tracing.TRACING``), a def whose name (unless the file also calls ``name(...)``: the analysis
        then asks where), or a method whose ``self.name``, is passed to ``tf.function(...)`` anywhere in
        the file (``tracing.traced_argument``'s forms), a lambda passed to it, and an undecorated method
        that a known library base class runs traced (``tracing.LIBRARY_TRACED_METHODS``: Keras
        ``train_step``, Orbit's). A name must reach the wrapper through imports only (no other binding of
        its head in the file), and by an import the module runs itself (not one inside a function, which
        other functions do not see), so a call is marked only where the analysis finds it traced too; what
        the analysis also follows (base classes of other modules, helpers called only from traced code)
        is not marked here, and such files go on to LibCST."""
        from migrate_tpu.codemod.analysis.tracing import LIBRARY_TRACED_METHODS

        traces = self._traces
        # Methods a library base class runs traced: {id of the def}.
        library_traced: Set[int] = set()
        for class_def in walk.classes:
            steps: Set[str] = set()
            for base in class_def.bases:
                names = self._imported_as(base)
                if names and all(name in LIBRARY_TRACED_METHODS for name in names):
                    steps.update(*(LIBRARY_TRACED_METHODS[name] for name in names))
            library_traced.update(
                id(item) for item in class_def.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in steps and not item.decorator_list
            )

        wrapped_names: Set[str] = set()
        wrapped_methods: Set[str] = set()
        bodies: List[ast.AST] = []  # what runs traced: the lambdas passed, then the functions' statements
        for call in walk.wrappers:
            first = self._traced_argument(call)
            if isinstance(first, ast.Name):
                wrapped_names.add(first.id)
            elif isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name):
                wrapped_methods.add(first.attr)
            elif isinstance(first, ast.Lambda):
                bodies.append(first.body)
        for function in walk.functions:
            name = function.name
            if id(function) in walk.methods:
                wrapped = name in wrapped_methods
            else:  # a def the file also calls by name may run eagerly there: LibCST's analysis decides
                wrapped = name in wrapped_names and name not in walk.called
            if id(function) in library_traced or wrapped or any(traces(decorator) for decorator in function.decorator_list):
                bodies.extend(function.body)
        for body in bodies:
            for node in nodes_of(body):
                place = self._call_index.get(id(node)) if type(node) is ast.Call else None
                if place is not None:
                    self.calls[place] = self.calls[place]._replace(traced=True)

    def _traced_argument(self, call: ast.Call) -> Optional[ast.expr]:
        """What a ``tf.function`` call traces, in the forms ``tracing.traced_argument`` reads:
        ``tf.function(f, ...)``, ``tf.function(func=f)``, ``tf.function(...)(f)``."""
        func = call.func
        if isinstance(func, ast.Call):
            if not self._traces(func.func) or _function_argument(func) is not None:
                return None  # not a factory of tf.function, or ``tf.function(f)(x)``
            return call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None
        return _function_argument(call) if self._traces(func) else None

    def _traces(self, decorator: ast.expr) -> bool:
        """Whether ``decorator`` (or what it calls) is a tracing wrapper (``tracing.TRACING``)."""
        from migrate_tpu.codemod.analysis.tracing import TRACING

        names = self._imported_as(decorator.func if isinstance(decorator, ast.Call) else decorator)
        return names is not None and all(name in TRACING for name in names)

    def passes_traced_function(self, place: int) -> bool:
        """Whether the first argument (or ``fn=``) of the call ``calls[place]`` is a function this file makes a
        ``tf.function`` where the call sees it, as the analysis resolves it
        (``eager_run/callables.Callables.resolve``, then its traced functions): a name that the scope the
        analysis finds it in (the call's own, or one around it that is no class) binds only by a ``def``
        decorated with a tracing wrapper; or ``self.name`` in a method, where the only binding of ``name``
        in the method's class body is such a ``def``. ``run`` takes such a function traced, so TPU301 has
        nothing to say of the call. On tf-models-official 2.6.0, four of the five files LibCST parsed for
        nothing (``distribution.run(step_fn)`` after ``@tf.function def step_fn``)."""
        call = self._call_nodes[place]
        first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "fn"), None)
        if first is None or isinstance(first, ast.Starred):
            return False
        path = self._path_to(call)
        if path is None:
            return False
        scopes = _scopes_around(path, call)
        if isinstance(first, ast.Name):
            for index, scope in enumerate([*scopes, self._tree]):
                if index and isinstance(scope, ast.ClassDef):
                    continue  # a class body is seen only from itself
                bound = _scope_bindings(scope, first.id)
                if bound:
                    return len(bound) == 1 and self._traced_def(bound[0])
            return False
        if isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name):
            # The method this code runs in (through lambdas and comprehensions), and its class.
            methods = [index for index, scope in enumerate(scopes) if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
            if not methods or isinstance(scopes[methods[0]], ast.ClassDef):
                return False
            method = scopes[methods[0]]
            owner = scopes[methods[0] + 1] if methods[0] + 1 < len(scopes) else None
            if not isinstance(owner, ast.ClassDef) or _first_parameter(method) != first.value.id:
                return False
            bound = _scope_bindings(owner, first.attr)
            return len(bound) == 1 and self._traced_def(bound[0])
        return False

    def calls_node(self, place: int) -> ast.Call:
        """The ``ast`` node of ``calls[place]``."""
        return self._call_nodes[place]

    def self_attribute_values(self, place: int) -> Optional[List[ast.expr]]:
        """For a call ``self.X.method(...)`` (``calls[place]``) in a method whose first parameter
        is ``self``: every value the class's own methods give ``self.X`` (``self.X = value``,
        directly in a method's body or in its lambdas and comprehensions, not in a def nested
        in it), as the analysis records them (``Analysis._bind_self_attribute``) and
        ``StrategyFacts`` reads them. None for any other call."""
        call = self._call_nodes[place]
        func = call.func
        receiver = func.value if isinstance(func, ast.Attribute) else None
        if not isinstance(receiver, ast.Attribute) or not isinstance(receiver.value, ast.Name):
            return None
        path = self._path_to(call)
        if path is None:
            return None
        scopes = _scopes_around(path, call)
        methods = [index for index, scope in enumerate(scopes) if not isinstance(scope, (ast.Lambda, *_COMPREHENSIONS))]
        if not methods or not isinstance(scopes[methods[0]], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        owner = scopes[methods[0] + 1] if methods[0] + 1 < len(scopes) else None
        if not isinstance(owner, ast.ClassDef) or _first_parameter(scopes[methods[0]]) != receiver.value.id:
            return None
        values: List[ast.expr] = []
        for method in owner.body:
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                me = _first_parameter(method)
                if me is not None:
                    values.extend(_self_assignments(method, me, receiver.attr))
        return values

    def _traced_def(self, node: ast.AST) -> bool:
        """A def decorated with a tracing wrapper (as ``_mark_traced`` counts them)."""
        return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(self._traces(d) for d in node.decorator_list)

    def _path_to(self, target: ast.expr) -> Optional[List[ast.AST]]:
        """The nodes from the module down to ``target`` (both left out), found by descending
        only into nodes whose lines hold it: a few dozen steps, not a walk of the file."""
        path: List[ast.AST] = []
        first, last = target.lineno, cast(int, target.end_lineno)  # set on every parsed node

        def descend(node: ast.AST) -> bool:
            for child in ast.iter_child_nodes(node):
                if child is target:
                    return True
                start: Optional[int] = getattr(child, "lineno", None)
                end: int = getattr(child, "end_lineno", 0)  # a node with a ``lineno`` has its ``end_lineno``
                if start is not None and not (start <= first and last <= end):
                    continue
                path.append(child)
                if descend(child):
                    return True
                path.pop()
            return False

        return path if descend(self._tree) else None

    def _note_call(self, node: ast.Call) -> None:
        func = node.func
        attribute = receiver = None
        if isinstance(func, ast.Attribute):
            attribute = func.attr
            if isinstance(func.value, ast.Name):
                receiver = func.value.id
        starred = any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)
        keywords = frozenset(k.arg for k in node.keywords if k.arg is not None)
        literals: List[Tuple[object, object]] = []
        for position, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                break
            if isinstance(arg, ast.Constant):
                literals.append((position, arg.value))
        literals.extend((k.arg, k.value.value) for k in node.keywords if k.arg is not None and isinstance(k.value, ast.Constant))
        self._call_index[id(node)] = len(self.calls)
        self._call_nodes.append(node)
        self.calls.append(CallShape(attribute, receiver, len(node.args), keywords, starred, frozenset(literals)))


# What the walk notes of each kind of node (``SourceIndex.__init__``).
_NOTES: Dict[type, Callable[[SourceIndex, Any, _Walk], None]] = {
    ast.Name: SourceIndex._note_name, ast.Assign: SourceIndex._note_assignment, ast.With: SourceIndex._note_with, ast.AsyncWith: SourceIndex._note_with,
    ast.AnnAssign: SourceIndex._note_assignment, ast.NamedExpr: SourceIndex._note_assignment, ast.arg: SourceIndex._note_parameter,
    ast.FunctionDef: SourceIndex._note_definition, ast.AsyncFunctionDef: SourceIndex._note_definition, ast.ClassDef: SourceIndex._note_definition,
    ast.Global: SourceIndex._note_other_binding, ast.Nonlocal: SourceIndex._note_other_binding, ast.ExceptHandler: SourceIndex._note_other_binding,
    **{kind: SourceIndex._note_other_binding for kind in (getattr(ast, name, None) for name in ("MatchAs", "MatchStar", "MatchMapping")) if kind},
    ast.Import: SourceIndex._note_import, ast.ImportFrom: SourceIndex._note_import_from, ast.Call: SourceIndex._note_call_kind,
    ast.Attribute: SourceIndex._note_attribute, ast.Constant: SourceIndex._note_constant, ast.If: SourceIndex._note_test, ast.IfExp: SourceIndex._note_test,
}


def _last_name(func: ast.expr) -> str:
    """``function`` of ``tf.function`` or of ``function``; "" for anything else."""
    return func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""


def _function_argument(call: ast.Call) -> Optional[ast.expr]:
    """The first positional argument of ``call``, or its ``func=`` (``tracing._function_argument``)."""
    if call.args:
        return None if isinstance(call.args[0], ast.Starred) else call.args[0]
    return next((k.value for k in call.keywords if k.arg == "func"), None)


# Nodes that open a scope of their own for what their body holds.
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, *_COMPREHENSIONS)


def _self_assignments(method: _Function, me: str, attribute: str) -> List[ast.expr]:
    """The values ``me.attribute = value`` gives in ``method``'s body, its lambdas and
    comprehensions included, its nested defs and classes not (their ``self`` is another)."""
    found: List[ast.expr] = []
    pending: List[ast.AST] = list(method.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr == attribute and isinstance(target.value, ast.Name) and target.value.id == me:
                    found.append(node.value)
        pending.extend(ast.iter_child_nodes(node))
    return found


def _scopes_around(path: List[ast.AST], target: ast.AST) -> List[ast.AST]:
    """The scopes around ``target`` at the end of ``path`` (``SourceIndex._path_to``), innermost first:
    a def, class or lambda counts only for what sits in its body (its decorators, bases,
    defaults and annotations run in the scope around it); a comprehension always counts
    (its first iterable runs outside it: taking it as inside makes a class body look
    farther away, never nearer, which only keeps a file parsed)."""
    scopes: List[ast.AST] = []
    for node, below in zip(path, path[1:] + [target]):
        if not isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.Lambda):
            inside = below is node.body
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inside = any(below is statement for statement in node.body)
        else:
            inside = True
        if inside:
            scopes.append(node)
    scopes.reverse()
    return scopes


def _first_parameter(function: ast.AST) -> Optional[str]:
    """The name of a def's first parameter, in the analysis's order (``Scope.params``); None for
    what is no def (the callers pass defs only)."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return None
    arguments = function.args
    every = [*getattr(arguments, "posonlyargs", []), *arguments.args]
    if arguments.vararg is not None:
        every.append(arguments.vararg)
    every += arguments.kwonlyargs
    if arguments.kwarg is not None:
        every.append(arguments.kwarg)
    return every[0].arg if every else None


def _scope_bindings(scope: ast.AST, name: str) -> List[ast.AST]:
    """What binds ``name`` in ``scope`` (the module, a def, a class, a lambda or a
    comprehension) itself, a superset: a def or class of that name (the node), and any other
    binding found in it outside the bodies of its defs and classes (a parameter, an
    assignment, a loop, an import, a ``global``, a walrus or a comprehension's target, even
    one that binds elsewhere: the statement or node). A star import binds every name."""
    found: List[ast.AST] = []
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        found += [arg for arg in ast.walk(scope.args) if isinstance(arg, ast.arg) and arg.arg == name]
        pending: List[ast.AST] = list(scope.body) if isinstance(scope.body, list) else [scope.body]
    elif isinstance(scope, (ast.Module, ast.ClassDef)):
        pending = list(scope.body)
    else:
        pending = [scope]  # a comprehension: its targets and what it holds
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                found.append(node)
            # Its decorators, bases and defaults run here: a walrus there binds here.
            if isinstance(node, ast.ClassDef):
                pending.extend(node.bases)
                pending.extend(keyword.value for keyword in node.keywords)
            else:
                pending.extend(ast.iter_child_nodes(node.args))
            pending.extend(node.decorator_list)
            continue
        if (
            (isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id == name)
            or (isinstance(node, ast.alias) and (node.asname or node.name.partition(".")[0]) in (name, "*"))
            or (isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names)
            or (isinstance(node, ast.ExceptHandler) and node.name == name)
            or (isinstance(node, ast.arg) and node.arg == name)  # a lambda's, inside: more than binds here
            or getattr(node, "name", None) == name  # a match pattern's capture (MatchAs, MatchStar)
            or getattr(node, "rest", None) == name  # MatchMapping's ``**rest``
        ):
            found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


def nodes_of(tree: ast.AST):
    """Every node of ``tree``, each parent before its children (as ``ast.walk``, in another
    order), without the ``Load``/``Store`` context objects and operators ``ast.walk`` also gives."""
    stack = [tree]
    pop, push, AST = stack.pop, stack.append, ast.AST
    while stack:
        node = pop()
        yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, AST):
                        push(item)
            elif isinstance(value, AST) and not isinstance(value, _LEAVES):
                push(value)


# Nodes without children that no rule asks about.
_LEAVES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
