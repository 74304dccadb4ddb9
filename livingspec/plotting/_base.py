"""The shared figure base (`_Plot`), colours and axes labelling of the notebook figures, and
`show_figure`: a figure where matplotlib is installed, one line saying why where it is not (the
browser's Pyodide has no build of it), so every figure cell runs there too."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

from histtrim.display.tables import Table, fields_table

if TYPE_CHECKING:
    from _typeshed import DataclassInstance
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

R = TypeVar("R", bound="DataclassInstance")

# Okabe-Ito: distinguishable with every common colour-vision deficiency.
_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442")
_FIXED_COLOR = "#999999"
_KEPT_COLOR = "#009E73"
_DROPPED_COLOR = "#D55E00"


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


@dataclass(frozen=True)
class _Plot(Generic[R]):
    """A figure and the rows of numbers it draws; `table()` prints them (nbval reads text).
    No figure (None) where matplotlib is missing: the rows are the same."""

    figure: Figure | None
    rows: list[R]
    columns: ClassVar[tuple[str, ...]] = ()
    """The table's headers, one per field of a row."""

    def table(self) -> Table:
        return fields_table(self.columns, self.rows)


# The widest figure the site shows at 75 % or more of its pixels (a 1280px-wide window shows
# figures at 768 px; tests/site/test_browser.py checks it): about 10 inches at 100 dpi.
MAX_FIGURE_INCHES = 9.8


def panel_width(panels: int, preferred: float) -> float:
    """The width (inches) of a figure of `panels` side by side: `preferred` per panel, but
    never wider than MAX_FIGURE_INCHES in all (narrower panels, not a shrunk figure)."""
    return min(preferred * panels, MAX_FIGURE_INCHES)


def _label(axes: Axes, xlabel: str, ylabel: str, title: str) -> None:
    axes.set_xlabel(xlabel)
    if ylabel:
        axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8)
