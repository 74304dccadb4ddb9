"""Matplotlib figures and compact text tables for the notebooks (the living spec).

Every figure function returns the figure together with the numbers it plots, so a
notebook cell can print them: nbval compares printed text, never PNGs. Turn numbers
shown to readers are 1-based (turn 1 is the oldest); rows are 0-based positions.
matplotlib is imported only to draw: without it (the browser's Pyodide has no build of it)
a figure function returns its numbers and no figure, and `show_figure` says why in one line,
so every figure cell runs there too."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NO_FIGURE = ("(no figure in the browser: Pyodide has no matplotlib; the numbers are above "
             "and the figure is on this chapter's page of the site)")
"""What `show_figure` prints instead of a figure where there is no matplotlib."""


def can_draw() -> bool:
    """Whether matplotlib imports here. The figure functions draw only then: elsewhere (the
    browser) they return their rows with no figure, and matplotlib is never imported early."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def show_figure(draw: Callable[[], Figure] | None = None) -> None:
    """Show a cell's figure: with no argument, what the cell drew through pyplot (the figure
    functions here; `plt.show()`); `draw` makes a figure outside pyplot (histtrim.review's),
    shown as its PNG. Without matplotlib, `NO_FIGURE` instead: the cell printed its numbers."""
    if not can_draw():
        print(NO_FIGURE)
        return
    if draw is None:
        import matplotlib.pyplot as plt

        plt.show()
        return
    from IPython.display import Image, display

    from histtrim.review.report import png_bytes

    display(Image(png_bytes(draw())))  # type: ignore[no-untyped-call]
