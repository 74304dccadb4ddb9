"""Which notebook demonstrates which rule: read at run time from RULES.md and the
notebooks' markdown headings, so the living spec's index cannot go stale."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

_RULE_BULLET = re.compile(r"^- ([A-Z]+-\d+) ")
_SECTION = re.compile(r"^## (.+?)\s*$")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_ID = re.compile(r"\b[A-Z]+-\d+\b")
_FENCE = ("```", "~~~")


@dataclass(frozen=True)
class Rule:
    """A rule of RULES.md: its ID and the section it is listed under."""

    rule_id: str
    section: str


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
            found.append(Rule(bullet.group(1), section))
    if not found:
        raise ValueError(f"rules_md_path: no rule bullets in {rules_md_path}")
    return found


def rule_ids(rules_md_path: str | Path) -> list[str]:
    """The rule IDs of RULES.md in file order."""
    return [rule.rule_id for rule in rules(rules_md_path)]


def markdown_headings(notebook_path: str | Path) -> list[str]:
    """The text of every markdown heading of a notebook (fenced code blocks skipped)."""
    data = json.loads(Path(notebook_path).read_text(encoding="utf-8"))
    headings: list[str] = []
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
                headings.append(match.group(1))
    return headings


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
        cited = {i for heading in markdown_headings(notebook) for i in _ID.findall(heading)}
        for rule_id in sorted(cited & citing.keys()):
            citing[rule_id].append(notebook.name)
    return [RuleCoverage(r.rule_id, r.section, tuple(citing[r.rule_id])) for r in listed]


def missing_rules(coverage: list[RuleCoverage]) -> list[str]:
    """The IDs no notebook heading cites yet, in RULES.md order."""
    return [entry.rule_id for entry in coverage if entry.missing]
