"""Collect the worked examples of the notebooks: run each notebook's code cells in order with
histtrim's public functions wrapped (`recorder`), so every call a chapter makes is recorded as
a protocol call (`converters`), under the rule IDs its nearest heading cites (nothing is copied
by hand)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

from livingspec.vectors.converters import forget_rows
from livingspec.vectors.recorder import RecordedCall, Session, recording

SKIPPED_NOTEBOOKS = {
    "00_index.ipynb": "the chapter index: it calls no history function",
    "09_performance.ipynb": "timings on generated histories of thousands of rows, not examples",
    "10_using_histtrim.ipynb": "drives the command line and the OpenAI adapter",
    "12_conformance.ipynb": "runs the kit itself: the calls it shows are the vectors' own",
    "13_formats.ipynb": "drives the LangChain and Anthropic adapters (formats, not rules)",
    "14_design_review.ipynb": "replays whole sessions under other policies: what-if runs, not "
    "the spec's examples",
    "15_frameworks.ipynb": "drives three agent frameworks through the integrations "
    "(frameworks, not rules)",
    "16_tool_context.ipynb": "replays recorded sessions under the field's policies: what-if "
    "runs; its rules' vectors are generated (`tool_context_cases`)",
    "18_your_own_sessions.ipynb": "reads agents' own session files and replays them "
    "(formats and what-if runs, not rules)",
}
"""Notebooks whose code is not run for vectors, and why; every other chapter is."""


def _cells(path: Path) -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return cells


def record_notebook(path: Path) -> list[RecordedCall]:
    """Run one notebook's code cells in a fresh namespace (from its folder, stdout discarded);
    a cell that raises is expected only when tagged `raises-exception`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    path = path.resolve()
    session = Session(path.name)
    namespace: dict[str, Any] = {"__name__": "__main__", "display": lambda *a, **k: None}
    cwd = Path.cwd()
    os.chdir(path.parent)
    sys.path.insert(0, str(path.parent))
    layout = Figure.tight_layout
    Figure.tight_layout = lambda self, *a, **k: None  # type: ignore[method-assign]  # no drawing
    try:
        with recording(session), contextlib.redirect_stdout(io.StringIO()):
            for number, cell in enumerate(_cells(path)):
                source = "".join(cell["source"])
                session.cell = number
                if cell["cell_type"] == "markdown":
                    for line in source.splitlines():
                        stripped = line.lstrip()
                        if stripped.startswith("#"):
                            level = len(stripped) - len(stripped.lstrip("#"))
                            session.headings = {
                                k: v for k, v in session.headings.items() if k < level
                            }
                            session.headings[level] = stripped.lstrip("#").strip()
                    continue
                if cell["cell_type"] != "code":
                    continue
                source = _without_magics(source)
                try:
                    exec(compile(source, f"{path.name}[{number}]", "exec"), namespace)
                except Exception:
                    if "raises-exception" not in cell.get("metadata", {}).get("tags", []):
                        raise
                plt.close("all")
    finally:
        Figure.tight_layout = layout  # type: ignore[method-assign]
        forget_rows()
        os.chdir(cwd)
        sys.path.remove(str(path.parent))
    return session.calls


def record_notebooks(folder: Path) -> list[RecordedCall]:
    """Every recorded call of every chapter not in `SKIPPED_NOTEBOOKS`, in name order."""
    calls: list[RecordedCall] = []
    for path in sorted(folder.glob("*.ipynb")):
        if path.name not in SKIPPED_NOTEBOOKS:
            calls.extend(record_notebook(path))
    return calls


def _without_magics(source: str) -> str:
    """A code cell as plain Python: IPython line magics (`%xmode Minimal`) only set how the
    kernel shows things, so their lines are left out (kept blank: line numbers stay)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                      for line in source.split("\n"))
