"""Which notebook demonstrates which rule: read at run time from RULES.md and the
notebooks' markdown headings, so the living spec's index cannot go stale."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

_RULE_BULLET = re.compile(r"^- ([A-Z]+-\d+) (.*?)\s*$")
_SECTION = re.compile(r"^## (.+?)\s*$")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = ("```", "~~~")

RULE_ID = re.compile(r"\b[A-Z]+-\d+\b")
"""A rule ID as text cites it (`TURN-3`); match what it finds against `rule_ids`."""


@dataclass(frozen=True)
class Rule:
    """A rule of RULES.md: its ID, the section it is listed under and its text (which is
    not part of its identity: two `Rule` objects are equal when ID and section are)."""

    rule_id: str
    section: str
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class Heading:
    """A markdown heading of a notebook: its level (1 for `#`) and its source text."""

    level: int
    text: str


@dataclass(frozen=True)
class RuleCoverage:
    """A rule and the notebooks (file names, sorted) with a heading that cites its ID."""

    rule_id: str
    section: str
    notebooks: tuple[str, ...]

    @property
    def missing(self) -> bool:
        return not self.notebooks


def rules(rules_md_path: str | Path) -> list[Rule]:
    """Every rule bullet (`- ID text`) of RULES.md, in file order, with its `##` section."""
    found: list[Rule] = []
    section = ""
    for line in Path(rules_md_path).read_text(encoding="utf-8").splitlines():
        if heading := _SECTION.match(line):
            section = heading.group(1)
        elif bullet := _RULE_BULLET.match(line):
            found.append(Rule(bullet.group(1), section, bullet.group(2)))
    if not found:
        raise ValueError(f"rules_md_path: no rule bullets in {rules_md_path}")
    return found


BEYOND_THE_SPEC = "beyond the Spanish spec"
"""What the heading of a section of rules the project adds (from the reference runtime) says."""


def spec_rules(rules_md_path: str | Path) -> list[Rule]:
    """The rules cut from the Spanish spec: those outside a section marked `BEYOND_THE_SPEC`."""
    return [rule for rule in rules(rules_md_path) if BEYOND_THE_SPEC not in rule.section]


def rule_ids(rules_md_path: str | Path) -> list[str]:
    """The rule IDs of RULES.md in file order."""
    return [rule.rule_id for rule in rules(rules_md_path)]


def notebook_headings(notebook_path: str | Path) -> list[Heading]:
    """Every markdown heading of a notebook with its level (fenced code blocks skipped)."""
    data = json.loads(Path(notebook_path).read_text(encoding="utf-8"))
    headings: list[Heading] = []
    for cell in data.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        in_fence = False
        for line in text.splitlines():
            if line.lstrip().startswith(_FENCE):
                in_fence = not in_fence
            elif not in_fence and (match := _HEADING.match(line)):
                headings.append(Heading(len(match.group(1)), match.group(2)))
    return headings


def markdown_headings(notebook_path: str | Path) -> list[str]:
    """The text of every markdown heading of a notebook (fenced code blocks skipped)."""
    return [heading.text for heading in notebook_headings(notebook_path)]


def rule_coverage(
    notebooks_dir: str | Path, rules_md_path: str | Path | None = None
) -> list[RuleCoverage]:
    """For each rule (RULES.md order), the notebooks whose headings cite its ID verbatim.

    `rules_md_path` defaults to `<notebooks_dir>/spec/RULES.md`; notebooks are the
    `*.ipynb` files directly in `notebooks_dir`, in name order."""
    folder = Path(notebooks_dir)
    listed = rules(rules_md_path if rules_md_path is not None else folder / "spec" / "RULES.md")
    citing: dict[str, list[str]] = {rule.rule_id: [] for rule in listed}
    for notebook in sorted(folder.glob("*.ipynb")):
        cited = {i for heading in markdown_headings(notebook) for i in RULE_ID.findall(heading)}
        for rule_id in sorted(cited & citing.keys()):
            citing[rule_id].append(notebook.name)
    return [RuleCoverage(r.rule_id, r.section, tuple(citing[r.rule_id])) for r in listed]


def missing_rules(coverage: list[RuleCoverage]) -> list[str]:
    """The IDs no notebook heading cites yet, in RULES.md order."""
    return [entry.rule_id for entry in coverage if entry.missing]
