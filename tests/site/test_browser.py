"""The built site in a real browser (headless Chromium through Playwright): the landing page,
a chapter and search work, with no console errors, every image loaded and every chapter in
the sidebar, and nothing hidden behind a scrollbar. Screenshots go to build/screenshots/.
Without Chromium, or without the CJK and emoji fonts readers have, this fails in CI (CI set)
and is skipped elsewhere, saying how to install them."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from livingspec.specindex import markdown_headings, rules

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "build" / "screenshots"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
RULES = ROOT / "notebooks" / "spec" / "RULES.md"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def _chromium() -> str:
    found = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which(
        "chromium-browser")
    if found:
        return found
    message = ("no Chromium found: install it (Debian: `apt-get install -y chromium`, which "
               "`.ci/run` does) or set CHROMIUM=/path/to/chromium")
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    """The site served over HTTP on a free local port (search needs http, not file:)."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


# The fonts readers have, which change what is wide: without a CJK font a CJK character
# renders as a narrow box (Debian packages; `.ci/run` installs them).
FONTS = {"fonts-noto-cjk": ":lang=ja", "fonts-noto-color-emoji": "Noto Color Emoji"}


def _check_fonts() -> None:
    fc_list = shutil.which("fc-list")
    missing = [package for package, pattern in FONTS.items() if fc_list is None
               or not subprocess.run([fc_list, pattern], capture_output=True, text=True,
                                     check=False).stdout.strip()]
    if not missing:
        return
    message = (f"fonts missing: install them (Debian: `apt-get install -y {' '.join(missing)}`, "
               "which `.ci/run` does) so the page is seen as readers see it")
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser(base_url: str) -> Iterator[object]:
    executable = _chromium()
    _check_fonts()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=FLAGS)
        yield browser
        browser.close()


