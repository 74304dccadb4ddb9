"""The living spec's Sphinx extension: rule anchors, "Implemented by" lines, progress lines.

- Every chapter heading that cites a rule ID (`KEEP-1 — ...`) gets the stable anchor
  `#keep-1` (the first such heading of the page), and the first chapter citing a rule (the
  order of `livingspec.specindex.rule_coverage`) also owns the site-wide label `keep-1`, so
  ``{ref}`KEEP-1 <keep-1>``` links to it from any page.
- Under each such heading, a line "Implemented by:" cross-references the API entries that
  implement the rules it cites (docs/implemented_by.toml); a name that resolves to nothing
  is a warning, so `-W` fails the build.
- One progress line per chapter on stdout (Sphinx itself runs quiet)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx

from livingspec.specindex import RULE_ID, rule_coverage


def _setup_rules(app: Sphinx) -> None:
    src = Path(app.srcdir)
    coverage = rule_coverage(src, src / "spec" / "RULES.md")
    env: Any = app.env
    env.histtrim_rules = {entry.rule_id for entry in coverage}
    env.histtrim_owner = {
        entry.rule_id: Path(entry.notebooks[0]).stem for entry in coverage if entry.notebooks
    }
    table = tomllib.loads((src / "implemented_by.toml").read_text(encoding="utf-8"))
    env.histtrim_impl = table["rules"]
    unknown = sorted(set(env.histtrim_impl) - env.histtrim_rules)
    missing = sorted(env.histtrim_rules - set(env.histtrim_impl))
    if unknown or missing:
        raise ValueError(
            f"implemented_by.toml: unknown rule IDs {unknown}, rules without an entry {missing}"
        )
    env.histtrim_chapters = sorted(p.stem for p in src.glob("[0-9]*.ipynb"))


def _implemented_by(docname: str, targets: list[str]) -> nodes.paragraph:
    para = nodes.paragraph(classes=["implemented-by"])
    para += nodes.strong(text="Implemented by: ")
    for n, target in enumerate(targets):
        if n:
            para += nodes.Text(", ")
        short = target.removeprefix("histtrim.")
        ref = pending_xref(
            "", refdomain="py", reftype="obj", reftarget=target, refexplicit=True,
            refwarn=True, refdoc=docname,
        )
        ref += nodes.literal(short, short, classes=["xref", "py", "py-obj"])
        para += ref
    return para


def _on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    env: Any = app.env
    docname = env.docname
    if docname not in env.histtrim_chapters:
        return
    std: Any = env.domains.standard_domain
    anchored: set[str] = set()
    for section in doctree.findall(nodes.section):
        title = section[0].astext() if section.children else ""
        cited = [r for r in dict.fromkeys(RULE_ID.findall(title)) if r in env.histtrim_rules]
        if not cited:
            continue
        for rule in cited:
            anchor = rule.lower()
            if rule in anchored or anchor in doctree.ids:
                continue
            anchored.add(rule)
            section["ids"].insert(0, anchor)
            doctree.ids[anchor] = section
            if env.histtrim_owner.get(rule) == docname:
                std.labels[anchor] = (docname, anchor, title)
                std.anonlabels[anchor] = (docname, anchor)
        targets = list(dict.fromkeys(t for r in cited for t in env.histtrim_impl[r]))
        section.insert(1, _implemented_by(docname, targets))
    heading = next(iter(doctree.findall(nodes.title)), None)
    position = env.histtrim_chapters.index(docname) + 1
    print(f"  [{position:>2}/{len(env.histtrim_chapters)}] {docname}: "
          f"{heading.astext() if heading else docname}", flush=True)


def _drop_type_docstring(
    app: Sphinx, what: str, name: str, obj: object, options: object, lines: list[str]
) -> None:
    """A constant (`BREADCRUMB`) has no docstring of its own: autodoc would show its type's
    (`str`'s) instead, and a type alias (`dict[str, Any]`) its origin's (`dict`'s)."""
    inherited = (type(obj).__doc__, getattr(getattr(obj, "__origin__", None), "__doc__", None))
    if what in ("data", "attribute") and getattr(obj, "__doc__", None) in inherited:
        lines.clear()


_ANNOTATED = re.compile(r"~?(?:typing\.|[\w.]*\.)?Annotated\[")
_QUALIFIED = re.compile(r"~(?:\w+\.)+(\w+)")


def readable_type(text: str) -> str:
    """A signature or alias as a reader wants it: `Annotated[T, <pydantic metadata>]` is `T`
    (the constraints are in the docstring), `~module.Name` is `Name`. Bracket-aware, one
    pass per `Annotated`."""
    text = _QUALIFIED.sub(r"\1", text)
    while (match := _ANNOTATED.search(text)) is not None:
        depth, first_end, position = 0, None, match.end()
        while position < len(text):
            char = text[position]
            if char in "[(":
                depth += 1
            elif char in "])":
                if depth == 0:
                    break
                depth -= 1
            elif char == "," and depth == 0 and first_end is None:
                first_end = position
            position += 1
        inner = text[match.end() : first_end if first_end is not None else position]
        text = text[: match.start()] + inner + text[position + 1 :]
    return text


def _readable_signature(
    app: Sphinx, what: str, name: str, obj: object, options: object, signature: str | None,
    return_annotation: str | None,
) -> tuple[str | None, str | None]:
    """Pydantic models' signatures name their fields' `Annotated` metadata (`Strict`,
    `MinLen`, `FieldInfo(...)`): show the types only."""
    return (None if signature is None else readable_type(signature),
            None if return_annotation is None else readable_type(return_annotation))


def _readable_alias(
    app: Sphinx, what: str, name: str, obj: object, options: object, lines: list[str]
) -> None:
    """A type alias's "alias of ..." line without `Annotated` metadata."""
    lines[:] = [readable_type(line) if line.startswith("alias of ") else line for line in lines]


def _readable_types(app: Sphinx, doctree: nodes.document) -> None:
    """What autodoc could not parse into links (an attribute's `Annotated` type, a type
    alias's "alias of" line) as readable text: the types without their pydantic metadata."""
    for signature in doctree.findall(addnodes.desc_signature):
        for text in list(signature.findall(nodes.Text)):
            if "Annotated[" in text or "~" in text:
                text.parent.replace(text, nodes.Text(readable_type(str(text))))
    for para in list(doctree.findall(nodes.paragraph)):
        shown = para.astext()
        if shown.startswith("alias of ") and "Annotated[" in shown:
            para.children = []
            para += nodes.Text("alias of ")
            para += nodes.literal(text=readable_type(shown.removeprefix("alias of ")))


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("doctree-read", _readable_types)
    app.connect("autodoc-process-signature", _readable_signature)
    app.connect("autodoc-process-docstring", _readable_alias)
    app.connect("autodoc-process-docstring", _drop_type_docstring)
    app.connect("builder-inited", _setup_rules)
    app.connect("doctree-read", _on_doctree_read)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}
