"""livingspec.lite, the in-browser chapters' startup: it names the notebook for the kernel and
catches nothing, so a missing module shows its traceback rather than cutting a cell short
(figures need no help: `livingspec.plotting.show_figure`). Run here in CPython's IPython."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell

import livingspec.lite
from livingspec.plotting import NO_FIGURE


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    ipython = InteractiveShell.instance()
    livingspec.lite.install("14_design_review.ipynb")
    yield ipython


def test_install_names_the_notebook(shell: InteractiveShell) -> None:
    assert os.environ["JPY_SESSION_NAME"] == "14_design_review.ipynb"


def test_a_missing_module_keeps_its_traceback(shell: InteractiveShell,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell('print("numbers")\nraise ModuleNotFoundError("no", name="matplotlib.pyplot")')
    out = capsys.readouterr().out
    assert out.startswith("numbers\n") and "Traceback" in out and NO_FIGURE not in out


def test_install_outside_a_kernel_says_so() -> None:
    if InteractiveShell.initialized():
        InteractiveShell.clear_instance()
    with pytest.raises(RuntimeError, match="runs in a notebook's kernel"):
        livingspec.lite.install("01_turns.ipynb")


def test_raises_prints_the_error_and_the_next_cell_runs(shell: InteractiveShell,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    result = shell.run_cell('%%raises\nx = 1\nraise ValueError("on purpose")')
    out = capsys.readouterr().out
    assert result.success and "ValueError" in out and "on purpose" in out
    assert shell.user_ns["x"] == 1
    shell.run_cell("%%raises\ny = 2")
    assert "expected to raise; it did not" in capsys.readouterr().out
