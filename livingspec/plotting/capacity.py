"""The capacity breakdown: each request's estimate in parts against its window and budget."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from histtrim.capacity import CapacityReport
from histtrim.display.tables import Table, text_table
from livingspec.plotting import can_draw

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class CapacityPlot:
    """The figure (None where matplotlib is missing) and the reports it draws."""

    figure: Figure | None
    reports: dict[str, CapacityReport]

    def table(self) -> Table:
        return text_table(
            [
                "request",
                "system",
                "other messages",
                "images",
                "hooks",
                "tool schemas",
                "total",
                "window",
                "budget",
                "fits",
            ],
            [
                (name, *_breakdown(r), r.total, r.window, r.budget, r.fits)
                for name, r in self.reports.items()
            ],
        )


_PARTS = (  # Okabe-Ito colours (colour-blind safe)
    ("system rows", "#0072B2"),
    ("other messages", "#56B4E9"),
    ("images", "#E69F00"),
    ("hooks", "#CC79A7"),
    ("tool schemas", "#009E73"),
)
_OVER = "#D55E00"


def _breakdown(report: CapacityReport) -> tuple[int, int, int, int, int]:
    """A request's estimate in the parts of `_PARTS`, in that order."""
    return (
        report.system,
        report.messages - report.system,
        report.images,
        report.hooks,
        report.tool_schemas,
    )


def capacity_breakdown(reports: Mapping[str, CapacityReport], *, title: str) -> CapacityPlot:
    """A stacked bar per request (system rows, other messages, images, hooks, tool schemas)
    with its window (solid) and proactive budget (dotted) marked."""
    return CapacityPlot(_draw_capacity(reports, title) if can_draw() else None, dict(reports))


def _draw_capacity(reports: Mapping[str, CapacityReport], title: str) -> Figure:
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    figure, axes = plt.subplots(figsize=(10, 5.2))
    names = list(reports)
    top = max((max(r.total, r.window) for r in reports.values()), default=1)
    bottoms = [0] * len(names)
    hidden: list[str] = []
    for k, (part, color) in enumerate(_PARTS):
        values = [_breakdown(r)[k] for r in reports.values()]
        visible = any(v >= top * 0.01 for v in values)
        if not visible and any(values):
            hidden.append(f"{part} ({', '.join(f'{v:,}' for v in dict.fromkeys(values))})")
        axes.bar(range(len(names)), values, bottom=bottoms, color=color, width=0.6,
                 label=part if visible else "_nolegend_")
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    over_labelled = budget_labelled = False
    for i, r in enumerate(reports.values()):
        if r.total > r.window:
            axes.bar(i, r.total - r.window, bottom=r.window, width=0.6, fill=False,
                     hatch="xx", edgecolor=_OVER, linewidth=1.5,
                     label="_nolegend_" if over_labelled else "over the window")
            over_labelled = True
        axes.hlines(r.window, i - 0.42, i + 0.42, color="black", linewidth=2.5,
                    label="window (hard limit)" if i == 0 else "_nolegend_")
        if r.budget:
            axes.hlines(r.budget, i - 0.42, i + 0.42, color="black", linestyles=":",
                        linewidth=1.5,
                        label="_nolegend_" if budget_labelled else "proactive budget")
            budget_labelled = True
        verdict = "fits" if r.fits else f"over by {r.total - r.window:,}"
        axes.text(i, max(r.total, r.window) + top * 0.02,
                  f"{r.total:,} of {r.window:,}\n{verdict}", ha="center", va="bottom",
                  fontsize=9, color="black" if r.fits else _OVER)
    axes.set_xticks(range(len(names)), [textwrap.fill(n, 22) for n in names], fontsize=9)
    axes.set_ylim(0, top * 1.22)
    axes.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    axes.set_ylabel("estimated tokens")
    axes.set_title(title)
    if hidden:
        axes.set_xlabel("too small to see at this scale: " + "; ".join(hidden) + " tokens",
                        fontsize=8)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    return figure
