"""The living-spec index: rule IDs read from RULES.md, coverage read from notebook headings."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from livingspec.specindex import (
    Heading,
    Rule,
    markdown_headings,
    missing_rules,
    notebook_headings,
    rule_coverage,
    rule_ids,
    rules,
    spec_rules,
)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
RULES_MD = NOTEBOOKS / "spec" / "RULES.md"

CORE_NOTEBOOKS = {
    "01_turns.ipynb": ["TURN-1", "TURN-2", "TURN-3", "TURN-4", "TURN-5", "TURN-6"],
    "02_whole_turn_retention.ipynb": [
        "KEEP-1", "KEEP-2", "KEEP-3", "CAP-1", "LIMIT-1", "LIMIT-2", "PAIR-1",
    ],
    "03_token_estimate.ipynb": ["EST-1", "EST-2", "EST-3", "EST-4"],
}  # fmt: skip


def _notebook(path: Path, cells: list[tuple[str, str | list[str]]]) -> Path:
    """Write a minimal nbformat-4 notebook with (cell type, source) cells."""
    data = {
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": source}
            | ({"outputs": [], "execution_count": None} if kind == "code" else {})
            for kind, source in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _rules_md(path: Path) -> Path:
    path.write_text(
        "# Rules\n\n## Turns\n- TURN-1 first rule.\n- TURN-2 second rule.\n\n"
        "## Estimate\n- EST-1 bytes.\n- EST-10 a two-digit id.\n",
        encoding="utf-8",
    )
    return path


def test_rule_ids_of_the_real_rules_are_all_44_in_file_order() -> None:
    """The spec's 44 rules come first; sections beyond the Spanish spec follow (USAGE-1..)."""
    ids = rule_ids(RULES_MD)
    bullets = re.findall(r"^- ([A-Z]+-\d+) ", RULES_MD.read_text(encoding="utf-8"), re.MULTILINE)
    assert ids == bullets
    assert len(ids) == len(set(ids))
    spec = [rule.rule_id for rule in spec_rules(RULES_MD)]
    assert len(spec) == 44 and ids[:44] == spec
    assert spec[0] == "TURN-1" and spec[-1] == "PAIR-4"
    assert "USAGE-1" in ids[44:]


def test_rules_carry_their_section() -> None:
    listed = rules(RULES_MD)
    assert Rule("TURN-3", "Turns and the two representations") in listed
    assert Rule("EST-2", "Token estimate (`estimate_history_tokens`)") in listed


def test_rules_carry_their_text(tmp_path: Path) -> None:
    listed = rules(_rules_md(tmp_path / "RULES.md"))
    assert [(r.rule_id, r.text) for r in listed] == [
        ("TURN-1", "first rule."), ("TURN-2", "second rule."),
        ("EST-1", "bytes."), ("EST-10", "a two-digit id."),
    ]  # fmt: skip
    real = {r.rule_id: r.text for r in rules(RULES_MD)}
    assert real["TURN-5"] == "Leading system messages are always kept."


