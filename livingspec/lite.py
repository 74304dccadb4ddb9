"""The in-browser spec's startup (JupyterLite's Pyodide kernel, `make lite`): the chapters
show their widgets only in a live kernel, so name the notebook as Jupyter's server does.
Figures need nothing here: without matplotlib, `livingspec.plotting.show_figure` prints one line
saying why after the cell's numbers (no error to catch, so no cell stops half way)."""

from __future__ import annotations

import os


def install(notebook: str) -> None:
    """Name the notebook in JPY_SESSION_NAME as Jupyter's server does for a live kernel (the
    chapters show their widgets only in a live kernel, never under nbconvert or nbval)."""
    from IPython import get_ipython

    if get_ipython() is None:
        raise RuntimeError("livingspec.lite.install runs in a notebook's kernel")
    os.environ.setdefault("JPY_SESSION_NAME", notebook)
