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
import os
import re
import shutil
import subprocess
import sys
import typing
from collections import Counter
from pathlib import Path
from typing import Any

from livingspec.specindex import RULE_ID, rule_coverage, rules

ROOT = Path(__file__).resolve().parent.parent
STATUS = ROOT / "build" / "test-status.json"
# The living spec's modules the notebooks use (not installed): on the contributors' page.
LIVINGSPEC = ["livingspec.examples", "livingspec.specindex", "livingspec.plotting.tables",
              *(f"livingspec.plotting.{p.stem}"
                for p in sorted((ROOT / "livingspec" / "plotting").glob("[!_]*.py"))
                if p.stem not in ("__init__", "tables"))]
# The tools built on the spec modules, one API page each, in the order a user meets them.
TOOLS = [
    ("integrations", "Framework integrations",
     "histtrim inside an agent framework's run: LangChain, Pydantic AI, the OpenAI Agents SDK."),
    ("adapters", "Adapters: other formats",
     "Histories in OpenAI, Anthropic and LangChain formats, and session files, trimmed by whole "
     "turns."),
    ("review", "Review: replaying sessions under policies",
     "Replays recorded sessions under several policies and compares them, prompt cache "
     "included."),
    ("display", "Display", "Histories and trims shown in Jupyter and as text tables."),
    ("agent", "The agent runtime",
     "The agent whose tool loop trims proactively and reactively, its providers and tools."),
    ("conformance", "Conformance kit",
     "Runs the conformance vectors against another implementation and reports per rule."),
    ("cli", "The command line", "The ``histtrim`` command and the modules behind it."),
]


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


def _defined_names(module: str) -> list[str]:
    """The public names `module` (dotted, `histtrim.trim`) defines (its own, not imported),
    in source order:
    top-level classes, functions and assigned names without a leading underscore, only those
    of its `__all__` when it has one; type parameters (`TypeVar`, `ParamSpec`) aside."""
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = path.with_suffix("") / "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    loaded = importlib.import_module(module)
    listed = getattr(loaded, "__all__", None)
    return [name for name in dict.fromkeys(names) if not name.startswith("_")
            and name != "__all__" and (listed is None or name in listed)
            and not isinstance(getattr(loaded, name, None), TYPE_PARAMETERS)]


TYPE_PARAMETERS = (typing.TypeVar, typing.ParamSpec, typing.TypeVarTuple)


def histtrim_modules() -> list[str]:
    """Every public module of the installed package, dotted under `histtrim.` (`trim`,
    `adapters.openai`, ...): the ones the API reference documents."""
    found = []
    for path in sorted((ROOT / "histtrim").rglob("*.py")):
        parts = path.relative_to(ROOT / "histtrim").with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and not any(p.startswith("_") for p in parts):
            found.append(".".join(parts))
    return found


def _automodule(module: str, skip: set[str]) -> list[str]:
    """A module's docstring (the Python Module Index lists it), then each public name it
    defines that is not documented elsewhere."""
    loaded = importlib.import_module(f"histtrim.{module}")
    out = [f".. automodule:: histtrim.{module}", "   :no-members:", ""]
    for name in _defined_names(f"histtrim.{module}"):
        if name not in skip:
            out += _autodoc(f"histtrim.{module}.{name}", getattr(loaded, name))
    return out


def _autodoc(qualified: str, obj: object) -> list[str]:
    """The autodoc directive of one name: a class with its members, a function, or data
    (with its value when short)."""
    if inspect.isclass(obj):
        return [f".. autoclass:: {qualified}", "   :members:", ""]
    if inspect.isfunction(obj):
        return [f".. autofunction:: {qualified}", ""]
    # A long value (a schema, a table of constants) is the module's to read, not a signature's.
    long = len(repr(obj)) > 80
    return [f".. autodata:: {qualified}", *(["   :no-value:"] if long else []), ""]


