"""Chapter 17's figure: the share of requests the provider counted over the budget (more than
one turn kept), per way of keeping the history within it, per provider and budget."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from livingspec.plotting import can_draw

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_COLORS = ("#999999", "#0072B2", "#E69F00", "#009E73")


def over_budget_bars(rows: Sequence[Mapping[str, str]], labels: Mapping[str, str], *,
                     title: str) -> Figure | None:
    """Grouped bars: one group per (provider, corpus, budget) of `rows` (bench CSV rows), one
    bar per method (`labels` order), height the avoidable over-budget share in percent. None
    where matplotlib is missing (the cell prints the table)."""
    if not can_draw():
        return None
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys((r["provider"], r["corpus"], r["budget"]) for r in rows))
    figure, axes = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(labels)
    for m, (method, label) in enumerate(labels.items()):
        heights = [100 * float(next(r["avoidable_share"] for r in rows
                                    if (r["provider"], r["corpus"], r["budget"]) == g
                                    and r["method"] == method)) for g in groups]
        axes.bar([i + (m - (len(labels) - 1) / 2) * width for i in range(len(groups))],
                 heights, width, color=_COLORS[m % len(_COLORS)], label=label)
    names = [f"{'simulated' if p.startswith('simulated') else c}\n{int(b) // 1000}k"
             for p, c, b in groups]
    axes.set_xticks(range(len(groups)), names, fontsize=8)
    axes.set_ylabel("requests over the budget, more than one turn kept (%)")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8)
    axes.grid(True, axis="y", alpha=0.3)
    return figure
