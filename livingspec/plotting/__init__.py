"""Matplotlib figures and compact text tables for the notebooks (the living spec).

Every figure function returns the figure together with the numbers it plots, so a
notebook cell can print them: nbval compares printed text, never PNGs. Turn numbers
shown to readers are 1-based (turn 1 is the oldest); rows are 0-based positions."""
