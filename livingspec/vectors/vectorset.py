"""The exported set of vectors: by rule group, with the cases left out and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from livingspec.specindex import Rule


@dataclass
class VectorSet:
    """The vectors by rule group, and the cases left out because the reference crashed."""

    rules: list[Rule]
    vectors: list[dict[str, Any]]
    crashed: list[tuple[str, str, str]] = field(default_factory=list)
    combined: list[tuple[str, str]] = field(default_factory=list)
    """(source, function) of the cases two rules decide at once (`tags.narrow`): left out."""

    def by_group(self) -> dict[str, list[dict[str, Any]]]:
        groups: dict[str, list[dict[str, Any]]] = {r.rule_id.split("-")[0]: [] for r in self.rules}
        for vector in self.vectors:
            groups[vector["rules"][0].split("-")[0]].append(vector)
        return groups

    def rule_counts(self) -> dict[str, int]:
        counts = {rule.rule_id: 0 for rule in self.rules}
        for vector in self.vectors:
            for rule_id in vector["rules"]:
                counts[rule_id] += 1
        return counts


