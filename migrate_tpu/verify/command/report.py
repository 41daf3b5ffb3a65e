"""A verdict as the user reads it: text, JSON, markdown (a job summary or a pull-request
comment) and GitHub workflow annotations."""

from __future__ import annotations

import json
from typing import List, Optional

from migrate_tpu.verify.judge.advice import moved_api_line
from migrate_tpu.verify.values.verdict import AFTER_API, DIVERGED, ERROR, INCONCLUSIVE, NOT_EXERCISED, RETRACED, SAME, Verdict

def _where_text(where: Optional[dict]) -> str:
    if not where:
        return "?"
    if "variable" in where:
        return f"variable {where['variable']}"
    if "stdout_line" in where:
        return f"stdout line {where['stdout_line']}"
    parts = []
    for side in ("before", "after"):
        place = where.get(side)
        if place:
            source = f": {place['source']}" if place.get("source") else ""
            parts.append(f"  {side:6} {_place_text(place)}{source}")
    return "\n" + "\n".join(parts) if parts else "?"


def _place_text(place: dict) -> str:
    """``train.py:42``, or for a notebook ``nb.ipynb cell 4:2``."""
    cell = f" cell {place['cell']}" if place.get("cell") is not None else ""
    return f"{place['file']}{cell}:{place['line']}"


def _replicas_text(replicas: Optional[List[int]]) -> str:
    if not replicas:
        return "no strategy stepped"
    return " and ".join(str(r) for r in replicas) + (" replica" if replicas == [1] else " replicas")


def _runs_line(verdict: Verdict) -> Optional[str]:
    """What each run had: replicas of the strategies it stepped, and hosts."""
    if not verdict.replicas:
        return None
    hosts = verdict.hosts or 1
    before, after = verdict.replicas.get("before"), verdict.replicas.get("after")
    sides = (f"original {_replicas_text(before)}, migrated {_replicas_text(after)}" if before != after
             else f"each run {_replicas_text(before)}")
    surface = f"; the original under the TF {verdict.before_api} surface" if verdict.before_api != "2.1" else ""
    if verdict.after_api != AFTER_API:  # --after-api native
        surface += "; the migration under the interpreter's own API"
    return f"  {sides}; {hosts} {'host' if hosts == 1 else 'hosts'}{surface}"


def _coverage_line(coverage: Optional[dict]) -> Optional[str]:
    """``7 of 9 changes ran; not run: train.py:88 (TPU106), ...``"""
    if not coverage or not coverage.get("changed"):
        return None
    text = f"  {coverage['ran']} of {coverage['changed']} {'change' if coverage['changed'] == 1 else 'changes'} of the migration ran"
    if coverage.get("not_run"):
        text += "; not run: " + ", ".join(coverage["not_run"])
    return text


def _power_line(power: Optional[dict]) -> Optional[str]:
    """What the comparison could have caught."""
    if not power:
        return None
    if power.get("exact"):
        return f"  power: exact, {power['values']} values compared bit for bit: any change to one of them shows"
    if not power.get("measured"):
        return f"  power: not measured ({power.get('change')}: {power.get('why')})"
    if power.get("caught"):
        return f"  power: catches {power['change']} (at step {power.get('step')}: {power.get('what')})"
    return f"  power: does not catch {power['change']}"


def _blame_lines(blame: dict) -> List[str]:
    """The fix (or the hand migration's change) to blame, as delta debugging found it."""
    if not blame.get("changes"):
        return [f"  blame: {blame.get('message', 'no smaller set of changes reproduces it')}"]
    lines = [f"  to blame ({blame['runs']} short runs): the smallest set of changes that reproduces it:"]
    lines += [f"    {change}" for change in blame["changes"]]
    return lines


def _divergence_lines(divergence: dict) -> List[str]:
    replica = f", replica {divergence['replica']}" if divergence.get("replica") is not None else ""
    if divergence.get("host") is not None:
        replica = f", host {divergence['host']}" + replica
    lines = [f"first divergence at step {divergence['step']}: {divergence.get('what', divergence['kind'])}{replica}"]
    where = _where_text(divergence.get("where"))
    if where.startswith("\n"):
        lines += where[1:].splitlines()
    elif where != "?":
        lines.append(f"  at {where}")
    lines.append(f"  before: {json.dumps(divergence.get('before'))}")
    lines.append(f"  after:  {json.dumps(divergence.get('after'))}")
    if divergence.get("message"):
        lines.append(f"  {divergence['message']}")
    return lines


