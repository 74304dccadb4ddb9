"""Build the living spec site (`make spec`): Sphinx + MyST-NB + sphinx-book-theme.

Stages docs/, every notebook of notebooks/ (committed outputs, never executed) and the spec
files into build/site-src, generates the pages that are derived from project files (the
rule table from RULES.md, the Spanish original, the API reference from `histtrim.__all__`,
the build information of the landing page), then runs Sphinx with warnings as errors.
Quiet: one line per chapter, and the last line says where the site is (or why it failed).

Usage: python tools/build_site.py [--out build/spec] [--allow-warnings]
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import importlib
import inspect
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from livingspec.specindex import RULE_ID, rule_coverage, rules

ROOT = Path(__file__).resolve().parent.parent
STATUS = ROOT / "build" / "test-status.json"
# The living spec's modules the notebooks use, documented after the public API.
SUBMODULES = ["livingspec.examples", "livingspec.specindex",
              *(f"livingspec.plotting.{p.stem}"
                for p in sorted((ROOT / "livingspec" / "plotting").glob("[!_]*.py"))
                if p.stem != "__init__")]


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def build_info(chapters: int) -> dict[str, object]:
    """Commit, its date, the build date and the recorded test status, for the landing page."""
    commit = _git("rev-parse", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    epoch = int(_git("log", "-1", "--format=%ct") or 0)
    date = dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d %H:%M UTC") if epoch else "-"
    shown = commit[:12] + (" (with uncommitted changes)" if dirty else "") if commit else "unknown"
    return {
        "commit": shown,
        "date": date,
        "epoch": epoch,
        "version": _version(),
        "chapter_count": chapters,
        "test_status": test_status(commit, dirty),
    }


def _version() -> str:
    import histtrim

    return getattr(histtrim, "__version__", "0.1.0")


def test_status(commit: str, dirty: bool) -> str:
    """One sentence on the last `make test` of this clone (build/test-status.json)."""
    if not STATUS.exists():
        return ("no test run is recorded in this clone (`build/test-status.json` is written by "
                "`make test`)")
    status = json.loads(STATUS.read_text(encoding="utf-8"))
    counts = (f"{status['passed']} passed, {status['failed']} failed, {status['skipped']} "
              f"skipped, including strict nbval of {status['notebooks']} notebooks' committed "
              f"outputs ({status['date']})")
    verdict = "passed" if status["returncode"] == 0 and status["failed"] == 0 else "FAILED"
    if status["commit"] != commit or status["dirty"] or dirty:
        return (f"the last recorded `make test` ({verdict}: {counts}) ran at commit "
                f"{status['commit'][:12]}{' with uncommitted changes' if status['dirty'] else ''}"
                f", not exactly this build's tree: run `make test` to check it")
    return f"`make test` {verdict} at this commit: {counts}"


def rules_page(src: Path) -> str:
    """RULES.md as a page: every rule with links to the chapters that demonstrate it."""
    coverage = {c.rule_id: c for c in rule_coverage(src, src / "spec" / "RULES.md")}
    text = (src / "spec" / "RULES.md").read_text(encoding="utf-8")
    intro = text.split("\n## ", 1)[0].splitlines()[1:]
    out = ["# The rules (RULES.md)", "", *(line.replace("`history-management.es.txt` beside this "
           "file", "{doc}`the Spanish original <original>` beside this page") for line in intro),
           "", "Each rule ID links to the heading of the first chapter that demonstrates it "
           "(its stable anchor, e.g. `02_whole_turn_retention.html#keep-1`); the other "
           "chapters that cite it follow.", ""]
    section = None
    for rule in rules(src / "spec" / "RULES.md"):
        if rule.section != section:
            section = rule.section
            out += ["", f"## {section}", "", "| Rule | Text | Demonstrated in |", "|---|---|---|"]
        chapters = coverage[rule.rule_id].notebooks
        first = f"{{ref}}`{rule.rule_id} <{rule.rule_id.lower()}>`" if chapters else rule.rule_id
        seen = ", ".join(f"{{doc}}`{Path(nb).stem} <../{Path(nb).stem}>`" for nb in chapters)
        out.append(f"| {first} | {rule.text.replace('|', chr(92) + '|')} | {seen or '—'} |")
    return "\n".join(out) + "\n"


def rules_script(src: Path) -> str:
    """`HISTTRIM_RULES`: each rule ID -> its anchor (the heading of the first chapter that
    demonstrates it, else its row of the rule table), for site.js: a rule ID typed into the
    search field lands there."""
    anchors = {entry.rule_id: (f"{Path(entry.notebooks[0]).stem}.html#{entry.rule_id.lower()}"
                               if entry.notebooks else f"spec/rules.html#{entry.rule_id.lower()}")
               for entry in rule_coverage(src, src / "spec" / "RULES.md")}
    return f"window.HISTTRIM_RULES = {json.dumps(anchors, indent=1)};\n"


def original_page(src: Path) -> str:
    """The Spanish original as a page: short unpunctuated lines become headings."""
    lines = (src / "spec" / "history-management.es.txt").read_text(encoding="utf-8").splitlines()
    title, body = lines[0].strip(), lines[1:]
    out = [f"# El original: {title}", "",
           ":::{note}", "This is the authoritative text of the spec (Spanish). "
           "{doc}`rules` is the same spec cut into numbered rules, in English; "
           "where the two differ, this text wins.", ":::", ""]
    for line in body:
        stripped = line.strip()
        if stripped.startswith("• "):
            out.append("- " + stripped[2:])
        elif stripped and len(stripped) < 60 and not stripped.endswith((".", ":", ",")):
            out += [f"## {stripped}", ""]
        else:
            out.append(stripped)
    return "\n".join(out) + "\n"


def _public_sources() -> dict[str, str]:
    """Each name of `histtrim.__all__` -> the submodule `histtrim/__init__.py` imports it from."""
    tree = ast.parse((ROOT / "histtrim" / "__init__.py").read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                found[alias.asname or alias.name] = node.module
    return found


def layer_order(modules: list[str]) -> list[str]:
    """`modules` (paths under histtrim/) lower layers first, read from the tree: a module
    comes after every module it imports (ties by name)."""
    deps: dict[str, set[str]] = {}
    for module in modules:
        path = ROOT / "histtrim" / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deps[module] = {n.module.removeprefix("histtrim.") for n in ast.walk(tree)
                        if isinstance(n, ast.ImportFrom) and n.module
                        and n.module.removeprefix("histtrim.") in modules} - {module}
    ordered: list[str] = []
    while len(ordered) < len(modules):
        ready = sorted(m for m in modules if m not in ordered and deps[m] <= set(ordered))
        ordered.append(ready[0] if ready else sorted(set(modules) - set(ordered))[0])
    return ordered


def _rst_heading(text: str, underline: str) -> list[str]:
    return [text, underline * len(text), ""]


def api_sections() -> list[tuple[str, list[str], list[str]]]:
    """The API reference's sections: (a section of RULES.md, its rule IDs, the names of
    `histtrim.__all__` documented under it). A name goes under the first section with a rule
    `docs/implemented_by.toml` maps it to (a member, `Class.attr`, brings its class), else
    under the first rule its defining module's docstring cites; a name citing no rule goes to
    a last section, "Supporting types". Names keep their modules' layer order."""
    import tomllib

    import histtrim

    spec = rules(ROOT / "notebooks" / "spec" / "RULES.md")
    section_of = {rule.rule_id: rule.section for rule in spec}
    implemented = tomllib.loads((ROOT / "docs" / "implemented_by.toml").read_text("utf-8"))
    cites: dict[str, Counter[str]] = {}
    for rule in spec:
        for entry in implemented["rules"].get(rule.rule_id, []):
            name = entry.removeprefix("histtrim.").split(".")[0]
            cites.setdefault(name, Counter())[rule.section] += 1
    home = {name: count.most_common(1)[0][0] for name, count in cites.items()}
    sources = _public_sources()
    for name in histtrim.__all__:
        if name not in home:
            doc = inspect.getdoc(importlib.import_module(f"histtrim.{sources[name]}")) or ""
            cited = [r for r in RULE_ID.findall(doc) if r in section_of]
            home[name] = section_of[cited[0]] if cited else SUPPORTING
    rank = {module: i for i, module in enumerate(layer_order(sorted(set(sources.values()))))}
    names = sorted(histtrim.__all__, key=lambda n: rank[sources[n]])
    sections = [*dict.fromkeys(rule.section for rule in spec), SUPPORTING]
    out = []
    for section in sections:
        ids = [rule.rule_id for rule in spec if rule.section == section]
        members = [name for name in names if home[name] == section]
        if members:
            out.append((section, ids, members))
    return out


