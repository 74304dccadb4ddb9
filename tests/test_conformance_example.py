"""The example shim in conformance/example/ (issue 21): an implementation written from the
spec and the vectors' README alone, run through the kit exactly as an outside team would;
every vector of its three functions passes."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "conformance" / "example"
FUNCTIONS = "trim_to_recent_turn_count,insert_breadcrumb,channel_sender_cache"


def test_the_shim_imports_nothing_of_histtrim() -> None:
    tree = ast.parse((EXAMPLE / "shim.py").read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"__future__", "json", "sys", "typing"}


def test_the_example_passes_every_vector_of_its_functions() -> None:
    # -S: no site-packages, so histtrim cannot be imported by the shim even by accident.
    shim = [sys.executable, "-S", str(EXAMPLE / "shim.py")]
    done = subprocess.run(
        [sys.executable, "-m", "histtrim.cli", "conformance", "run", "--vectors",
         str(ROOT / "conformance" / "vectors"), "--functions", FUNCTIONS, "--", *shim],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    summary = done.stdout.splitlines()[-1]
    passed, total = summary.split(" ")[0].split("/")
    assert passed == total and int(total) > 100
    assert "not covered" in done.stdout
    for rule in ("KEEP-2", "KEEP-3", "LIMIT-1", "LIMIT-2", "LIMIT-3", "SEEN-1", "TURN-6"):
        line = next(x for x in done.stdout.splitlines() if x.startswith(rule + " "))
        assert "not covered" not in line and int(line.split()[1]) > 0


def test_the_guide_names_the_command_the_test_runs() -> None:
    guide = (EXAMPLE / "README.md").read_text(encoding="utf-8")
    assert "--functions trim_to_recent_turn_count,insert_breadcrumb,channel_sender_cache" in \
        guide
    assert "python conformance/example/shim.py" in guide
