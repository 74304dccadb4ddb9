"""Write the index page of the rendered spec (build/spec/index.html).

Lists the notebooks (title = first markdown heading) with links to their HTML, and
every rule ID of RULES.md with links to the notebook headings that cite it
(``<notebook>.html#<heading id>``). Rules and headings are read by `histtrim.specindex`
(the same reader as notebook 00's index). Heading ids are read from the HTML that
``jupyter nbconvert --to html`` wrote next to the index when it exists; otherwise
they are computed the way nbconvert does (rendered heading text, spaces -> '-', URL-quoted).

Usage: python tools/render_index.py [--notebooks notebooks] [--rules notebooks/spec/RULES.md]
                                    [--out build/spec/index.html]
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

from histtrim.specindex import RULE_ID, Rule, notebook_headings, rules

_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(
    r"(\*\*|\*)(\S(?:.*?\S)?)\1"  # ** and * work inside words
    r"|(?<![A-Za-z0-9])(__|_)(\S(?:.*?\S)?)\3(?![A-Za-z0-9])"  # _ and __ do not
)
_SLOT = re.compile(r"\x00(\d+)\x00")


@dataclass
class Heading:
    """A heading as the rendered page shows it: level, text and its id."""

    level: int
    text: str
    anchor: str


@dataclass
class Notebook:
    path: Path
    title: str
    headings: list[Heading] = field(default_factory=list)

    @property
    def html_name(self) -> str:
        return self.path.with_suffix(".html").name


def nbconvert_anchor(text: str) -> str:
    """The id nbconvert gives a heading whose rendered text is ``text``."""
    return quote(text.replace(" ", "-"), safe="?/:@!$&'()*+,;=")


def strip_inline_markdown(text: str) -> str:
    """Approximate the rendered text of a markdown heading: code spans become their content,
    verbatim (`trim_to_recent_turns` keeps its underscores), then links and emphasis are
    stripped outside them."""
    spans: list[str] = []

    def hold(match: re.Match[str]) -> str:
        content = match.group(2)
        if content.startswith(" ") and content.endswith(" ") and content.strip():
            content = content[1:-1]
        spans.append(content)
        return f"\x00{len(spans) - 1}\x00"

    text = _CODE_SPAN.sub(hold, text)
    text = _LINK.sub(r"\1", text)
    previous = None
    while previous != text:  # nested emphasis, outermost first
        previous = text
        text = _EMPHASIS.sub(lambda m: m.group(2) or m.group(4), text)
    return _SLOT.sub(lambda m: spans[int(m.group(1))], text).strip()


class _HeadingIds(HTMLParser):
    """Collects (level, text, id) of the h1..h6 elements of an nbconvert HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[Heading] = []
        self._open: tuple[int, str] | None = None
        self._text: list[str] = []
        self._in_anchor_link = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if re.fullmatch(r"h[1-6]", tag) and attributes.get("id"):
            self._open = (int(tag[1]), attributes["id"] or "")
            self._text = []
        elif self._open and tag == "a" and "anchor-link" in (attributes.get("class") or ""):
            self._in_anchor_link += 1

    def handle_endtag(self, tag: str) -> None:
        if self._open and tag == "a" and self._in_anchor_link:
            self._in_anchor_link -= 1
        elif self._open and tag == f"h{self._open[0]}":
            level, anchor = self._open
            self.found.append(Heading(level, "".join(self._text).strip(), anchor))
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open and not self._in_anchor_link:
            self._text.append(data)


def fallback_headings(path: Path) -> list[Heading]:
    """The notebook's headings with the text and id nbconvert would give them."""
    headings = []
    for heading in notebook_headings(path):
        rendered = strip_inline_markdown(heading.text)
        headings.append(Heading(heading.level, rendered, nbconvert_anchor(rendered)))
    return headings


def load_notebook(path: Path, html_dir: Path) -> Notebook:
    headings = fallback_headings(path)
    rendered = html_dir / path.with_suffix(".html").name
    if rendered.exists():
        parser = _HeadingIds()
        parser.feed(rendered.read_text(encoding="utf-8"))
        if parser.found:
            headings = parser.found
    title = headings[0].text if headings else path.stem
    return Notebook(path=path, title=title, headings=headings)


def inline_code(text: str) -> str:
    """Escape text and render `code` spans."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(
        f"<code>{html.escape(part[1:-1])}</code>"
        if part.startswith("`") and part.endswith("`") and len(part) > 1
        else html.escape(part)
        for part in parts
    )


def render(notebooks: list[Notebook], listed: list[Rule]) -> str:
    citations: dict[str, list[tuple[Notebook, Heading]]] = {}
    for notebook in notebooks:
        for heading in notebook.headings:
            for rule_id in dict.fromkeys(RULE_ID.findall(heading.text)):
                citations.setdefault(rule_id, []).append((notebook, heading))

    out: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        "<title>histtrim: the executable spec</title>",
        "<style>",
        "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}",
        "td,th{vertical-align:top;padding:.2rem .6rem;text-align:left}th{white-space:nowrap}",
        ".missing{color:#b00}",
        "code{background:#f3f3f3;padding:0 .2rem}",
        "</style>",
        "</head>",
        "<body>",
        "<h1>histtrim: the executable spec</h1>",
        "<h2>Notebooks</h2>",
        "<ol>",
    ]
    for notebook in notebooks:
        out.append(
            f'<li><a href="{html.escape(notebook.html_name)}">{html.escape(notebook.title)}</a>'
            f" <small>({html.escape(notebook.path.name)})</small></li>"
        )
    out.append("</ol>")

    out.append("<h2>Rules</h2>")
    section = None
    for rule in listed:
        if rule.section != section:
            if section is not None:
                out.append("</table>")
            section = rule.section
            out.append(f"<h3>{inline_code(section)}</h3>")
            out.append("<table>")
        links = [
            f'<a href="{html.escape(nb.html_name)}#{html.escape(h.anchor)}">'
            f"{html.escape(nb.path.stem)}: {html.escape(h.text)}</a>"
            for nb, h in citations.get(rule.rule_id, [])
        ]
        cited = "<br>".join(links) if links else '<span class="missing">not demonstrated</span>'
        out.append(
            f'<tr id="{rule.rule_id}"><th>{rule.rule_id}</th>'
            f"<td>{inline_code(rule.text)}</td><td>{cited}</td></tr>"
        )
    if section is not None:
        out.append("</table>")
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--notebooks", type=Path, default=Path("notebooks"))
    parser.add_argument("--rules", type=Path, default=Path("notebooks/spec/RULES.md"))
    parser.add_argument("--out", type=Path, default=Path("build/spec/index.html"))
    args = parser.parse_args(argv)

    out: Path = args.out
    notebooks = [load_notebook(p, out.parent) for p in sorted(args.notebooks.glob("*.ipynb"))]
    listed = rules(args.rules)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(notebooks, listed), encoding="utf-8")
    uncited = [
        r.rule_id
        for r in listed
        if not any(r.rule_id in RULE_ID.findall(h.text) for nb in notebooks for h in nb.headings)
    ]
    print(f"wrote {out}: {len(notebooks)} notebooks, {len(listed)} rules, {len(uncited)} uncited")
    return 0


if __name__ == "__main__":
    sys.exit(main())