SUPPORTING = "Supporting types"


def api_page() -> str:
    """The API reference (reStructuredText, autodoc's own language): every name of
    `histtrim.__all__`, grouped by the spec section whose rules it implements
    (`api_sections`), then the public submodules that are not re-exported."""
    import histtrim

    out = [*_rst_heading("API reference", "="),
           "Generated from the docstrings. Everything in the first sections is importable from "
           "``histtrim`` directly (``from histtrim import trim_to_recent_turns``); the sections "
           "follow the spec's sections (:doc:`spec/rules`), each headed by its rules and "
           "holding the names that implement them (``docs/implemented_by.toml``). The last "
           "sections are the living spec's modules the notebooks use (``livingspec``, in the "
           "repository, not installed).", ""]
    for section, ids, names in api_sections():
        out += _rst_heading(_literals(section), "-")
        if ids:
            links = ", ".join(f":ref:`{rule} <{rule.lower()}>`" for rule in ids)
            out += [f"Rules: {links}.", ""]
        for name in names:
            obj = getattr(histtrim, name)
            if inspect.isclass(obj):
                out += [f".. autoclass:: histtrim.{name}", "   :members:", ""]
            elif inspect.isfunction(obj):
                out += [f".. autofunction:: histtrim.{name}", ""]
            else:
                out += [f".. autodata:: histtrim.{name}", ""]
    for module in SUBMODULES:
        out += [*_rst_heading(module, "-"), f".. automodule:: {module}", "   :members:", ""]
    return "\n".join(out) + "\n"


