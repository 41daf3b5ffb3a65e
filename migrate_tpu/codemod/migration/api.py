"""Migrate one module's source text: the codemod's whole interface to the engine.

parse -> one analysis walk (bindings + every rule's hooks) -> findings ->
suppressions -> chosen changes applied along their paths -> code -> the result
must parse. Findings leave as plain data (no tree nodes), so they can cross
process boundaries and be cached.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple, TypedDict, cast

import libcst as cst

from migrate_tpu.codemod.analysis.tree import iter_tree
from migrate_tpu.codemod.analysis.walk import Analysis, ProjectFacts
from migrate_tpu.codemod.foundation.findings import Report
from migrate_tpu.codemod.foundation.lines import Start, StatementLines
from migrate_tpu.codemod.foundation.options import Options
from migrate_tpu.codemod.foundation.parsing import parse_module
from migrate_tpu.codemod.framework.edits import Layout, add_imports, apply_changes, drop_unused_imports, splice_code, statement_starts
from migrate_tpu.codemod.foundation.places import LineMap
from migrate_tpu.codemod.foundation.positions import Span, spans
from migrate_tpu.codemod.rules.catalogue import select_rules
from migrate_tpu.codemod.migration.checking import run_rules
from migrate_tpu.codemod.framework.rule import Finding, Safety
from migrate_tpu.codemod.stages import partial_parse, syntax_stage


@dataclass
class Outcome:
    code: str
    reports: List[Report]
    # False when the prefilter's second stage found nothing any rule could act on: no LibCST parse.
    parsed: bool = True

    @property
    def remaining(self) -> List[Report]:
        return [r for r in self.reports if not r.applied]


class OutputDoesNotParse(Exception):
    """The rules produced code that does not parse; nothing may be written."""


class _Memo(TypedDict, total=False):
    """What ``_code`` keeps between its calls for one source."""

    starts: Optional[List[int]]  # ``edits.statement_starts``
    texts: Dict[int, Tuple[cst.CSTNode, str]]  # ``edits.splice_code``'s statements generated


class _Request(NamedTuple):
    """What the migration of one text is asked with besides the text and its options."""

    lookup: Optional[ProjectFacts] = None  # the project's other modules
    path: str = ""
    wrap: bool = True  # a fix may wrap the call it lengthens (``Change.wrap``); not in a doctest
    # receives the analysis ("analysis") when the module is parsed, its guards found and its rules run
    analysed: Optional[Dict[str, Analysis]] = None


class _Parsed(NamedTuple):
    """One text parsed and walked, and what placing its findings and fixing it share."""

    analysis: Analysis
    source: str
    hidden_text: str  # the text of the statements left out of the parse (``partial_parse``)
    wrapping: bool  # a fix may wrap the call it lengthens
    memo: _Memo
    module_tree: Optional[ast.Module]  # the standard library's tree of ``source``
    statement_lines: Optional[StatementLines]
    directives: Dict[int, Optional[Tuple[str, ...]]]  # line -> the rules ``# migrate-tpu: ignore`` names there


_DIRECTIVE = re.compile(r"#\s*migrate-tpu:\s*ignore\b(?:\[([^\]]*)\])?", re.IGNORECASE)


def _directives(source: str) -> Dict[int, Optional[Tuple[str, ...]]]:
    """Line -> rule ids a ``# migrate-tpu: ignore[...]`` comment there names (None: all)."""
    found: Dict[int, Optional[Tuple[str, ...]]] = {}
    if "migrate-tpu:" not in source.lower():
        return found
    for number, line in enumerate(source.splitlines(), start=1):
        match = _DIRECTIVE.search(line)
        if match:
            ids = match.group(1)
            found[number] = tuple(p.strip().upper() for p in ids.split(",") if p.strip()) if ids else None
    return found


def _suppressed(rule_id: str, lines: Sequence[int], directives) -> bool:
    for line in lines:
        if line in directives:
            ids = directives[line]
            if ids is None or any(rule_id.startswith(i) for i in ids):
                return True
    return False