def _open(browser: object, url: str, shot: str | None) -> tuple[object, list[str]]:
    """A page at `url` after every resource settled, its console errors, and a screenshot
    (none when `shot` is None)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"failed request {r.url}"))
    page.on("response", lambda r: errors.append(f"HTTP {r.status} {r.url}") if r.status >= 400
            else None)
    page.goto(url, wait_until="networkidle")
    if shot is not None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / shot), full_page=True)
    return page, errors


def _broken_images(page: object) -> list[str]:
    return page.evaluate(  # type: ignore[attr-defined,no-any-return]
        "() => Array.from(document.images)"
        ".filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)"
    )


def test_landing_page(browser: object, base_url: str) -> None:
    page, errors = _open(browser, f"{base_url}/index.html", "landing.png")
    assert not errors
    assert not _broken_images(page)
    assert page.title().startswith("histtrim: the living spec")  # type: ignore[attr-defined]
    sidebar = page.locator("nav.bd-docs-nav a").all_inner_texts()  # type: ignore[attr-defined]
    for notebook in NOTEBOOKS:
        assert markdown_headings(notebook)[0] in sidebar, notebook.name
    assert "Test status" in page.inner_text("article")  # type: ignore[attr-defined]


def test_chapter_with_figures(browser: object, base_url: str) -> None:
    page, errors = _open(browser, f"{base_url}/02_whole_turn_retention.html#keep-1",
                         "chapter-02.png")
    assert not errors
    images = page.locator("article img")  # type: ignore[attr-defined]
    assert images.count() >= 4
    assert not _broken_images(page)
    for alt in images.evaluate_all("els => els.map(e => e.alt)"):
        assert alt and "No description" not in alt
    assert page.locator("#keep-1").is_visible()  # type: ignore[attr-defined]
    next_link = page.locator("a.right-next")  # type: ignore[attr-defined]
    assert next_link.count() == 1 and "03" in next_link.inner_text()


def test_search_finds_a_rule(browser: object, base_url: str) -> None:
    page, errors = _open(browser, f"{base_url}/search.html?q=breadcrumb", "search.png")
    page.wait_for_selector("#search-results ul.search li", timeout=15_000)  # type: ignore[attr-defined]
    results = page.locator("#search-results ul.search li")  # type: ignore[attr-defined]
    assert results.count() >= 3
    page.screenshot(path=str(SHOTS / "search.png"), full_page=True)  # type: ignore[attr-defined]
    assert not errors


# What a reader sees at a 1280px-wide window, page by page (one pass, one JSON per page).
_LAYOUT = """() => {
  const article = document.querySelector("article.bd-article");
  const right = article.getBoundingClientRect().right;
  const scroller = (e) => {
    for (let p = e.parentElement; p && p !== article; p = p.parentElement) {
      if (["auto", "scroll"].includes(getComputedStyle(p).overflowX)) return p;
    }
    return null;
  };
  const name = (e) => e.tagName.toLowerCase() + (e.className ? "." + e.className : "")
    + ": " + e.textContent.trim().slice(0, 50);
  const wider = [...article.querySelectorAll("*")]
    .filter((e) => e.getBoundingClientRect().right > right + 1 && !scroller(e)).map(name);
  // Content wider than its own box (a <pre> or a table that scrolls sideways): hidden
  // behind a scrollbar. Inline elements have no box (both widths 0).
  const overflowing = [...article.querySelectorAll("*")]
    .filter((e) => e.scrollWidth > e.clientWidth + 1).map(name);
  // (a traceback's too: chapters show an expected error folded, `shows_error`)
  const wrapping = [...article.querySelectorAll("div.cell_output pre")]
    .filter((pre) => getComputedStyle(pre).whiteSpace !== "pre").map(name);
  // The right-hand contents column and the page itself stay inside the window.
  const toc = document.querySelector(".bd-sidebar-secondary");
  const outside = [...document.querySelectorAll(".bd-sidebar-secondary *")]
    .filter((e) => e.getBoundingClientRect().right > innerWidth + 1).map(name);
  if (toc && toc.scrollWidth > toc.clientWidth + 1) outside.push(name(toc));
  if (document.documentElement.scrollWidth > innerWidth + 1) outside.push("the page scrolls");
  const figures = [...article.querySelectorAll("img")]
    .filter((i) => i.getBoundingClientRect().width < 0.75 * i.naturalWidth - 1)
    .map((i) => `${i.src.split("/").pop().slice(0, 16)}: ${i.naturalWidth}px shown at `
      + `${Math.round(i.getBoundingClientRect().width)}px`);
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  const backticks = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const inCode = n.parentElement.closest("pre, code, .highlight, .cell_output");
    if (n.textContent.includes("`") && !inCode)
      backticks.push(n.parentElement.textContent.trim().slice(0, 60));
  }
  const broken = [...document.images]
    .filter((i) => !i.complete || i.naturalWidth === 0).map((i) => i.src);
  const code = [...document.querySelectorAll("div.cell:not(.tag_hide-input) div.cell_input pre")]
    .map((e) => [e.scrollWidth, e.clientWidth]);
  return {wider, overflowing, wrapping, outside, figures, backticks, broken, code};
}"""


def _site_pages(site: Path) -> list[str]:
    """Every page a reader reaches from the sidebar (the search and index pages aside; the
    in-browser spec under lite/ is JupyterLite's app, tested by test_lite.py)."""
    skip = {"search.html", "genindex.html", "py-modindex.html"}
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                  if not {"_static", "lite"} & set(p.parts) and p.name not in skip)


