"""The layering, written once: the tree is the architecture.

- A top-level module of `histtrim/` is a part of the spec: its docstring starts with the rule
  IDs it implements, and it imports no subpackage (a lazy import inside a function counts).
  `_name.py` modules are the spec modules' own helpers and import nothing of histtrim.
- A subpackage (`agent`, `adapters`, `display`, `cli`, `conformance`, `review`,
  `integrations`) is built on the spec modules.
- `livingspec/` (not installed) holds what only the notebooks, the site, CI and maintainers
  use; nothing in `histtrim` imports it.
- Every `from histtrim... import name` in the repository names the module that defines it;
  `histtrim/__init__.py` is the one re-export point.

The site's API reference reads the same layers from the tree (`spec_modules`)."""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "histtrim"
RULE_IDS = re.compile(r"^(?:[A-Z]+-\d+(?:\.\.\d+)?)(?:, [A-Z]+-\d+(?:\.\.\d+)?)*: ")


def spec_modules() -> list[str]:
    """The top-level modules of histtrim that are parts of the spec (helpers excluded)."""
    return sorted(p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_"))


def _modules(top: str) -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in (ROOT / top).rglob("*.py"):
        parts = [*path.relative_to(ROOT).with_suffix("").parts]
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


MODULES = {**_modules("histtrim"), **_modules("livingspec")}


@functools.cache
def _tree(source: str) -> ast.Module:
    """`source` parsed once per run (several checks walk the same files)."""
    return ast.parse(source)


def _imports(source: str, name: str, package: bool) -> list[tuple[str, str | None]]:
    """(module, imported name or None) for every import in `source`, lazy ones included."""
    here = name.split(".") if package else name.split(".")[:-1]
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(_tree(source)):
        if isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            found.extend((target, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, None) for alias in node.names)
    return found


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Module -> the histtrim/livingspec modules it imports anywhere in its source (read once
    per run: the tree does not change while the tests run)."""
    graph: dict[str, set[str]] = {}
    for name, (path, package) in MODULES.items():
        deps = set()
        for target, imported in _imports(path.read_text(encoding="utf-8"), name, package):
            full = f"{target}.{imported}" if imported else target
            deps.add(full if full in MODULES else target)
        graph[name] = {d for d in deps if d in MODULES and d != name}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, stack = set(), [start]
    while stack:
        for dep in graph[stack.pop()]:
            if dep not in seen and dep != "histtrim":  # the package re-exports the spec
                seen.add(dep)
                stack.append(dep)
    return seen


@functools.cache
def _defines(path: Path) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(n.id for t in node.targets for n in ast.walk(t)
                         if isinstance(n, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return frozenset(names)


def test_the_graph_sees_real_imports() -> None:
    graph = import_graph()
    assert {"histtrim.messages", "histtrim.turns", "histtrim.counting"} <= graph["histtrim.trim"]
    assert "histtrim.trim" in graph["histtrim.display.views"]  # the display reads the results


@pytest.mark.parametrize("module", spec_modules())
def test_a_spec_module_names_its_rules_and_imports_no_subpackage(module: str) -> None:
    path = PACKAGE / f"{module}.py"
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert RULE_IDS.match(docstring), f"histtrim/{module}.py: docstring must start with rule IDs"
    higher = {m for m in reachable(import_graph(), f"histtrim.{module}")
              if m.count(".") > 1 or m.startswith("livingspec") or MODULES[m][1]}
    assert higher == set(), f"histtrim.{module} imports {sorted(higher)}"


def test_helpers_import_nothing_of_histtrim() -> None:
    graph = import_graph()
    for path in PACKAGE.glob("_*.py"):
        if path.name != "__init__.py":
            assert graph[f"histtrim.{path.stem}"] == set(), path.name


def test_nothing_installed_imports_the_living_spec() -> None:
    graph = import_graph()
    leaking = {m: sorted(d for d in deps if d.startswith("livingspec"))
               for m, deps in graph.items() if m.startswith("histtrim")}
    assert {m: d for m, d in leaking.items() if d} == {}


def test_no_import_cycles() -> None:
    """No module reaches itself through its imports (package re-exports aside)."""
    graph = import_graph()
    cyclic = sorted(m for m in graph if m != "histtrim" and m in reachable(graph, m))
    assert cyclic == []


@functools.cache
def _sources() -> list[tuple[str, str]]:
    """(where, Python source) of every module, test, tool, benchmark and notebook cell (IPython
    magics and shell lines blanked)."""
    found = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))
             for top in ("histtrim", "livingspec", "tests", "tools", "bench", "docs")
             for p in (ROOT / top).rglob("*.py")]
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        found.extend((f"{notebook.name}[{i}]", "".join(c["source"]))
                     for i, c in enumerate(cells) if c["cell_type"] == "code")
    return [(where, "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                              for line in source.split("\n"))) for where, source in found]


def test_every_import_names_the_module_that_defines_the_name() -> None:
    """One import path per name: no module re-exports what it does not define, but the
    package itself (its `__all__`)."""
    import histtrim

    defined = {name: _defines(path) for name, (path, _) in MODULES.items()}
    wrong = []
    for where, source in _sources():
        name = where.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        package = where.endswith("__init__.py")
        for target, imported in _imports(source, name, package):
            if imported is None or not target.startswith(("histtrim", "livingspec")):
                continue
            if f"{target}.{imported}" in MODULES:  # a module
                ok = True
            elif target == "histtrim":  # inside the package, import from the definer
                ok = imported in histtrim.__all__ and not where.startswith("histtrim/")
            else:
                ok = imported in defined.get(target, set())
            if not ok:
                wrong.append(f"{where}: from {target} import {imported}")
    assert wrong == []


def _all(path: Path) -> list[str]:
    """The names a module's `__all__` lists (empty when it has none)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return [ast.literal_eval(e) for e in node.value.elts]  # type: ignore[attr-defined]
    return []


def test_a_modules_all_lists_only_what_it_defines() -> None:
    """`__all__` is what a module defines: one documented home per name. The package
    (`histtrim/__init__.py`) is the one re-export point."""
    foreign = {
        name: sorted(set(_all(path)) - _defines(path))
        for name, (path, _) in MODULES.items() if name != "histtrim"
    }
    assert {name: names for name, names in foreign.items() if names} == {}


def test_a_module_is_read_for_what_it_defines() -> None:
    """`from histtrim import safety` then `safety.sweep_orphans` is a second import path
    too: an attribute of an imported histtrim module must be defined there (unless the
    source assigns it: a monkeypatch replaces the binding the module looks up)."""
    defined = {name: _defines(path) for name, (path, _) in MODULES.items()}
    wrong = []
    for where, source in _sources():
        name = where.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        tree = _tree(source)
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if full in MODULES and not MODULES[full][1] and full != name:
                        aliases[alias.asname or alias.name] = full
        read = [node for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name) and node.value.id in aliases]
        patched = {(n.value.id, n.attr) for n in read if isinstance(n.ctx, ast.Store)}
        wrong.extend(
            f"{where}: {aliases[node.value.id]}.{node.attr}" for node in read
            if node.attr not in defined[aliases[node.value.id]]
            and not node.attr.startswith("__") and (node.value.id, node.attr) not in patched
        )
    assert wrong == []


def test_import_histtrim_loads_pydantic_and_the_spec_only() -> None:
    """The small install: `import histtrim` needs pydantic alone and loads no subpackage but
    the agent runtime, whose names implement RUN-*, SEEN-4 and PAIR-4."""
    code = ("import sys, histtrim; print('\\n'.join(sorted(m for m in sys.modules "
            "if not m.startswith('_') and '.' not in m)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    tops = set(done.stdout.split())
    third_party = tops - set(sys.stdlib_module_names) - {"histtrim"}
    assert third_party <= {"pydantic", "pydantic_core", "typing_extensions",
                           "typing_inspection", "annotated_types"}, sorted(third_party)
    code = ("import sys, histtrim; print('\\n'.join(sorted(m for m in sys.modules "
            "if m.startswith('histtrim.'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    loaded = {m.split(".")[1] for m in done.stdout.split() if m.count(".") > 1}
    assert loaded == {"agent"}