def _literals(text: str) -> str:
    """Markdown code spans as reST literals."""
    return re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", text)


_CELL = re.compile(r"<td>([^<]*)</td>")


def _link_cells(html_text: str, chapters: set[str]) -> str:
    """Table cells of an output as a reader wants them on the site: a chapter's file name
    (`01_turns.ipynb`) links to its page, and a rule ID alone in a cell never wraps at its
    hyphen."""

    def cell(match: re.Match[str]) -> str:
        text = match.group(1)
        if RULE_ID.fullmatch(text):
            return f'<td class="nowrap">{text}</td>'
        linked = re.sub(r"\b(\d\d_\w+)\.ipynb\b", lambda m: (
            f'<a href="{m.group(1)}.html">{m.group(1)}</a>' if m.group(1) in chapters
            else m.group(0)), text)
        return f"<td>{linked}</td>"

    return _CELL.sub(cell, html_text)


def stage_notebook(notebook: Path, target: Path) -> None:
    """Copy a notebook for the site without its blank stream outputs (a `print()` between
    two displays spaces the text a kernel prints, but would be an empty box on the page).
    Every other output stays where it is: the site does not merge streams, so a label
    printed before a table stays above that table."""
    data = json.loads(notebook.read_text(encoding="utf-8"))
    chapters = {p.stem for p in notebook.parent.glob("[0-9]*.ipynb")}
    cells = []
    for cell in data["cells"]:
        if "outputs" in cell:
            cell["outputs"] = [o for o in cell["outputs"] if o["output_type"] != "stream"
                               or "".join(o["text"]).strip()]
        for output in cell.get("outputs", []):
            html_text = output.get("data", {}).get("text/html")
            if html_text is not None:
                output["data"]["text/html"] = _link_cells("".join(html_text), chapters)
        cells += _caption_figures_only(cell)
    if notebook.stem in IN_BROWSER:
        cells.insert(1, _run_in_browser(notebook.stem))
    data["cells"] = cells
    target.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


# The chapters that run in the browser (`make lite`, tools/build_lite.py builds them).
IN_BROWSER = json.loads((ROOT / "lite" / "chapters.json").read_text(encoding="utf-8"))["runs"]


