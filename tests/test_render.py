"""The rendered spec: every notebook renders to HTML from its committed outputs (nbconvert's
HTMLExporter in-process, nothing executed), every rule heading is a heading of that HTML,
the index page links each rule ID to an anchor that exists, and the ids the index computes
without the HTML are the ones nbconvert gives."""

from __future__ import annotations

import html
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from nbconvert import HTMLExporter

from histtrim.specindex import RULE_ID, rules

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
RULES = ROOT / "notebooks" / "spec" / "RULES.md"


def _load_render_index() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "render_index", ROOT / "tools" / "render_index.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


render_index = _load_render_index()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every notebook as HTML (rendered once, exporter set up once) and the index page."""
    out = tmp_path_factory.mktemp("spec")
    exporter = HTMLExporter()
    for notebook in NOTEBOOKS:
        body, _ = exporter.from_filename(str(notebook))
        (out / notebook.with_suffix(".html").name).write_text(body, encoding="utf-8")
    assert render_index.main(["--notebooks", str(ROOT / "notebooks"), "--rules", str(RULES),
                              "--out", str(out / "index.html")]) == 0
    return out


def _html_headings(page: str) -> list[tuple[str, str]]:
    parser = render_index._HeadingIds()
    parser.feed(page)
    return [(h.text, h.anchor) for h in parser.found]


def _source_rule_headings(notebook: Path) -> list[tuple[str, ...]]:
    """The rule IDs of each markdown heading that cites any, in order (from the raw source)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    found = []
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        in_fence = False
        for line in "".join(cell["source"]).splitlines():
            if line.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
            elif not in_fence and re.match(r" {0,3}#{1,6}\s", line):
                ids = tuple(RULE_ID.findall(line))
                if ids:
                    found.append(ids)
    return found


def test_there_are_notebooks() -> None:
    assert len(NOTEBOOKS) >= 2


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_renders_with_every_rule_heading(site: Path, notebook: Path) -> None:
    page = (site / notebook.with_suffix(".html").name).read_text(encoding="utf-8")
    rendered = [text for text, _ in _html_headings(page)]
    in_html = [tuple(RULE_ID.findall(t)) for t in rendered]
    in_html = [ids for ids in in_html if ids]
    assert in_html == _source_rule_headings(notebook), f"{notebook.name}: rule headings differ"
    # the title heading (`# NN · Title`) comes first
    assert rendered and re.match(r"\d\d · ", rendered[0]), rendered[:1]


def test_index_links_every_cited_rule_to_an_existing_anchor(site: Path) -> None:
    index = (site / "index.html").read_text(encoding="utf-8")
    anchors = {
        page.name: {anchor for _, anchor in _html_headings(page.read_text(encoding="utf-8"))}
        for page in site.glob("*.html")
        if page.name != "index.html"
    }
    links = re.findall(r'<a href="([^"#]+\.html)#([^"]+)">', index)
    assert links, "the index links no rule"
    for page, anchor in links:
        anchor = html.unescape(anchor)
        assert anchor in anchors[page], f"index links {page}#{anchor}, which does not exist"
    for rule in rules(RULES):
        assert f'<tr id="{rule.rule_id}">' in index


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_fallback_anchors_are_the_ones_nbconvert_gives(site: Path, notebook: Path) -> None:
    """Without the HTML beside it, the index computes every heading's text and id itself."""
    page = (site / notebook.with_suffix(".html").name).read_text(encoding="utf-8")
    parser = render_index._HeadingIds()
    parser.feed(page)
    assert render_index.fallback_headings(notebook) == parser.found


@pytest.mark.parametrize(
    ("source", "rendered"),
    [
        ("KEEP-1 — `trim_to_recent_turns` is it", "KEEP-1 — trim_to_recent_turns is it"),
        ("`a_b` and *c_d* and __e__", "a_b and c_d and e"),
        ("snake_case_name and **bold**", "snake_case_name and bold"),
        ("[the `x_y` link](https://example.org/a_b_c)", "the x_y link"),
        ("``a ` b`` and `` `c` ``", "a ` b and `c`"),
    ],
)
def test_strip_inline_markdown_keeps_code_spans_verbatim(source: str, rendered: str) -> None:
    assert render_index.strip_inline_markdown(source) == rendered