@pytest.fixture(scope="module")
def layouts(browser: object, base_url: str, site: Path) -> dict[str, dict[str, list[object]]]:
    """Every page at 1280 x 900 after every resource settled: its layout facts, its broken
    images, its visible code boxes, its console errors and failed requests (`errors`), and a
    full-page screenshot of each. One visit a page serves every check below (each used to
    load every chapter again)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    errors: list[str] = []  # the page being visited: every resource settled before the next
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"failed request {r.url}"))
    page.on("response", lambda r: errors.append(f"HTTP {r.status} {r.url}") if r.status >= 400
            else None)
    found = {}
    SHOTS.mkdir(parents=True, exist_ok=True)
    for name in _site_pages(site):
        errors.clear()
        page.goto(f"{base_url}/{name}", wait_until="networkidle")
        found[name] = page.evaluate(_LAYOUT)
        page.screenshot(path=str(SHOTS / f"1280-{name.replace('/', '-')[:-5]}.png"),
                        full_page=True)
        found[name]["errors"] = list(errors)
    page.close()
    return found


def test_every_page_loads_clean(layouts: dict) -> None:  # type: ignore[type-arg]
    """No console error, failed request or HTTP error, and every image loaded, on every page
    (every chapter included)."""
    assert {f"{n.stem}.html" for n in NOTEBOOKS} <= set(layouts)
    unclean = {page: found["errors"] for page, found in layouts.items() if found["errors"]}
    assert not unclean
    broken = {page: found["broken"] for page, found in layouts.items() if found["broken"]}
    assert not broken


def test_visible_code_fits_a_1280px_window(layouts: dict) -> None:  # type: ignore[type-arg]
    """No visible code cell scrolls sideways at a 1280px-wide window: the 84 columns that
    tests/test_notebook_style.py allows fit the code column (hide-input cells may scroll)."""
    scrolling = []
    for notebook in NOTEBOOKS:
        widths = layouts[f"{notebook.stem}.html"]["code"]
        assert widths, notebook.name
        scrolling += [f"{notebook.stem} code cell {n}" for n, (scroll, client)
                      in enumerate(widths) if scroll > client]
    assert not scrolling, scrolling


def test_nothing_in_an_article_is_wider_than_the_article(layouts: dict) -> None:  # type: ignore[type-arg]
    """No element pokes out of the article column."""
    wider = {page: found["wider"][:3] for page, found in layouts.items() if found["wider"]}
    assert not wider


def test_nothing_is_hidden_behind_a_scrollbar(layouts: dict) -> None:  # type: ignore[type-arg]
    """No element of an article, an output's `<pre>` included, has content wider than its
    box: what does not fit would be behind a scrollbar, and it is often the point (an error's
    advice, an event's token counts). Outputs are shaped for the column instead
    (`histtrim.display.columns`: lines broken with a hanging indent, tables narrowed)."""
    hidden = [f"{page}: {box}" for page, found in layouts.items() for box in found["overflowing"]]
    assert not hidden, f"{len(hidden)} boxes narrower than their content: {hidden}"


def test_output_lines_keep_their_columns(layouts: dict) -> None:  # type: ignore[type-arg]
    """Printed output never wraps in the browser (a text table keeps its columns): the text
    itself is shaped for the column."""
    wrapped = {page: found["wrapping"] for page, found in layouts.items() if found["wrapping"]}
    assert not wrapped


def test_the_contents_column_stays_in_the_window(layouts: dict) -> None:  # type: ignore[type-arg]
    """The right-hand "on this page" column and the page never run past a 1280px window."""
    outside = {page: found["outside"][:3] for page, found in layouts.items() if found["outside"]}
    assert not outside


def test_figures_are_shown_at_three_quarters_of_their_size(layouts: dict) -> None:  # type: ignore[type-arg]
    """A figure shrunk below 75 % of its pixels has unreadable ticks and legends: draw it
    narrower instead."""
    small = {page: found["figures"] for page, found in layouts.items() if found["figures"]}
    assert not small


def test_no_stray_backtick_in_prose(layouts: dict) -> None:  # type: ignore[type-arg]
    """A literal backtick in prose is a code span the markdown broke (a line starting with
    `+ ` inside it became a list item) or a table cell that shows its markup."""
    stray = {page: found["backticks"] for page, found in layouts.items() if found["backticks"]}
    assert not stray


def test_a_rule_id_typed_into_search_lands_on_its_anchor(browser: object, base_url: str) -> None:
    """Every rule ID of RULES.md, typed into the search field, lands on the heading of the
    chapter that demonstrates it (its anchor), scrolled into view; lower case too."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    missed = []
    for n, rule in enumerate(rules(RULES)):
        query = rule.rule_id.lower() if n % 2 else rule.rule_id
        anchor = rule.rule_id.lower()
        # the search page replaces itself with the chapter: wait for that page's load event
        # (its images laid out), not for half a second of network silence on each of them
        page.goto(f"{base_url}/search.html?q={query}", wait_until="commit")
        from playwright.sync_api import TimeoutError as NoLanding

        with contextlib.suppress(NoLanding):  # a miss is reported below, with where it went
            page.wait_for_url(f"**#{anchor}", wait_until="load", timeout=15_000)
        landed = page.evaluate(
            "(id) => { const e = document.getElementById(id); if (!e) return null;"
            " const top = e.getBoundingClientRect().top;"
            " return location.hash === '#' + id && top >= 0 && top < innerHeight; }", anchor)
        if not landed:
            missed.append(f"{query} -> {page.url}")
    page.close()
    assert not missed, missed
