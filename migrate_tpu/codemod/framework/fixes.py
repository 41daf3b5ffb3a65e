"""Fix builders for structural rules (in the spirit of ruff's): rules keep only their decisions.

A structural rule decides whether a node needs a change and how to rewrite it.
What is the same everywhere lives here: naming TensorFlow symbols from the
node's scope (reusing the file's aliases, or importing TensorFlow), falling back
to a manual finding when no name is free, and reporting the change with its
imports; and the keyword arguments rewrites build.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence, Tuple

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Analysis, Scope
from migrate_tpu.codemod.analysis.names import expression_for
from migrate_tpu.codemod.framework.rule import Change, Finding, Rule, Safety

_NO_SPACE = cst.SimpleWhitespace("")


def keyword(name: str, value: cst.BaseExpression, comma=cst.MaybeSentinel.DEFAULT) -> cst.Arg:
    """``name=value``, written without spaces around ``=``."""
    return cst.Arg(value, keyword=cst.Name(name), equal=cst.AssignEqual(_NO_SPACE, _NO_SPACE), comma=comma)


def as_keyword(arg: cst.Arg, name: str) -> cst.Arg:
    """The same argument, passed as ``name=...`` (its value, comments and comma kept)."""
    return arg.with_changes(keyword=cst.Name(name), equal=cst.AssignEqual(_NO_SPACE, _NO_SPACE))


def comma() -> cst.Comma:
    """``, `` between two arguments."""
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


class RewriteRule(Rule):
    """A rule whose fixes name TensorFlow symbols in the code they write."""

    def propose(  # noqa: PLR0913
        self,
        node: cst.CSTNode,
        message: str,
        *,
        analysis: Analysis,
        scope: Scope,
        manual: str,
        rewrite: Callable[..., cst.CSTNode],
        uses: Sequence[str] = (),
        at: Optional[cst.CSTNode] = None,
        fix_title: str = "",
        suggestion: Optional[str] = None,
        safety: Optional[Safety] = None,
        key: Optional[Tuple[object, ...]] = None,
        releases: Sequence[str] = (),
        wrap: bool = False,
    ) -> Optional[Finding]:
        """Report a change of ``node``, or ``manual`` on it when a name in ``uses`` cannot be written.

        ``uses`` are the qualified TensorFlow names the new code needs;
        ``rewrite(updated, *expressions)`` receives the node (as updated by the
        changes inside it) and those names as expressions, and returns its
        replacement. ``fix_title`` and ``suggestion`` may refer to the names'
        text as ``{0}``, ``{1}``, ... The finding sits on ``at`` (default: ``node``).
        ``releases``: imported names the change stops using (their import goes
        when nothing else uses them). ``wrap``: ``node`` is a call whose arguments go
        one to a line where the rewrite makes it longer than the file's lines
        (``Change.wrap``).
        """
        texts = []
        imports = []
        for qualified in uses:
            try:
                text, needed = expression_for(qualified, scope, lambda name: analysis.name_ready(name, node))
            except LookupError:
                self.report(node, manual, analysis=analysis)
                return None
            texts.append(text)
            if needed and needed not in imports:
                imports.append(needed)
        expressions = [cst.parse_expression(text) for text in texts]

        def change(updated: cst.CSTNode) -> cst.CSTNode:
            return rewrite(updated, *expressions)

        finding = self.report(
            node if at is None else at,
            message,
            analysis=analysis,
            changes=[Change(node, change, key=key, wrap=wrap)],
            safety=safety,
            imports=imports,
            fix_title=fix_title.format(*texts),
            suggestion=None if suggestion is None else suggestion.format(*texts),
        )
        finding.releases.extend(name for name in releases if name)
        return finding


def head_name(expr: cst.BaseExpression) -> str:
    """The name a dotted expression starts from (``tf`` in ``tf.keras.X``), or ""."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else ""
