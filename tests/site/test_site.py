"""The living spec site as built: every chapter in the sidebar under its title, every rule a
stable anchor that the rule table links to, "Implemented by" links that resolve, the API
reference covering `histtrim.__all__`, the decisions chapter, and no machine paths."""

from __future__ import annotations

import ast
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import histtrim
from livingspec.specindex import RULE_ID, markdown_headings, rule_coverage, rules

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
RULES = ROOT / "notebooks" / "spec" / "RULES.md"


class _Page(HTMLParser):
    """Ids, links (href and text), sidebar links and code xrefs outside links of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []
        self.sidebar: list[tuple[str, str]] = []
        self.dangling_xrefs: list[str] = []
        self._stack: list[tuple[str, dict[str, str]]] = []
        self._text: list[str] | None = None
        self._href = ""
        self._in_sidebar = 0
        self._xref_depth: int | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "id" in a:
            self.ids.add(a["id"])
        classes = a.get("class", "").split()
        if tag == "nav" and "bd-docs-nav" in classes:
            self._in_sidebar = 1
        elif self._in_sidebar and tag == "nav":
            self._in_sidebar += 1
        if tag == "a":
            self._href, self._text = a.get("href", ""), []
        if tag == "code" and "py-obj" in classes and self._text is None:
            self.dangling_xrefs.append("")
            self._xref_depth = len(self._stack)
        self._stack.append((tag, a))

    def handle_endtag(self, tag: str) -> None:
        if self._stack:
            self._stack.pop()
        if tag == "a" and self._text is not None:
            text = "".join(self._text).strip()
            self.links.append((self._href, text))
            if self._in_sidebar:
                self.sidebar.append((self._href, text))
            self._text = None
        if tag == "nav" and self._in_sidebar:
            self._in_sidebar -= 1
        if tag == "code" and self._xref_depth is not None and len(self._stack) == self._xref_depth:
            self._xref_depth = None

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)
        if self._xref_depth is not None:
            self.dangling_xrefs[-1] += data


def _page(path: Path) -> _Page:
    parser = _Page()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_sidebar_lists_every_chapter_by_title(site: Path) -> None:
    """Every notebook of notebooks/ (glob: new chapters need no edit) is in the sidebar of
    every page, under its title (its first heading), not its file name."""
    for page in ("index.html", "02_whole_turn_retention.html", "decisions.html", "api.html"):
        sidebar = dict(_page(site / page).sidebar)
        hrefs = {Path(h.split("#")[0]).name if not h.startswith("#") else page for h in sidebar}
        for notebook in NOTEBOOKS:
            assert f"{notebook.stem}.html" in hrefs, (page, notebook.name)
        titles = set(sidebar.values())
        for notebook in NOTEBOOKS:
            assert markdown_headings(notebook)[0] in titles, (page, notebook.name)
        assert {"Decisions: where the spec is silent", "API reference"} <= titles


def test_every_rule_heading_is_a_stable_anchor(site: Path) -> None:
    """Each chapter's first heading citing a rule has the rule's ID as its id (`#keep-1`)."""
    known = {rule.rule_id for rule in rules(RULES)}
    for notebook in NOTEBOOKS:
        cited = {r for h in markdown_headings(notebook) for r in RULE_ID.findall(h)} & known
        ids = _page(site / f"{notebook.stem}.html").ids
        missing = sorted(r for r in cited if r.lower() not in ids)
        assert not missing, (notebook.name, missing)
    assert "keep-1" in _page(site / "02_whole_turn_retention.html").ids


def test_rule_table_links_every_rule_to_its_first_chapter(site: Path) -> None:
    links = _page(site / "spec" / "rules.html").links
    for entry in rule_coverage(ROOT / "notebooks", RULES):
        first = Path(entry.notebooks[0]).stem
        target = f"../{first}.html#{entry.rule_id.lower()}"
        assert (target, entry.rule_id) in links, entry.rule_id
        assert entry.rule_id.lower() in _page(site / f"{first}.html").ids


def test_rule_headings_link_to_their_implementation(site: Path) -> None:
    """Under KEEP-1, an "Implemented by" line links into the API reference."""
    page = (site / "02_whole_turn_retention.html").read_text(encoding="utf-8")
    line = re.search(r'<p class="implemented-by">(.*?)</p>', page, re.S)
    assert line is not None
    assert 'href="api.html#histtrim.trim_to_recent_turns"' in line.group(1)


def test_no_cross_reference_is_left_unresolved(site: Path) -> None:
    """A code reference (the "Implemented by" lines, the names table) that resolved nowhere
    renders outside a link: there must be none."""
    for page in sorted(site.rglob("*.html")):
        if page.name == "api.html" or page.parent.name == "api":  # signatures name typing's
            continue  # objects (no intersphinx offline)
        dangling = _page(page).dangling_xrefs
        assert not dangling, (page.relative_to(site), dangling[:5])


def _public_names() -> dict[str, list[str]]:
    """Each public module of the installed package (`histtrim.trim`, ...) -> the names it
    defines itself (read from its source): top-level classes, functions and assignments
    without a leading underscore, those of its `__all__` when it has one, type parameters
    aside. A re-export is public where it is defined, not where it is imported."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "histtrim").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if any(part.startswith("_") for part in parts):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        listed: set[str] | None = None
        names: list[str] = []
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.append(node.name)
                continue
            targets = (node.targets if isinstance(node, ast.Assign) else [node.target]
                       if isinstance(node, ast.AnnAssign) else [])
            value = getattr(node, "value", None)
            for target in targets:
                if not isinstance(target, ast.Name):
                    continue
                if target.id == "__all__" and value is not None:
                    listed = set(ast.literal_eval(value))
                elif not (isinstance(value, ast.Call) and getattr(value.func, "id", "")
                          in ("TypeVar", "ParamSpec", "TypeVarTuple")):
                    names.append(target.id)
        found[".".join(parts)] = [n for n in dict.fromkeys(names) if not n.startswith("_")
                                  and (listed is None or n in listed)]
    return found


