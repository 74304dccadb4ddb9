"""Lower layers never import higher ones (DESIGN: messages -> turns -> estimate -> trim; the
display depends on the results, never the reverse). Read from the source, function-level
imports included, so a lazy import inside a method counts too."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "histtrim"

CORE = (
    "unset", "messages", "carriers", "turns", "estimate", "pairing", "trim", "safety",
    "turn_sizes",
)
"""The history core: it must work without any presentation or agent module."""
HIGHER = (
    "display", "display_page", "display_html", "plotting", "runtime", "agent_trims",
    "agent_dispatch", "agent_history", "calls", "legacy", "tools", "cli", "adapters", "ledger",
    "events", "providers",
)


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["histtrim", *path.relative_to(PACKAGE).with_suffix("").parts]
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the histtrim modules it imports anywhere in its source."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, (path, package) in modules.items():
        here = name.split(".") if package else name.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                target = ".".join([*base, *([node.module] if node.module else [])])
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    deps.add(full if full in modules else target)
            elif isinstance(node, ast.Import):
                deps.update(alias.name for alias in node.names)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, stack = set(), [start]
    while stack:
        for dep in graph[stack.pop()]:
            if dep not in seen and dep != "histtrim":  # the package re-exports everything
                seen.add(dep)
                stack.append(dep)
    return seen


def test_the_graph_sees_real_imports() -> None:
    graph = import_graph()
    assert {"histtrim.messages", "histtrim.turns", "histtrim.estimate"} <= graph["histtrim.trim"]
    assert "histtrim.trim" in graph["histtrim.display"]  # the display reads the results


def test_importing_trim_does_not_import_the_display() -> None:
    graph = import_graph()
    assert "histtrim.display" not in reachable(graph, "histtrim.trim")


def test_core_modules_never_import_higher_layers() -> None:
    graph = import_graph()
    for core in CORE:
        higher = {
            m for m in reachable(graph, f"histtrim.{core}") if m.split(".")[1] in HIGHER
        }
        assert higher == set(), f"histtrim.{core} imports {sorted(higher)}"


def test_no_import_cycles() -> None:
    """No module reaches itself through its imports (package re-exports aside)."""
    graph = import_graph()
    cyclic = sorted(m for m in graph if m != "histtrim" and m in reachable(graph, m))
    assert cyclic == []
