"""The site shows about 80 monospace characters of a code cell at a 1280px-wide window: every
line of a visible code cell fits in 84 columns, so no reader meets a horizontal scrollbar."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
MAX_COLUMNS = 84
# The site does not show the source of these cells (hide-input folds it, remove-cell drops it).
HIDDEN_SOURCE_TAGS = {"hide-input", "remove-input", "remove-cell"}


def long_lines(notebook: Path) -> list[str]:
    """`notebook cell N line M (K chars): text` for every over-long line of a visible code cell."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    found = []
    for n, cell in enumerate(cells):
        tags = set(cell.get("metadata", {}).get("tags", []))
        if cell["cell_type"] != "code" or tags & HIDDEN_SOURCE_TAGS:
            continue
        for m, line in enumerate("".join(cell["source"]).splitlines(), start=1):
            if len(line) > MAX_COLUMNS:
                found.append(f"{notebook.name} cell {n} line {m} ({len(line)} chars): {line}")
    return found


def test_the_notebooks_exist() -> None:
    assert len(NOTEBOOKS) >= 15


def test_visible_code_lines_fit_the_page() -> None:
    found = [line for notebook in NOTEBOOKS for line in long_lines(notebook)]
    header = f"{len(found)} code lines longer than {MAX_COLUMNS} characters:"
    assert not found, "\n".join([header, *found])


def test_a_long_line_is_named(tmp_path: Path) -> None:
    """The check itself: a long visible line is reported with notebook, cell and line; the
    same line in a hide-input cell or a markdown cell is not."""
    long = "x = " + "1 + " * 30 + "1"
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": [long]},
        {"cell_type": "code", "metadata": {"tags": ["hide-input"]}, "source": [long]},
        {"cell_type": "code", "metadata": {}, "source": ["y = 1\n", long]},
    ]
    notebook = tmp_path / "99_probe.ipynb"
    notebook.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    assert long_lines(notebook) == [f"99_probe.ipynb cell 2 line 2 ({len(long)} chars): {long}"]


def meter_payloads(notebook: Path) -> int:
    """How many times the notebook's outputs print a client-meter JSON payload."""
    count = 0
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", "")) + "".join(
                output.get("data", {}).get("text/plain", "")
            )
            count += text.count('"estimated_tokens": ')
    return count


def test_chapter_05_shows_the_client_meter_once() -> None:
    """Issue 23: chapter 05 printed the meter JSON six times (three routes, twice); the
    changing fields are a table, the payload is shown once (ROUTE-4, its key absent)."""
    chapter = next(n for n in NOTEBOOKS if n.name.startswith("05_"))
    assert meter_payloads(chapter) == 1


def long_error_lines(notebook: Path, width: int) -> list[str]:
    """`notebook cell N: line` for every line of an error output wider than `width`: the site
    shows a traceback's lines unbroken, so such a line wraps (issue 46)."""
    found = []
    for n, cell in enumerate(json.loads(notebook.read_text(encoding="utf-8"))["cells"]):
        for output in cell.get("outputs", []):
            if output.get("output_type") != "error":
                continue
            text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(output.get("traceback", [])))
            found += [f"{notebook.name} cell {n}: {line}" for line in text.splitlines()
                      if len(line) > width]
    return found


def test_no_error_output_line_wraps_on_the_site() -> None:
    """An expected error is shown folded (`livingspec.plotting.tables.shows_error`), never as
    a traceback whose message runs past the output column."""
    from histtrim.display.columns import COLUMNS

    found = [line for notebook in NOTEBOOKS for line in long_error_lines(notebook, COLUMNS)]
    assert not found, "\n".join(found)


def test_shows_error_prints_the_error_folded_and_requires_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from histtrim.display.columns import COLUMNS
    from livingspec.plotting.tables import shows_error

    error = ValueError("word " * 60)
    error.add_note("a note that says what was rolled back")
    with shows_error(KeyError, ValueError):
        raise error
    out = capsys.readouterr().out
    assert out.startswith("ValueError: word word") and "a note that says" in out
    assert max(map(len, out.splitlines())) <= COLUMNS
    nothing = pytest.raises(AssertionError, match="expected KeyError; the block raised nothing")
    with nothing, shows_error(KeyError):
        pass
    with pytest.raises(TypeError), shows_error(KeyError):  # another error fails the cell
        raise TypeError("not this one")
