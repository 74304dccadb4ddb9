"""What a run reports: a table per rule, the first failing vector of each rule with a diff of
expected vs actual, a JUnit XML file for CI systems."""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from histtrim.conformance.codec import atomic_write
from histtrim.conformance.runner import Outcome
from histtrim.conformance.vectors import in_scope


@dataclass(frozen=True)
class RuleTally:
    rule_id: str
    passed: int
    failed: int
    not_implemented: int
    first_failure: Outcome | None

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.not_implemented == 0


def tally(outcomes: Sequence[Outcome], rule_order: Sequence[str],
          scope: tuple[str, ...]) -> list[RuleTally]:
    """One row per rule in scope that has vectors, in RULES.md order."""
    rows = []
    for rule_id in rule_order:
        if not in_scope(rule_id, scope):
            continue
        mine = [o for o in outcomes if rule_id in o.vector.rules]
        if not mine:
            continue
        count = {s: sum(o.status == s for o in mine)
                 for s in ("passed", "failed", "not_implemented")}
        first = next((o for o in mine if o.status != "passed"), None)
        rows.append(RuleTally(rule_id, count["passed"], count["failed"],
                              count["not_implemented"], first))
    return rows


def _pretty(value: Any) -> list[str]:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False).splitlines()


def diff(outcome: Outcome, max_lines: int = 40) -> str:
    """Expected vs actual of one vector, as a unified diff (cut at `max_lines`)."""
    actual = outcome.actual
    if isinstance(actual, dict):
        actual = {k: v for k, v in actual.items() if k in ("result", "error")}
        if "error" in actual and "error" in outcome.vector.expected:
            actual = {"error": {"kind": actual["error"].get("kind")}} if isinstance(
                actual["error"], dict) else actual
    lines = list(difflib.unified_diff(
        _pretty(outcome.vector.expected), _pretty(actual), "expected", "actual", lineterm="", n=2,
    ))
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"... ({len(lines) - max_lines} more diff lines)"]
    return "\n".join(lines)


def text_report(rows: Sequence[RuleTally]) -> str:
    width = max((len(r.rule_id) for r in rows), default=4)
    lines = [f"{'rule':<{width}}  passed  failed  not implemented",
             f"{'-' * width}  ------  ------  ---------------"]
    for r in rows:
        mark = "" if r.ok else "  <-- " + ("FAIL" if r.failed else "NOT IMPLEMENTED")
        lines.append(f"{r.rule_id:<{width}}  {r.passed:>6}  {r.failed:>6}  "
                     f"{r.not_implemented:>15}{mark}")
    for r in rows:
        first = r.first_failure
        if first is None or first.status != "failed":
            continue
        lines += ["", f"{r.rule_id}: first failing vector {first.vector.id} "
                  f"({first.vector.function}, {first.vector.source}): {first.reason}"]
        if first.actual is not None:
            lines.append(diff(first))
    return "\n".join(lines)


def junit(outcomes: Sequence[Outcome], rows: Sequence[RuleTally], path: Path) -> None:
    """One test suite per rule, one test case per vector checking it."""
    suites = ElementTree.Element("testsuites", name="histtrim conformance")
    for r in rows:
        mine = [o for o in outcomes if r.rule_id in o.vector.rules]
        suite = ElementTree.SubElement(
            suites, "testsuite", name=r.rule_id, tests=str(len(mine)),
            failures=str(r.failed), skipped=str(r.not_implemented), errors="0",
        )
        for o in mine:
            case = ElementTree.SubElement(suite, "testcase", classname=r.rule_id,
                                          name=f"{o.vector.id} ({o.vector.function})")
            if o.status == "failed":
                failure = ElementTree.SubElement(case, "failure", message=o.reason)
                failure.text = diff(o) if o.actual is not None else o.reason
            elif o.status == "not_implemented":
                ElementTree.SubElement(case, "skipped", message="not implemented")
    ElementTree.indent(suites)
    atomic_write(path, ElementTree.tostring(suites, encoding="unicode") + "\n")
