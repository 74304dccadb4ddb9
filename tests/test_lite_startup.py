"""livingspec.lite, the in-browser chapters' startup: a cell stopped by the missing matplotlib
prints what it printed before and one line saying why, never a traceback; every other error
keeps its traceback. Run here in CPython's IPython (the browser test runs it in Pyodide)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell

import livingspec.lite
from livingspec.lite import NO_FIGURE


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    ipython = InteractiveShell.instance()
    livingspec.lite.install("14_design_review.ipynb")
    yield ipython
    ipython.set_custom_exc((), None)


def test_missing_matplotlib_prints_one_line(shell: InteractiveShell,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell('print("numbers")\nraise ModuleNotFoundError("no", name="matplotlib.pyplot")')
    assert capsys.readouterr().out == f"numbers\n{NO_FIGURE}\n"
    assert os.environ["JPY_SESSION_NAME"] == "14_design_review.ipynb"


def test_any_other_error_keeps_its_traceback(shell: InteractiveShell,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell('raise ModuleNotFoundError("no module named numpy", name="numpy")')
    out = capsys.readouterr().out
    assert "Traceback" in out and "numpy" in out and NO_FIGURE not in out
    shell.run_cell("1 / 0")
    assert "ZeroDivisionError" in capsys.readouterr().out


def test_install_outside_a_kernel_says_so() -> None:
    if InteractiveShell.initialized():
        InteractiveShell.clear_instance()
    with pytest.raises(RuntimeError, match="runs in a notebook's kernel"):
        livingspec.lite.install("01_turns.ipynb")