def _output_compiles(code: str, generated: Optional[List[str]]) -> bool:
    """Whether the migrated ``code`` parses with CPython's grammar (``_compiles``).

    When it was spliced, everything but the ``generated`` statements is the source's own
    text, which parsed (the splice needs its tree), and each generated statement is a
    whole top-level statement starting at column 0: the grammar reads a module one
    top-level statement at a time, so those statements are parsed on their own.
    """
    if generated is not None:
        return all(_compiles(text) for text in generated)
    return _compiles(code)


def _compiles(code: str) -> bool:
    try:
        compile(code, "<migrated>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        return True
    except (SyntaxError, ValueError):
        return False


def migrate(source: str, options: Options = Options(), *, lookup=None, path: str = "") -> Outcome:
    """Migrate ``source`` and the examples of its docstrings (``doctests.py``); raises
    ``libcst.ParserSyntaxError`` when it does not parse."""
    from migrate_tpu.codemod.migration import doctests

    if not doctests.may_hold_examples(source):
        return _migrate_code(source, options, _Request(lookup, path))
    # One standard-library tree for the prefilter's second stage, the splice and the doctests
    # (a module's: ``compile`` in "exec" mode, which typeshed types as any ``ast.AST``).
    tree = cast(Optional[ast.Module], syntax_stage.parse(source))
    analysed: Dict[str, Analysis] = {}  # the code's own analysis, when it parsed the module
    outcome = _migrate_code(source, options, _Request(lookup, path, analysed=analysed), tree)
    in_doctest = _Request(lookup, path, wrap=False)

    def migrate_snippet(snippet: str, select: Optional[Tuple[str, ...]], ignore: Tuple[str, ...] = ()) -> Tuple[List[Report], str]:
        """The findings on ``snippet`` and its fixed code (with only the ``select`` rules' fixes),
        the ``ignore`` rules left out."""
        # ``check`` places every finding (and marks those a fix would apply); ``fix`` makes the code.
        # No call is wrapped: a doctest's fixes are put back line for line.
        if select is not None:
            narrowed = replace(options, mode="fix", want_edits=False, select=select or ("NONE",))
            return [], _migrate_code(snippet, narrowed, in_doctest).code
        base = replace(options, ignore=tuple(options.ignore) + tuple(ignore)) if ignore else options
        checked = _migrate_code(snippet, replace(base, mode="check", want_edits=False), in_doctest)
        if not any(r.applied for r in checked.reports):
            return checked.reports, snippet
        return checked.reports, _migrate_code(snippet, replace(base, mode="fix", want_edits=False), in_doctest).code

    edits, reports = doctests.migrate_doctests(source, migrate_snippet, tree)
    if not reports:
        return outcome
    analysis = analysed.get("analysis")
    if analysis is None:
        analysis = _guards_only(source, options, lookup, path)
    edits = _keep_legacy_doctests(edits, reports, analysis)
    code = outcome.code
    if edits and options.mode != "check":
        line_of = LineMap(source, code) if code != source else (lambda line: line)
        code, missed = doctests.apply_edits(code, edits, line_of)
        for report in reports:
            if report.applied and report.line in missed:  # the code's own fixes moved that line
                report.applied = False
                report.safety = Safety.MANUAL.value
                report.message += doctests.NOTE
    if options.want_edits:
        for edit in edits:
            for report in reports:
                if report.applied and report.line == edit.line:
                    report.edits.append({"line": edit.line, "column": 1, "end_line": edit.line, "end_column": len(edit.before) + 1, "content": edit.after})
                    break
    merged = sorted(outcome.reports + reports, key=lambda r: (r.line, r.column, r.rule))
    return Outcome(code, merged)


def _guards_only(source: str, options: Options, lookup: Optional[ProjectFacts], path: str) -> Optional[Analysis]:
    """The module's guards, on a walk without rules, for a file whose doctests have findings
    where the code's own run did not parse the module (the prefilter's second stage may have
    ruled the code out); None where it does not parse (the code's own run reports that)."""
    try:
        module = parse_module(source)
    except Exception:
        return None
    analysis = Analysis(module, [], lookup=lookup, path=path)
    analysis.target = options.target
    run_rules(analysis)
    return analysis


def _keep_legacy_doctests(edits: list, reports: List[Report], analysis: Optional[Analysis]) -> list:
    """The doctest edits outside the legacy branches of the module's guards; a doctest finding in
    one (a docstring of a function defined there) becomes a note naming the guard, as in code.

    The guards are those of ``analysis``: the code's own when it parsed the module, else
    :func:`_guards_only`'s (None: the module does not parse, every edit is kept)."""
    from migrate_tpu.codemod.rules.version_guards.guards import guard_note

    if analysis is None:
        return edits
    module = analysis.module
    roots = [(root, guard) for guard in analysis.guards for root in guard.legacy]
    if not roots:
        return edits
    located = spans(module, [root for root, _ in roots])
    regions = []
    for root, guard in roots:
        span = located.get(id(root))
        if span is not None:
            regions.append((span[0], span[2], guard))
    left: set = set()
    for report in reports:
        inside = [r for r in regions if r[0] <= report.line <= r[1]]
        if not inside:
            continue
        guard = min(inside, key=lambda r: r[1] - r[0])[2]  # the innermost guard names it
        left.add(report.line)
        report.applied = False
        report.safety = Safety.MANUAL.value
        report.fix_title = None
        report.change_lines = []
        report.message += guard_note(guard)
    return [edit for edit in edits if edit.line not in left]


def _migrate_code(source: str, options: Options, request: _Request, tree: Optional[ast.AST] = None) -> Outcome:
    """Migrate the code of ``source`` (its doctests aside); ``tree``: its standard-library
    tree, when the caller has made it."""
    rule_classes = select_rules(options.select, options.ignore, options.target)
    # The prefilter's second stage: no LibCST parse where no rule can find anything.
    needed, tree = syntax_stage.may_fire(source, rule_classes, request.lookup, request.path, tree, target=options.target)
    if not needed:
        return Outcome(source, [], parsed=False)
    if request.analysed is None:  # (the doctests read the analysis of the whole module)
        if tree is None:
            tree = syntax_stage.parse(source)
        # LibCST parses only the top-level statements the rules may need (``partial_parse``).
        partial = partial_parse.leave_out(source, tree, rule_classes)
        if partial is not None:
            try:
                outcome = _migrate_parsed(partial.text, partial.tree, options, rule_classes, hidden_text=partial.hidden_text, request=request)
            except Exception:  # the whole module, parsed, tells what went wrong
                outcome = None
            code = partial.restore(outcome.code) if outcome is not None else None
            if outcome is not None and code is not None:
                outcome.code = code
                return outcome
    return _migrate_parsed(source, tree, options, rule_classes, request=request)


def _migrate_parsed(
    source: str, tree: Optional[ast.AST], options: Options, rule_classes: Sequence[type], *, hidden_text: str = "", request: Optional[_Request] = None
) -> Outcome:
    """``_migrate_code`` past the prefilter. ``source`` is what LibCST parses: the module,
    or its text with some statements left out (``hidden_text`` is theirs); ``tree`` is the
    ``ast`` tree of the same lines, when the caller has it.

    Its phases: the rules find (``run_rules``); the findings are placed and the suppressed
    ones dropped (``_locate``, ``_unsuppressed``); ``check`` stops there; the chosen fixes
    make the code (``_fixed_code``), which must parse; the reports say where what is left
    stands in the fixed file (``fix``: ``_as_written``) and which lines each fix edits
    (``diff``: ``_note_change_lines``)."""
    if request is None:
        request = _Request()
    module = parse_module(source)
    rules = [rule_class() for rule_class in rule_classes]
    analysis = Analysis(module, rules, lookup=request.lookup, path=request.path)
    analysis.target = options.target
    analysis.unparsed_text = hidden_text
    findings = run_rules(analysis)
    if request.analysed is not None:
        request.analysed["analysis"] = analysis
    if not findings:
        return Outcome(source, [])

    directives = _directives(source)
    # A fix that may wrap the call it lengthens needs to know where the call stands.
    wrapping = request.wrap and options.mode != "check"
    # Only the top-level statements that hold a finding are generated to place them, each
    # from where it begins in the source (known from the standard library's tree).
    if tree is None:
        tree = syntax_stage.parse(source)
    # A module's tree (``compile`` in "exec" mode; ``partial_parse``'s), typed as any ``ast.AST``.
    module_tree = cast(Optional[ast.Module], tree)
    memo: _Memo = {"starts": statement_starts(module, source, module_tree) if module_tree is not None else None, "texts": {}}
    statement_lines = StatementLines(module, module_tree) if module_tree is not None else None
    parsed = _Parsed(analysis, source, hidden_text, wrapping, memo, module_tree, statement_lines, directives)
    located = _locate(parsed, findings, options)
    kept = _unsuppressed(findings, located, directives)

    chosen = [f for f in kept if _will_apply(f, options)]
    if options.mode == "check":
        for f in chosen:
            f.applied = True
        return Outcome(source, [_report(f, module, options, located) for f in kept])
    new_module, code, generated = _fixed_code(parsed, chosen, located)
    if code != source and not _output_compiles(code, generated) and (_compiles(source) or not _parses_with_libcst(code)):
        raise OutputDoesNotParse("the migrated code does not parse")

    as_read = _as_written(kept, new_module, source, code) if options.mode == "fix" else {}
    reports = [_report(f, module, options, located) for f in kept]
    for finding, report in zip(kept, reports):
        report.as_read = as_read.get(id(finding))
    if options.mode == "diff" and chosen and statement_lines is not None:
        _note_change_lines(kept, reports, analysis, statement_lines)
    return Outcome(code, reports)


def _locate(parsed: _Parsed, findings: Sequence[Finding], options: Options) -> Dict[int, Span]:
    """Place every finding (its line and columns, from 1) and return the spans, by node id, of
    all that is placed in one code generation pass: the findings' nodes, the statements their
    suppressions may sit on (where the file has any) and the nodes the fixes edit where the
    report carries its edits (JSON, SARIF) or a fix may wrap the call it lengthens."""
    analysis, source, wrapping, memo = parsed.analysis, parsed.source, parsed.wrapping, parsed.memo
    module = analysis.module
    statements = [f.statement for f in findings if f.statement is not None] if parsed.directives else []
    # fix mode locates the findings it applies too: should the fixed file not be
    # written after all, they are reported where they are in the file as read.
    wanted = findings
    edited = [c.node for f in findings for c in f.changes if options.want_edits or (wrapping and c.wrap)]
    tops, inner = _top_statements(analysis, findings, edited, parsed.statement_lines)
    located = spans(module, [f.node for f in wanted] + statements + edited, source=source, starts=memo["starts"], tops=tops, inner=inner)
    for finding in findings:
        span = located.get(id(finding.node), (0, 0, 0, 0))
        finding.line, finding.column, finding.end_line, finding.end_column = span
        finding.column += 1
        finding.end_column += 1
    return located


def _unsuppressed(findings: Sequence[Finding], located: Dict[int, Span], directives: Dict[int, Optional[Tuple[str, ...]]]) -> List[Finding]:
    """The findings no ``# migrate-tpu: ignore`` comment suppresses (on the finding's line, its
    statement's first line, or a simple statement's last), in the order they are in the file."""
    kept: List[Finding] = []
    for finding in findings:
        if directives:
            lines = [finding.line]
            if finding.statement is not None and id(finding.statement) in located:
                start, _, end, _ = located[id(finding.statement)]
                lines.append(start)
                if isinstance(finding.statement, cst.SimpleStatementLine):
                    lines.append(end)
            if _suppressed(finding.rule_id, lines, directives):
                continue
        kept.append(finding)
    kept.sort(key=lambda f: (f.line, f.column, f.rule_id))
    return kept


def _fixed_code(parsed: _Parsed, chosen: Sequence[Finding], located: Dict[int, Span]) -> Tuple[cst.Module, str, Optional[List[str]]]:
    """The ``chosen`` fixes applied (marked so), their imports added and the imports they
    release dropped where nothing else uses them: the new module, its code, and the statements
    generated for it (``_code``; None when the whole module was)."""
    analysis, source, hidden_text, memo, module_tree = parsed.analysis, parsed.source, parsed.hidden_text, parsed.memo, parsed.module_tree
    module = analysis.module
    new_module = module
    if chosen:
        changes = [change for f in chosen for change in f.changes]
        layout = Layout.of(source, located, hidden_text) if parsed.wrapping and any(c.wrap for c in changes) else None
        new_module = apply_changes(module, changes, analysis, layout)
        new_module = add_imports(new_module, [spec for f in chosen for spec in f.imports])
        for f in chosen:
            f.applied = True
    code, generated = _code(module, new_module, source, memo, module_tree) if chosen else (source, None)
    released = [name for f in chosen for name in f.releases]
    if released:
        # The statements left out of the parse (``partial_parse``) use names too.
        trimmed = drop_unused_imports(new_module, code + hidden_text, released)
        if trimmed is not None:
            new_module = trimmed
            code, generated = _code(module, trimmed, source, memo, module_tree)
    return new_module, code, generated


def _as_written(kept: Sequence[Finding], new_module: cst.Module, source: str, code: str) -> Dict[int, Span]:
    """``fix``: move each finding to its place in the file as written, and return where each
    was in the file as read (by id; none where the code did not change)."""
    as_read: Dict[int, Span] = {}
    if code != source:
        as_read = {id(f): (f.line, f.column, f.end_line, f.end_column) for f in kept}
    for f in kept:  # an applied fix has no place in the file as written
        if f.applied:
            f.line, f.column, f.end_line, f.end_column = 0, 1, 0, 1
    if code != source:
        # What is left is reported where it is in the file as written, not as it was.
        _relocate([f for f in kept if not f.applied], new_module, source, code)
    return as_read


def _note_change_lines(kept: Sequence[Finding], reports: Sequence[Report], analysis: Analysis, statement_lines: StatementLines) -> None:
    """``diff``: the source lines each applied fix edits, so the patch names the rules of each hunk."""
    for finding, report in zip(kept, reports):
        if finding.applied:
            report.change_lines = _changed_lines(finding, analysis, analysis.module, statement_lines)
            report.edits_imports = bool(finding.imports or finding.releases)


def _top_statements(
    analysis: Analysis, findings: Sequence[Finding], edited: Sequence[cst.CSTNode], lines: Optional[StatementLines]
) -> Tuple[Dict[int, cst.CSTNode], Dict[int, Start]]:
    """The top-level statement holding each finding's node, its statement and the ``edited``
    nodes (by id), from where the walk remembered them (nodes it did not remember are
    looked for in the tree); and for the remembered ones, the innermost statement on its
    own line that holds them, where ``lines`` finds it (``positions.spans``)."""
    module = analysis.module
    tops: Dict[int, cst.CSTNode] = {}
    inner: Dict[int, Start] = {}

    def path_of(node: cst.CSTNode) -> Optional[Tuple[cst.CSTNode, ...]]:
        site = analysis.site(node)
        if site is not None and len(site.path) > 1 and site.path[0] is module:
            return site.path
        return None

    def note(node: cst.CSTNode, path: Sequence[cst.CSTNode]) -> None:
        tops[id(node)] = path[1]
        start = lines.start_of(path) if lines is not None else None
        if start is not None:
            inner[id(node)] = start

    missing = set()
    for finding in findings:
        path = path_of(finding.node)
        if path is None:
            missing.add(id(finding.node))
            continue
        note(finding.node, path)
        if finding.statement is not None:
            # Its own path ends at it, where the finding's passes through it.
            at = next((index for index, node in enumerate(path) if node is finding.statement), None)
            if at is not None:
                note(finding.statement, path[: at + 1])
            else:
                tops[id(finding.statement)] = path[1]
    for node in edited:
        path = path_of(node)
        if path is None:
            missing.add(id(node))
        else:
            note(node, path)
    missing.difference_update(id(statement) for statement in module.body)
    if missing:
        # A node reported without being remembered (an argument of a remembered call) is
        # most likely in a statement that holds another finding: those are searched first.
        known = list({id(top): top for top in tops.values()}.values())
        searched = {id(top) for top in known}
        for statement in known + [s for s in module.body if id(s) not in searched]:
            for node in iter_tree(statement):
                if id(node) in missing:
                    missing.discard(id(node))
                    tops[id(node)] = statement
            if not missing:
                break
    return tops, inner


def _changed_lines(finding: Finding, analysis: Analysis, module: cst.Module, lines: StatementLines) -> List[Tuple[int, int]]:
    found = []
    for change in finding.changes:
        site = analysis.site(change.node)
        path = site.path if site is not None else ()
        span = lines.of(path if path and path[0] is module else (module,) + tuple(path)) if path else None
        if span is not None and span not in found:
            found.append(span)
    return found


def _relocate(remaining: List[Finding], new_module: cst.Module, source: str, code: str) -> None:
    """Move the positions of findings left unfixed into the fixed ``code``.

    A node no fix touched is the same object in ``new_module`` (LibCST keeps
    unchanged subtrees), so its span there is exact; a node inside an edited
    statement is placed by a line map of the two texts (``places.LineMap``: its line
    moves with the unchanged lines around it, its column stays).
    """
    if not remaining:
        return
    located = spans(new_module, [f.node for f in remaining])
    line_map: Optional[LineMap] = None
    for finding in remaining:
        span = located.get(id(finding.node))
        if span is not None:
            finding.line, finding.column, finding.end_line, finding.end_column = span
            finding.column += 1
            finding.end_column += 1
            continue
        if line_map is None:
            line_map = LineMap(source, code)
        finding.line, finding.end_line = line_map.lines(finding.line, finding.end_line)


def _code(module: cst.Module, new_module: cst.Module, source: str, memo: _Memo, tree: Optional[ast.Module] = None) -> Tuple[str, Optional[List[str]]]:
    """The new module's code: only changed top-level statements are generated where possible,
    and the texts generated (None when the whole module was).

    ``memo`` keeps, between the calls for one source, the original statements' offsets
    (computed once) and the text of each statement generated (a second call, after
    unused imports are dropped, generates only the statements that changed again).
    """
    if "starts" not in memo:
        memo["starts"] = statement_starts(module, source, tree)
    memo.setdefault("texts", {})
    starts = memo["starts"]
    generated: List[str] = []
    spliced = splice_code(module, new_module, source, starts, generated, memo["texts"]) if starts is not None else None
    return (new_module.code, None) if spliced is None else (spliced, generated)


def _will_apply(finding: Finding, options: Options) -> bool:
    if not finding.changes:
        return False
    return finding.safety is Safety.SAFE or (finding.safety is Safety.UNSAFE and options.unsafe_fixes)


def _parses_with_libcst(code: str) -> bool:
    try:
        cst.parse_module(code)
        return True
    except Exception:
        return False


def _report(finding: Finding, module: cst.Module, options: Options, located) -> Report:
    report = Report(
        rule=finding.rule_id,
        message=finding.message,
        line=finding.line,
        column=finding.column,
        end_line=finding.end_line,
        end_column=finding.end_column,
        safety=finding.safety.value,
        applied=finding.applied,
        fix_title=finding.fix_title,
        suggestion=finding.suggestion,
    )
    if options.want_edits and finding.changes:
        for change in finding.changes:
            start_line, start_column, end_line, end_column = located.get(id(change.node), (0, 0, 0, 0))
            try:
                # Several statements in place of one (a ``FlattenSentinel``) raise here: no edit.
                content = module.code_for_node(cast(cst.CSTNode, change.rewrite(change.node)))
            except Exception:
                continue
            report.edits.append(
                {
                    "line": start_line,
                    "column": start_column + 1,
                    "end_line": end_line,
                    "end_column": end_column + 1,
                    "content": content,
                }
            )
        for module_name, alias in finding.imports:
            report.edits.append({"import": module_name + (f" as {alias}" if alias else "")})
    return report
