"""The in-browser spec's startup (JupyterLite's Pyodide kernel, `make lite`): the chapters
show their widgets only in a live kernel, so name the notebook as Jupyter's server does; and
`%%raises`, which `make lite` puts on each cell a chapter tags `raises-exception`.
Figures need nothing here: without matplotlib, `livingspec.plotting.show_figure` prints one
line saying why after the cell's numbers (no error to catch, so no cell stops half way)."""

from __future__ import annotations

import os
import sys
from typing import Any

RAISES = "%%raises"
"""First line of a `raises-exception` cell in the browser copy (see `raises`)."""


def raises(line: str, cell: str) -> None:
    """`%%raises`: run a cell that raises on purpose and print the traceback as text. JupyterLab
    honours `raises-exception` only in a kernel that can keep going after an error reply;
    Pyodide's cannot, so "Run all" would stop at the first such cell of a chapter."""
    from IPython import get_ipython

    shell: Any = get_ipython()
    try:
        exec(compile(cell, "<cell>", "exec"), shell.user_ns)  # the cell, as the kernel would
    except Exception:
        etype, value, tb = sys.exc_info()
        assert etype is not None and value is not None
        print(shell.InteractiveTB.stb2text(
            shell.InteractiveTB.structured_traceback(etype, value, tb)))
    else:
        print("(this cell was expected to raise; it did not)")


def install(notebook: str) -> None:
    """Name the notebook in JPY_SESSION_NAME as Jupyter's server does for a live kernel (the
    chapters show their widgets only in a live kernel, never under nbconvert or nbval), and
    register `%%raises`."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("livingspec.lite.install runs in a notebook's kernel")
    shell.register_magic_function(raises, "cell", "raises")
    os.environ.setdefault("JPY_SESSION_NAME", notebook)