def _inventory(site: Path) -> dict[str, str]:
    """Every Python object the site documents -> the page (and anchor) it is on."""
    from sphinx.util.inventory import InventoryFile

    with (site / "objects.inv").open("rb") as stream:
        inventory = InventoryFile.load(stream, "", lambda base, uri: uri)
    return {name: entry.uri for domain, entries in inventory.items() if domain.startswith("py:")
            for name, entry in entries.items()}


def test_api_reference_documents_every_public_name(site: Path) -> None:
    """Every public name of every module of the installed package is in the API reference:
    under `histtrim` when `histtrim/__init__.py` re-exports it from its module, else under
    its module; and every module is in the Python Module Index."""
    documented = _inventory(site)
    missing = []
    for module, names in _public_names().items():
        assert module in documented, f"{module} is not in the module index"
        for name in names:
            if f"{module}.{name}" in documented:
                continue
            if name in histtrim.__all__ and f"histtrim.{name}" in documented:
                continue
            missing.append(f"{module}.{name}")
    assert not missing, f"{len(missing)} public names not in the API reference: {missing}"
    for name in ("histtrim.integrations.langchain.HisttrimMiddleware",
                 "histtrim.integrations.pydantic_ai.HisttrimCapability",
                 "histtrim.integrations.openai_agents.run_with_histtrim",
                 "histtrim.adapters.openai.trim_openai", "histtrim.review.cache.CacheModel",
                 "histtrim.adapters.RecordTrimResult"):
        assert documented.get(name, "").startswith("api/"), name


def test_api_reference_documents_only_the_installed_package(site: Path) -> None:
    """`livingspec` (the repository's, not installed) is on the contributors' page, never in
    the user's reference nor in the Python Module Index."""
    for page in [site / "api.html", *sorted((site / "api").glob("*.html"))]:
        documented = [i for i in _page(page).ids if i.startswith("livingspec")]
        assert not documented, (page.name, documented[:3])
    assert "livingspec" not in (site / "py-modindex.html").read_text(encoding="utf-8")
    ids = _page(site / "contributing.html").ids
    for name in ("livingspec.examples.agent_session", "livingspec.plotting.turns.turn_map",
                 "livingspec.specindex.rule_coverage",
                 "livingspec.plotting.tables.print_block"):
        assert name in ids, name


