"""The in-browser spec's startup (JupyterLite's Pyodide kernel, `make lite`): Pyodide has no
matplotlib, so a cell that draws a figure stops at it with one line saying why, after the
numbers it printed, instead of a traceback; any other error still shows its traceback."""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any

NO_FIGURE = ("(no figure in the browser: Pyodide has no matplotlib; the numbers are above "
             "and the figure is on this chapter's page of the site)")


def _no_figure(shell: Any, etype: type[BaseException], value: BaseException,
               tb: TracebackType | None, tb_offset: int | None = None) -> None:
    """The custom-exception hook: one line for a missing matplotlib, a traceback otherwise."""
    if isinstance(value, ModuleNotFoundError) and (value.name or "").split(".")[0] == "matplotlib":
        print(NO_FIGURE)
        return
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)


def install(notebook: str) -> None:
    """Hook `_no_figure` into the running IPython shell, and name the notebook in
    JPY_SESSION_NAME as Jupyter's server does for a live kernel (the chapters show their
    widgets only in a live kernel, never under nbconvert or nbval)."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("livingspec.lite.install runs in a notebook's kernel")
    shell.set_custom_exc((ModuleNotFoundError,), _no_figure)
    os.environ.setdefault("JPY_SESSION_NAME", notebook)
