"""Matplotlib figures and compact text tables for the notebooks (the living spec).

Every figure function returns the figure together with the numbers it plots, so a
notebook cell can print them: nbval compares printed text, never PNGs. Turn numbers
shown to readers are 1-based (turn 1 is the oldest); rows are 0-based positions."""

from .budget import BudgetGrid, PruningPlot, PruningRow, budget_heatmap, pruning_effect
from .capacity import CapacityPlot, capacity_breakdown
from .cut import BudgetCut, CutRow, budget_cut, cumulative_from_newest
from .estimate import EstimatePlot, EstimateRow, estimate_rows, estimate_vs_bytes
from .loop import CallTimeline, TimelineRow, call_timeline, timeline_rows, timeline_table
from .measured import CONTENDER_STYLES, MeasuredPlot, MeasuredRow, measured_trim_times
from .tables import Table, history_table, item_costs, print_block, row_summary, text_table
from .turns import TurnMap, TurnMapRow, kept_rows, turn_map, turn_map_rows

__all__ = [
    "CONTENDER_STYLES",
    "BudgetCut",
    "BudgetGrid",
    "CallTimeline",
    "CapacityPlot",
    "CutRow",
    "EstimatePlot",
    "EstimateRow",
    "MeasuredPlot",
    "MeasuredRow",
    "PruningPlot",
    "PruningRow",
    "Table",
    "TimelineRow",
    "TurnMap",
    "TurnMapRow",
    "budget_cut",
    "budget_heatmap",
    "call_timeline",
    "capacity_breakdown",
    "cumulative_from_newest",
    "estimate_rows",
    "estimate_vs_bytes",
    "history_table",
    "item_costs",
    "kept_rows",
    "measured_trim_times",
    "print_block",
    "pruning_effect",
    "row_summary",
    "text_table",
    "timeline_rows",
    "timeline_table",
    "turn_map",
    "turn_map_rows",
]