def test_api_reference_is_grouped_by_spec_section(site: Path) -> None:
    """The API reference's sections are RULES.md's, in its order, each holding the names that
    implement its rules (e.g. the event under "Visible trimming")."""
    text = (site / "api.html").read_text(encoding="utf-8")
    sections = list(dict.fromkeys(rule.section for rule in rules(RULES)))
    slugs = [re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") for title in sections]
    found = [slug for slug in slugs if f'id="{slug}"' in text]
    assert found == slugs  # every section of the spec heads a group, in the spec's order
    at = {slug: text.index(f'id="{slug}"') for slug in slugs}
    for name, slug in (("HistoryTrimmed", "visible-trimming"), ("sweep_orphans",
                       "pairing-safety-and-separate-limits"), ("index_turns",
                       "turns-and-the-two-representations"), ("Agent", "when-trimming-runs")):
        position = text.index(f'id="histtrim.{name}"')
        following = [p for p in at.values() if p > at[slug]]
        assert at[slug] < position < min(following, default=len(text)), name


def test_decisions_chapter_covers_every_listed_decision(site: Path) -> None:
    text = (site / "decisions.html").read_text(encoding="utf-8")
    for title in ("The byte estimate", "Declared attachments of tool results",
                  "The budget, step by step", "Unknown capacity", "The reactive two thirds",
                  "The breadcrumb owner flag", "The orphan-sweep pairing",
                  "The tool-result cap", "The channel cache default",
                  "The capacity message wording", "The envelope model",
                  "budget</span></code> field"):
        assert title in text, title
    links = _page(site / "decisions.html").links
    assert ("02_whole_turn_retention.html#keep-1", "KEEP-1") in links


def test_spec_pages_name_the_authoritative_text_and_map_the_rust_names(site: Path) -> None:
    text = (site / "spec" / "index.html").read_text(encoding="utf-8")
    assert "The Spanish original is the\nauthoritative text" in text or (
        "The Spanish original is the authoritative text" in text)
    for rust in ("history_trim::trim_to_recent_turns", "history_trim::trim_to_recent_turn_count",
                 "history_trim::trim_conversation_to_recent_turns",
                 "ResolvedRuntime::effective_context_budget()", "history::estimate_history_tokens",
                 "Agent::history", "loop_.rs"):
        assert rust in text, rust
    original = (site / "spec" / "original.html").read_text(encoding="utf-8")
    assert "Gestión del historial" in original and "Seguridad de emparejamiento" in original


def test_landing_page_shows_the_build_and_test_status(site: Path) -> None:
    text = (site / "index.html").read_text(encoding="utf-8")
    assert "Commit" in text and "Test status" in text
    assert re.search(r"<td><p>[0-9a-f]{12}( \(with uncommitted changes\))? \(committed ", text)


def test_notebook_outputs_hold_no_machine_paths() -> None:
    """Errors show type and message only, so no traceback path of this machine is committed."""
    for notebook in NOTEBOOKS:
        text = notebook.read_text(encoding="utf-8")
        for marker in (str(ROOT), "site-packages", "/root/", "Traceback (most recent call"):
            assert marker not in text, (notebook.name, marker)


def _output_kinds(outputs: list[dict[str, object]]) -> list[str]:
    """What a reader sees of a cell's outputs, in order: `stream` (printed text, blank
    prints dropped) or `display` (a table, a figure, a value, a traceback)."""
    kinds = []
    for output in outputs:
        if output["output_type"] == "stream":
            if "".join(output["text"]).strip():  # type: ignore[arg-type]
                kinds.append("stream")
        else:
            kinds.append("display")
    return kinds


def test_outputs_keep_the_order_the_cell_printed_them(site: Path) -> None:
    """A label printed before a table stays above that table: the page shows each cell's
    outputs in the notebook's order (streams are not merged), no output box is empty, and a
    cell's figure caption captions its figure, not its tables too."""
    token = re.compile(r'<div class="output (stream|text_html|text_plain|traceback)'
                       r'|<img [^>]*src="_images/')
    for notebook in NOTEBOOKS:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        expected = [kind for c in cells
                    if c["cell_type"] == "code" and c["outputs"]
                    and "remove-cell" not in c["metadata"].get("tags", [])
                    and "remove-output" not in c["metadata"].get("tags", [])
                    for kind in _output_kinds(c["outputs"])]
        html = (site / f"{notebook.stem}.html").read_text(encoding="utf-8")
        shown = ["stream" if m.group(1) == "stream" else "display"
                 for part in html.split('<div class="cell_output')[1:]
                 for m in token.finditer(part)]
        assert shown == expected, notebook.name
        assert not re.search(r"<pre><span></span>\s*</pre>", html), notebook.name
        # A figure's caption is under its image only, never under a table of the same cell.
        for figure in re.findall(r"<figure.*?</figure>", html, re.S):
            assert "_images/" in figure and "text_html" not in figure, notebook.name


def test_chapter_00_tables_link_every_chapter(site: Path) -> None:
    """Chapter 00's tables name the chapters as links to their pages, a rule ID never wraps
    at its hyphen, and no cell shows markdown's backticks."""
    html = (site / "00_index.html").read_text(encoding="utf-8")
    links = {href for href, _ in _page(site / "00_index.html").links}
    for notebook in NOTEBOOKS:
        assert f"{notebook.stem}.html" in links, notebook.name
    for entry in rules(RULES):
        assert f'<td class="nowrap">{entry.rule_id}</td>' in html, entry.rule_id
    assert not re.findall(r"<td>[^<]*`[^<]*</td>", html)


def test_contributor_page_holds_the_test_runner_detail(site: Path) -> None:
    """nbval, sanitize.cfg and the tags are contributor matters: on their own page, not in
    the reader's chapter 00."""
    chapter = (site / "00_index.html").read_text(encoding="utf-8")
    assert "sanitize.cfg" not in chapter and "nbval" not in chapter
    page = (site / "contributing.html").read_text(encoding="utf-8")
    assert "sanitize.cfg" in page and "executes nothing" in page


def test_long_figure_tables_are_folded_above_their_figure(site: Path) -> None:
    """A figure's table of numbers longer than a few lines (kept for nbval, which ignores
    images) is folded on the page, so the reader meets the figure, not a wall of rows."""
    for notebook in NOTEBOOKS:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        long_tables = 0
        for cell in cells:
            outputs = cell.get("outputs", [])
            if not any("image/png" in o.get("data", {}) for o in outputs):
                continue
            before = outputs[:next(n for n, o in enumerate(outputs)
                                   if "image/png" in o.get("data", {}))]
            lines = sum(len("".join(o.get("text") or o.get("data", {}).get("text/plain", ""))
                            .splitlines()) for o in before)
            long_tables += lines > 9
        html = (site / f"{notebook.stem}.html").read_text(encoding="utf-8")
        folded = html.count('<details class="admonition hide below-input"')
        assert folded >= long_tables, notebook.name
