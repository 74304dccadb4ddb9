"""The shared figure base (`_Plot`), colours and axes labelling of the notebook figures."""

from __future__ import annotations

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