def test_a_file_without_rule_bullets_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "RULES.md"
    empty.write_text("# nothing here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="rules_md_path"):
        rule_ids(empty)


def test_markdown_headings_skip_code_cells_fences_and_paragraphs(tmp_path: Path) -> None:
    notebook = _notebook(
        tmp_path / "a.ipynb",
        [
            ("markdown", ["# 01 · Title\n", "\n", "Covers TURN-2 in a paragraph.\n"]),
            ("markdown", "## TURN-1 — a heading\n```\n## TURN-2 inside a fence\n```"),
            ("code", "# TURN-2 in a code comment"),
            ("markdown", "   ### EST-1, and more ###"),
        ],
    )
    assert markdown_headings(notebook) == ["01 · Title", "TURN-1 — a heading", "EST-1, and more"]
    assert notebook_headings(notebook) == [
        Heading(1, "01 · Title"), Heading(2, "TURN-1 — a heading"), Heading(3, "EST-1, and more"),
    ]  # fmt: skip


def test_coverage_lists_citing_notebooks_in_name_order(tmp_path: Path) -> None:
    rules_md = _rules_md(tmp_path / "RULES.md")
    _notebook(tmp_path / "02_b.ipynb", [("markdown", "## TURN-1 again\n## EST-10 two digits")])
    _notebook(tmp_path / "01_a.ipynb", [("markdown", "## TURN-1 and FOO-1 (unknown id)")])
    _notebook(tmp_path / "03_c.ipynb", [("markdown", "TURN-2 only in a paragraph")])
    coverage = rule_coverage(tmp_path, rules_md)
    assert [(c.rule_id, c.section, c.notebooks) for c in coverage] == [
        ("TURN-1", "Turns", ("01_a.ipynb", "02_b.ipynb")),
        ("TURN-2", "Turns", ()),
        ("EST-1", "Estimate", ()),  # EST-10 does not cite EST-1
        ("EST-10", "Estimate", ("02_b.ipynb",)),
    ]
    assert missing_rules(coverage) == ["TURN-2", "EST-1"]


def test_coverage_defaults_to_the_rules_copy_beside_the_notebooks(tmp_path: Path) -> None:
    (tmp_path / "spec").mkdir()
    _rules_md(tmp_path / "spec" / "RULES.md")
    _notebook(tmp_path / "01.ipynb", [("markdown", "## EST-1 demo")])
    coverage = rule_coverage(str(tmp_path))
    assert missing_rules(coverage) == ["TURN-1", "TURN-2", "EST-10"]


def test_coverage_is_in_rules_order_for_the_real_notebooks() -> None:
    coverage = rule_coverage(NOTEBOOKS)
    assert [c.rule_id for c in coverage] == rule_ids(RULES_MD)
    assert all(list(c.notebooks) == sorted(c.notebooks) for c in coverage)


@pytest.mark.parametrize(("notebook", "ids"), sorted(CORE_NOTEBOOKS.items()))
def test_core_notebooks_demonstrate_their_rules(notebook: str, ids: list[str]) -> None:
    """TURN-1..6, KEEP-1..3, CAP-1, LIMIT-1, LIMIT-2, PAIR-1 and EST-1..4 each have a heading."""
    by_id = {c.rule_id: c.notebooks for c in rule_coverage(NOTEBOOKS)}
    assert all(notebook in by_id[rule_id] for rule_id in ids)


def _expand(cited: str, all_ids: list[str]) -> set[str]:
    """README's notation: `all`, `TURN-1..6`, `KEEP-1/2`, `CAP-1`, comma-separated."""
    found: set[str] = set()
    for part in (p.strip() for p in cited.split(",")):
        if part == "all":
            found.update(all_ids)
            continue
        match = re.fullmatch(r"([A-Z]+)-(\d+)(?:\.\.(\d+)|((?:/\d+)+))?", part)
        assert match, f"README cites {part!r}, not a rule, a range or a list"
        prefix, first, last, more = match.groups()
        numbers = [int(first)]
        if last:
            numbers = list(range(int(first), int(last) + 1))
        elif more:
            numbers += [int(n) for n in more.strip("/").split("/")]
        found.update(f"{prefix}-{n}" for n in numbers)
    return found


def test_readme_lists_every_rule_each_chapter_demonstrates() -> None:
    """Issue 31 §4: README's table of chapters lists exactly the rules whose IDs the chapter's
    headings cite (06, 07 and 14 had lost some)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## The spec, section by section", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| [^|]+ \| ([^|]+) \| `notebooks/([^`]+)` \|$", section, re.M)
    all_ids = rule_ids(RULES_MD)
    listed = {notebook: _expand(cited, all_ids) for cited, notebook in rows}
    demonstrated: dict[str, set[str]] = {name: set() for name in listed}
    for entry in rule_coverage(NOTEBOOKS):
        for notebook in entry.notebooks:
            demonstrated.setdefault(notebook, set()).add(entry.rule_id)
    demonstrated["00_index.ipynb"] = set(all_ids)  # the index lists every rule
    assert sorted(listed) == sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert {n: sorted(r) for n, r in listed.items()} == {
        n: sorted(r) for n, r in demonstrated.items()
    }
