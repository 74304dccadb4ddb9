"""The capacity breakdown: each request's estimate in parts against its window and budget."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..capacity import CapacityReport
from .tables import Table, text_table


@dataclass(frozen=True)
class CapacityPlot:
    figure: Figure
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


_PARTS = (
    ("system rows", "#6d4c41"),
    ("other messages", "#1e88e5"),
    ("images", "#fb8c00"),
    ("hooks", "#8e24aa"),
    ("tool schemas", "#43a047"),
)


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
    figure, axes = plt.subplots(figsize=(10, 4.8))
    names = list(reports)
    bottoms = [0] * len(names)
    for k, (part, color) in enumerate(_PARTS):
        values = [_breakdown(r)[k] for r in reports.values()]
        axes.bar(range(len(names)), values, bottom=bottoms, color=color, label=part, width=0.6)
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    budget_labelled = False
    for i, r in enumerate(reports.values()):
        axes.hlines(
            r.window,
            i - 0.4,
            i + 0.4,
            color="black",
            linewidth=2,
            label="window (hard limit)" if i == 0 else "_nolegend_",
        )
        if r.budget:
            axes.hlines(
                r.budget,
                i - 0.4,
                i + 0.4,
                color="black",
                linestyles=":",
                label="_nolegend_" if budget_labelled else "proactive budget (0 = off)",
            )
            budget_labelled = True
        verdict = "fits" if r.fits else "exceeds"
        axes.text(
            i,
            max(r.total, r.window) * 1.02,
            f"{r.total:,} / {r.window:,}\n{verdict}",
            ha="center",
            va="bottom",
            fontsize=8,
        )
    axes.set_xticks(range(len(names)), names, fontsize=8)
    axes.set_ylim(0, max((max(r.total, r.window) for r in reports.values()), default=1) * 1.2)
    axes.set_xlabel("request")
    axes.set_ylabel("estimated tokens")
    axes.set_title(title)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    return CapacityPlot(figure, dict(reports))
