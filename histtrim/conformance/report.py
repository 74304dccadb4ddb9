"""What a run reports: a table per rule, then every failing vector grouped by function and
rule with counts (the differing fields first, the implementation's stderr for a crash),
the stray output, and a JUnit XML file with one test case per vector."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from histtrim.conformance.codec import atomic_write
from histtrim.conformance.runner import DIFF_LINES, Outcome, RunResult, printable
from histtrim.conformance.vectors import Vector, in_scope

DETAIL_LINES = 12
"""Lines of differences shown under a failing vector in the text report."""
DETAILS_PER_GROUP = 3
"""Failing vectors shown with their differences per (function, rules) group; the others of
the group are listed one per line."""


@dataclass(frozen=True)
class RuleTally:
    rule_id: str
    passed: int
    failed: int
    not_implemented: int
    first_failure: Outcome | None
    covered: bool = True
    """False under `--functions` when every vector of the rule calls a function left out."""

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.not_implemented == 0


def tally(outcomes: Sequence[Outcome], rule_order: Sequence[str], scope: tuple[str, ...],
          candidates: Sequence[Vector] = ()) -> list[RuleTally]:
    """One row per rule in scope that has vectors, in RULES.md order; a rule that only
    `candidates` (the vectors before `--functions` chose) check is "not covered"."""
    rows = []
    elsewhere = {r for v in candidates for r in v.rules}
    for rule_id in rule_order:
        if not in_scope(rule_id, scope):
            continue
        mine = [o for o in outcomes if rule_id in o.vector.rules]
        if not mine:
            if rule_id in elsewhere:
                rows.append(RuleTally(rule_id, 0, 0, 0, None, covered=False))
            continue
        count = Counter(o.status for o in mine)
        first = next((o for o in mine if o.status != "passed"), None)
        rows.append(RuleTally(rule_id, count["passed"], count["failed"],
                              count["not_implemented"], first))
    return rows


def diff(outcome: Outcome, max_lines: int = DIFF_LINES) -> str:
    """Expected vs actual of one vector, as the run kept it: for two results, the fields
    that differ (for a list of rows, the positions that differ and the first differing row);
    otherwise a unified diff. Cut at `max_lines`."""
    lines = list(outcome.differences)
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"... ({len(lines) - max_lines} more lines)"]
    return "\n".join(lines)


def _details(outcome: Outcome) -> list[str]:
    """The lines under one failing vector: its differences (a result's fields), or the
    stderr tail."""
    shown = diff(outcome, DETAIL_LINES).splitlines() if outcome.reason == "result differs" else []
    lines = list(shown)
    if outcome.stderr:
        lines += ["stderr (last lines):", *(f"  {line}" for line in outcome.stderr.splitlines())]
    elif not outcome.differences:
        lines.append("stderr: (empty)")
    return lines


def _group(outcome: Outcome) -> str:
    return f"{outcome.vector.function} / {' '.join(outcome.vector.rules)}"


def text_report(rows: Sequence[RuleTally], result: RunResult | None = None, *,
                details: int = DETAILS_PER_GROUP) -> str:
    """The rule table; with the run's `result`, every failing vector by function and rule,
    what was not implemented, and the stray output lines."""
    width = max((len(r.rule_id) for r in rows), default=4)
    lines = [f"{'rule':<{width}}  passed  failed  not implemented",
             f"{'-' * width}  ------  ------  ---------------"]
    for r in rows:
        if not r.covered:
            mark = "  (not covered)"
        elif r.ok:
            mark = ""
        else:
            mark = "  <-- " + ("FAIL" if r.failed else "NOT IMPLEMENTED")
        lines.append(f"{r.rule_id:<{width}}  {r.passed:>6}  {r.failed:>6}  "
                     f"{r.not_implemented:>15}{mark}")
    if not all(r.covered for r in rows):
        lines.append("(not covered: every vector of the rule calls a function outside "
                     "--functions)")
    if result is not None:
        lines += _failures(result.outcomes, details)
        missing = Counter(o.vector.function for o in result.outcomes
                          if o.status == "not_implemented")
        if missing:
            lines += ["", "Not implemented (answered not_implemented): " + ", ".join(
                f"{name} ({count})" for name, count in sorted(missing.items()))]
        if result.stray_count:
            lines += ["", f"{result.stray_count} stray output line(s) with no request of "
                      "that id, skipped; the first:", *(f"  {s}" for s in result.stray)]
        if result.reordered:
            lines += ["", f"{result.reordered} answer(s) arrived out of order, matched by id"]
        if result.late_count:
            lines += ["", f"{result.late_count} answer(s) arrived after their vector had "
                      "timed out, skipped"]
    return printable("\n".join(lines))


def _failures(outcomes: Sequence[Outcome], details: int) -> list[str]:
    failed = [o for o in outcomes if o.status == "failed"]
    if not failed:
        return []
    groups: dict[str, list[Outcome]] = {}
    for outcome in failed:
        groups.setdefault(_group(outcome), []).append(outcome)
    lines = ["", f"Failing vectors: {len(failed)}, by function and rules"]
    for name, members in groups.items():
        lines += ["", f"{name}: {len(members)} failed"]
        for n, o in enumerate(members):
            lines.append(f"  {o.vector.id} ({o.vector.source}): {o.reason}")
            if n < details:
                lines += [f"    {line}" for line in _details(o)]
    return lines


def junit(outcomes: Sequence[Outcome], path: Path) -> None:
    """One test suite per function, one test case per vector; its rules and source are the
    case's properties."""
    suites = ElementTree.Element("testsuites", name="histtrim conformance")
    by_function: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_function.setdefault(o.vector.function, []).append(o)
    for function, mine in by_function.items():
        count = Counter(o.status for o in mine)
        suite = ElementTree.SubElement(
            suites, "testsuite", name=function, tests=str(len(mine)),
            failures=str(count["failed"]), skipped=str(count["not_implemented"]), errors="0",
        )
        for o in mine:
            case = ElementTree.SubElement(suite, "testcase", classname=function,
                                          name=printable(o.vector.id))
            properties = ElementTree.SubElement(case, "properties")
            for rule in o.vector.rules:
                ElementTree.SubElement(properties, "property", name="rule",
                                       value=printable(rule))
            ElementTree.SubElement(properties, "property", name="source",
                                   value=printable(o.vector.source))
            if o.status == "failed":
                failure = ElementTree.SubElement(case, "failure", message=printable(o.reason))
                text = diff(o) if o.differences else "\n".join(_details(o))
                failure.text = printable(text)
            elif o.status == "not_implemented":
                ElementTree.SubElement(case, "skipped", message="not implemented")
    ElementTree.indent(suites)
    atomic_write(path, ElementTree.tostring(suites, encoding="unicode") + "\n")