def _headline(verdict: Verdict, label: str) -> str:
    if verdict.verdict in (SAME, NOT_EXERCISED, INCONCLUSIVE):
        steps = f"{verdict.steps} step{'' if verdict.steps == 1 else 's'}"
        variables = f"{verdict.variables_compared} variable{'' if verdict.variables_compared == 1 else 's'}"
        how = ""
        if verdict.tolerance.get("per_value"):
            how = f", each value within {verdict.tolerance.get('margin', 10):g}x its own A/A spread"
        elif verdict.tolerance.get("rtol") or verdict.tolerance.get("atol"):
            how = f", within rtol={verdict.tolerance.get('rtol'):g} atol={verdict.tolerance.get('atol'):g}"
        elif verdict.values_compared:
            how = ", exactly"
        return f"{label}: {verdict.verdict} ({steps}, {variables} compared{how})"
    if verdict.verdict == DIVERGED and verdict.first_divergence is not None:
        return f"{label}: diverged at step {verdict.first_divergence['step']}"
    if verdict.verdict == RETRACED and verdict.retraced is not None:
        r = verdict.retraced
        return f"{label}: retraced: {r['function']} traced {r['after']} times after migration, {r['before']} before"
    return f"{label}: error: {verdict.error.splitlines()[0] if verdict.error else ''}"


def report(verdict: Verdict, output_format: str, label: str) -> str:
    """The verdict as ``output_format`` says: ``json``, ``text``, ``markdown`` or ``github``."""
    if output_format == "json":
        return json.dumps(verdict.as_json(), indent=2) + "\n"
    lines = [_headline(verdict, label)] + _outcome_lines(verdict) + _detail_lines(verdict)
    if output_format == "markdown":
        icon = {SAME: "✅", NOT_EXERCISED: "⚠️", INCONCLUSIVE: "⚠️", DIVERGED: "❌", RETRACED: "⚠️", ERROR: "❗"}[verdict.verdict]
        body = "\n".join(lines[1:])
        return f"### {icon} migrate-tpu verify: {verdict.verdict}\n\n{lines[0]}\n\n" + (f"```\n{body}\n```\n" if body else "")
    text = "\n".join(lines) + "\n"
    if output_format == "github" and verdict.verdict != SAME:
        text += _annotation(verdict, lines[0])
    return text


def _outcome_lines(verdict: Verdict) -> List[str]:
    """What the verdict found: where the runs part, the retrace, or the error and what to do."""
    if verdict.verdict == DIVERGED and verdict.first_divergence is not None:
        return _divergence_lines(verdict.first_divergence)
    if verdict.verdict == RETRACED and verdict.retraced is not None:
        r = verdict.retraced
        warm = r["traces_after_first_step"]
        return [f"  {r['function']} ({r.get('where')}): traces before {r['before']}, after {r['after']}; "
                f"traces after the first step: before {warm['before']}, after {warm['after']}",
                "  on a TPU each trace is an XLA compilation: define the tf.function once, outside the loop or method"]
    if verdict.verdict == ERROR:
        lines = [f"  {line}" for line in (verdict.error or "").splitlines()[1:]]
        return lines + ([f"  what to do: {verdict.advice}"] if verdict.advice else [])
    return []


def _detail_lines(verdict: Verdict) -> List[str]:
    """What any verdict says besides: its power, the runs, the coverage, the blame, the moved APIs
    still called, what was not compared, the notes and the runs' exits and times."""
    lines = [line for line in (_power_line(verdict.power), _runs_line(verdict), _coverage_line(verdict.coverage)) if line]
    if verdict.blame:
        lines += _blame_lines(verdict.blame)
    if verdict.moved_apis:
        lines.append(f"  moved APIs the migrated run still called ({len(verdict.moved_apis)}):")
        lines += [f"    {moved_api_line(call)}" for call in verdict.moved_apis]
    if verdict.variables_not_compared and verdict.verdict != ERROR:
        lines.append("  not compared: " + "; ".join(f"{e['name']} ({e['side']} only: {e['why']})" for e in verdict.variables_not_compared))
    lines += [f"  note: {note}" for note in verdict.notes]
    timing = []
    for side in ("before", "control", "after"):
        run = getattr(verdict, side)
        if run:
            version = f" (TF {run['tensorflow']})" if verdict.control and run.get("tensorflow") else ""
            timing.append(f"{side}{version}: exit {run['exit_status']}, {run['seconds']:.1f}s")
    if timing:
        lines.append("  " + "; ".join(timing))
    return lines


def _annotation(verdict: Verdict, headline: str) -> str:
    """A GitHub workflow command for a verdict other than ``same``, at the migrated program's line
    where the runs part (a notebook: its file, the cell and line in the message)."""
    level = "error" if verdict.verdict in (DIVERGED, ERROR) else "warning"
    blamed = (verdict.blame or {}).get("changes") or []
    place = ""
    divergence = verdict.first_divergence or {}
    after_place = (divergence.get("where") or {}).get("after") if isinstance(divergence.get("where"), dict) else None
    message = headline
    if after_place and after_place.get("line"):
        if after_place.get("cell") is not None:  # GitHub knows the notebook, not its cells' lines
            place = f" file={after_place['file']}"
            message += f" (cell {after_place['cell']}, line {after_place['line']})"
        else:
            place = f" file={after_place['file']},line={after_place['line']}"
    if divergence:
        message += (f": {divergence.get('what', divergence.get('kind'))}; before {json.dumps(divergence.get('before'))}, "
                    f"after {json.dumps(divergence.get('after'))}")
    if blamed:
        message += "; to blame: " + ", ".join(blamed)
    message = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return f"::{level}{place}::{message}\n"
