"""Matplotlib figures and compact text tables for the notebooks (the living spec).

Every figure function returns the figure together with the numbers it plots, so a
notebook cell can print them: nbval compares printed text, never PNGs. Turn numbers
shown to readers are 1-based (turn 1 is the oldest); rows are 0-based positions.
matplotlib is imported only to draw: without it (the browser) a figure function returns
its numbers and no figure, and `show_figure` says why in one line."""

from livingspec.plotting._base import NO_FIGURE, can_draw, show_figure

__all__ = ["NO_FIGURE", "can_draw", "show_figure"]