def _run_in_browser(stem: str) -> dict[str, Any]:
    """A markdown cell under the chapter's title: its link into the in-browser spec."""
    link = (f'<a class="reference external lite-run" href="lite/notebooks/index.html?path='
            f'{stem}.ipynb">Run in browser</a>')
    return {"cell_type": "markdown", "id": "lite-run", "metadata": {},
            "source": f"{link}: this chapter runs in JupyterLite (Python in the page, nothing "
                      "installed; the first run loads about 30 MB)."}


# A figure's data table longer than this is folded on the site (the figure shows it).
FOLD_LINES = 9


def _caption_figures_only(cell: dict[str, Any]) -> list[dict[str, Any]]:
    """A cell whose metadata captions its figure (`mystnb.figure`), split so that only its
    images carry the caption: MyST-NB would put it under every display of the cell, tables
    included. The input shows once, above the first part; the parts keep the output order;
    a long table before the figure is folded (FOLD_LINES)."""
    figure = cell.get("metadata", {}).get("mystnb", {}).get("figure")
    outputs = cell.get("outputs", [])
    is_image = [any(k.startswith("image/") for k in o.get("data", {})) for o in outputs]
    if not figure or all(is_image) or not any(is_image):
        return [cell]
    parts: list[dict[str, Any]] = []
    for image, output in zip(is_image, outputs, strict=True):
        if not parts or parts[-1]["_image"] != image:
            metadata = json.loads(json.dumps(cell["metadata"]))
            if not image:
                metadata["mystnb"].pop("figure")
            if parts:
                metadata["tags"] = [*metadata.get("tags", []), "remove-input"]
            parts.append({**cell, "id": f"{cell.get('id', 'cell')}-{len(parts)}",
                          "metadata": metadata, "outputs": [], "_image": image,
                          "source": cell["source"] if not parts else "# (its figure)"})
        parts[-1]["outputs"].append(output)
    for part in parts:
        # A long table of a figure's numbers is there for nbval (which ignores images): on
        # the site it is folded above its figure; a short one stays open.
        if not part.pop("_image") and _lines(part["outputs"]) > FOLD_LINES:
            part["metadata"]["tags"] = [*part["metadata"].get("tags", []), "hide-output"]
    return parts


def _lines(outputs: list[dict[str, Any]]) -> int:
    """The printed lines of outputs (a display counts by its text form)."""
    return sum(len("".join(o.get("text") or o.get("data", {}).get("text/plain", "")).splitlines())
               for o in outputs)


def stage(src: Path) -> int:
    """Copy the sources into `src` and write the generated pages; return the chapter count."""
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(ROOT / "docs", src, ignore=shutil.ignore_patterns("__pycache__"))
    chapters = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
    for notebook in chapters:
        stage_notebook(notebook, src / notebook.name)
    for name in ("RULES.md", "history-management.es.txt"):
        shutil.copy2(ROOT / "notebooks" / "spec" / name, src / "spec" / name)
    (src / "spec" / "rules.md").write_text(rules_page(src), encoding="utf-8")
    (src / "spec" / "original.md").write_text(original_page(src), encoding="utf-8")
    (src / "api.rst").write_text(api_page(), encoding="utf-8")
    (src / "_static" / "rules.js").write_text(rules_script(src), encoding="utf-8")
    info = build_info(len(chapters))
    (src / "_build_info.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    return len(chapters)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "spec")
    parser.add_argument("--src", type=Path, default=ROOT / "build" / "site-src")
    parser.add_argument("--allow-warnings", action="store_true",
                        help="do not fail on warnings (never in make spec / make test)")
    args = parser.parse_args(argv)
    from sphinx.cmd.build import build_main

    chapters = stage(args.src)
    print(f"building the living spec: {chapters} chapters from committed outputs", flush=True)
    log = args.out.parent / f"{args.out.name}-warnings.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    if args.out.exists():
        shutil.rmtree(args.out)
    flags = ["-q", "-E", "-b", "html", "-w", str(log), "--keep-going"]
    if not args.allow_warnings:
        flags.append("-W")
    code = build_main([*flags, "-d", str(args.src / ".doctrees"), str(args.src), str(args.out)])
    warnings = [line for line in log.read_text(encoding="utf-8").splitlines()
                if "WARNING" in line or "ERROR" in line]
    if code != 0:
        print(f"site build FAILED: {len(warnings)} warning(s), listed above and in {log}")
        return 1
    print(f"site: {args.out / 'index.html'} ({len(warnings)} warnings)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