def api_page() -> str:
    """The API reference (reStructuredText, autodoc's own language): every name of
    `histtrim.__all__`, grouped by the spec section whose rules it implements
    (`api_sections`); the pages under it document the rest of the installed package."""
    import histtrim

    out = [*_rst_heading("API reference", "="),
           ".. py:module:: histtrim", "",
           "Generated from the docstrings of the installed package. The sections below follow "
           "the spec's sections (:doc:`spec/rules`), each headed by its rules and holding the "
           "names that implement them (``docs/implemented_by.toml``); all of them are "
           "importable from ``histtrim`` directly (``from histtrim import "
           "trim_to_recent_turns``). The pages after them document the rest of the package, "
           "a module at a time: every module of the spec in full, then the tools built on it.",
           "", ".. toctree::", "   :maxdepth: 1", "", "   api/spec",
           *(f"   api/{package}" for package, _, _ in TOOLS), ""]
    for section, ids, names in api_sections():
        out += _rst_heading(_literals(section), "-")
        if ids:
            links = ", ".join(f":ref:`{rule} <{rule.lower()}>`" for rule in ids)
            out += [f"Rules: {links}.", ""]
        for name in names:
            out += _autodoc(f"histtrim.{name}", getattr(histtrim, name))
    return "\n".join(out) + "\n"


def api_module_pages() -> dict[str, str]:
    """The pages under the API reference: `api/spec` (every top-level module of the spec,
    the names already under `histtrim` aside) and one page per tool (`TOOLS`), each module
    with every public name it defines."""
    import histtrim

    sources = _public_sources()
    exported = {(sources[name], name) for name in histtrim.__all__}
    modules = histtrim_modules()
    pages: dict[str, str] = {}
    spec = layer_order([m for m in modules if "." not in m and m not in {p for p, _, _ in TOOLS}])
    out = [*_rst_heading("The spec modules in full", "="),
           "Each module of the spec, lower layers first, with the public names it defines "
           "beyond those :doc:`../api` lists (importable from ``histtrim``).", ""]
    for module in spec:
        out += [*_rst_heading(f"histtrim.{module}", "-"),
                *_automodule(module, {n for m, n in exported if m == module})]
    pages["api/spec"] = "\n".join(out) + "\n"
    for package, title, intro in TOOLS:
        out = [*_rst_heading(title, "="), intro, ""]
        if package == "cli":
            out += _cli_usage()
        for module in [m for m in modules if m == package or m.startswith(package + ".")]:
            skip = {n for m, n in exported if m == module}
            out += [*_rst_heading(f"histtrim.{module}", "-"), *_automodule(module, skip)]
        pages[f"api/{package}"] = "\n".join(out) + "\n"
    return pages


def _cli_usage() -> list[str]:
    """`histtrim --help` and each command's help, as the command prints them."""
    from histtrim.cli import build_parser

    parser = build_parser()
    out = [*_rst_heading("Usage", "-"), *_help_block(parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += [*_rst_heading(f"histtrim {name}", "~"), *_help_block(sub)]
    return out


def _help_block(parser: argparse.ArgumentParser) -> list[str]:
    """A parser's help as a literal block, at 88 columns whatever terminal builds the site."""
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "88"
    try:
        text = parser.format_help().rstrip()
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    return [".. code-block:: text", "", *(f"   {line}" for line in text.splitlines()), ""]


def livingspec_page() -> str:
    """The living spec's own modules (not installed) for the contributors' page."""
    out = ["", "## The living spec's modules", "",
           "What the notebooks use from `livingspec/` (in the repository, not installed with "
           "histtrim).", ""]
    for module in LIVINGSPEC:
        # Documented here, not indexed: the Python Module Index lists the installed package.
        out += ["```{eval-rst}", f".. automodule:: {module}", "   :no-index:",
                "   :no-members:", "", f".. currentmodule:: {module}", ""]
        loaded = importlib.import_module(module)
        for name in _defined_names(module):
            out += _autodoc(f"{module}.{name}", getattr(loaded, name))
        out += ["```", ""]
    return "\n".join(out)


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
    (src / "api").mkdir(exist_ok=True)
    for name, text in api_module_pages().items():
        (src / f"{name}.rst").write_text(text, encoding="utf-8")
    with (src / "contributing.md").open("a", encoding="utf-8") as page:
        page.write(livingspec_page())
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
