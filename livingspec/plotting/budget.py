"""Effective-budget figures: the budget over `context_compact_ratio` x
`max_context_tokens` per route (heatmap), and what `history_pruning` does to it. The trim's
cut over turns is `plotting.cut` (re-exported here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from histtrim.config import HistoryPruning, ProviderProfile, RuntimeProfile
from histtrim.display.tables import Table, text_table
from histtrim.route import ResolvedRuntime, resolve_runtime
from livingspec.plotting import can_draw
from livingspec.plotting._base import _PALETTE, _Plot, panel_width

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _ratio_label(ratio: float | None) -> str:
    if ratio is None:
        return "unset"
    valid = RuntimeProfile(context_compact_ratio=ratio).valid_context_compact_ratio
    return f"{ratio:g}" if valid is not None else f"{ratio:g} (invalid)"


def _tokens_label(value: int | None) -> str:
    return "unset" if value is None else f"{value:,}"


def _short_tokens(value: int) -> str:
    """32000 -> "32k", 3200 -> "3.2k", 800 -> "800": fits a heatmap cell."""
    return f"{value / 1000:g}k" if value >= 1000 else str(value)


@dataclass(frozen=True)
class BudgetGrid:
    """Budgets over ratio (columns) x max_context_tokens (rows), one grid per route (no
    figure where matplotlib is missing)."""

    figure: Figure | None
    ratios: tuple[float | None, ...]
    max_context_tokens: tuple[int | None, ...]
    grids: dict[str, list[list[int]]]
    """Panel title -> budgets, `grids[title][row][column]`."""

    def table(self, panel: str) -> Table:
        return text_table(
            ["max_context_tokens \\ ratio", *map(_ratio_label, self.ratios)],
            [
                (_tokens_label(m), *row)
                for m, row in zip(self.max_context_tokens, self.grids[panel], strict=True)
            ],
        )


def budget_heatmap(
    routes: Mapping[str, tuple[ProviderProfile | None, str | None]],
    ratios: Sequence[float | None],
    max_context_tokens: Sequence[int | None],
    *,
    title: str,
) -> BudgetGrid:
    """One heatmap per route (panel title -> provider profile and selected model): the
    effective budget of `RuntimeProfile(max_context_tokens=m, context_compact_ratio=r)`."""
    grids = {
        name: [
            [
                resolve_runtime(
                    RuntimeProfile(max_context_tokens=m, context_compact_ratio=r), provider, model
                ).effective_context_budget()
                for r in ratios
            ]
            for m in max_context_tokens
        ]
        for name, (provider, model) in routes.items()
    }
    figure = _draw_heatmap(grids, ratios, max_context_tokens, title) if can_draw() else None
    return BudgetGrid(figure, tuple(ratios), tuple(max_context_tokens), grids)


def _draw_heatmap(
    grids: Mapping[str, list[list[int]]],
    ratios: Sequence[float | None],
    max_context_tokens: Sequence[int | None],
    title: str,
) -> Figure:
    import matplotlib.pyplot as plt

    top = max((v for grid in grids.values() for row in grid for v in row), default=1) or 1
    figure, panels = plt.subplots(
        1,
        len(grids),
        figsize=(5.6 * len(grids), 1.6 + 0.55 * len(max_context_tokens)),
        squeeze=False,
    )
    image = None
    for column, (axes, (name, grid)) in enumerate(zip(panels[0], grids.items(), strict=True)):
        image = axes.imshow(grid, cmap="viridis", vmin=0, vmax=top, aspect="auto")
        for i, row in enumerate(grid):
            for j, value in enumerate(row):
                axes.text(
                    j,
                    i,
                    _short_tokens(value),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if value < top / 2 else "black",
                )
        axes.set_xticks(
            range(len(ratios)),
            [_ratio_label(r) for r in ratios],
            rotation=45,
            ha="right",
            fontsize=8,
        )
        axes.set_yticks(
            range(len(max_context_tokens)),
            [_tokens_label(m) for m in max_context_tokens],
            fontsize=8,
        )
        axes.set_xlabel("context_compact_ratio")
        if column == 0:
            axes.set_ylabel("max_context_tokens")
        axes.set_title(name, fontsize=10)
    if image is not None:
        figure.colorbar(image, ax=panels[0].tolist(), label="effective budget (tokens)")
    figure.suptitle(title)
    return figure


@dataclass(frozen=True)
class PruningRow:
    """One profile with pruning off and with `history_pruning` on at `max_tokens`."""

    profile: str
    max_tokens: int
    budget_off: int
    budget_on: int


@dataclass(frozen=True)
class PruningPlot(_Plot[PruningRow]):
    columns = ("profile", "pruning max_tokens", "budget (pruning off)", "budget (pruning on)")


def _with_pruning(runtime: ResolvedRuntime, pruning: HistoryPruning) -> ResolvedRuntime:
    profile = runtime.profile.model_copy(update={"history_pruning": pruning})
    return runtime.model_copy(update={"profile": profile})


def _thousands(value: float, _position: object = None) -> str:
    """A tick label in thousands: 0, 2.5k, 100k."""
    return "0" if value == 0 else f"{value / 1000:g}k"


def pruning_effect(
    runtimes: Mapping[str, ResolvedRuntime], max_tokens: Sequence[int], *, title: str
) -> PruningPlot:
    """For each resolved runtime, its budget with `history_pruning` enabled at each
    `max_tokens`, against the same runtime with pruning off (a dashed line)."""
    off = {name: _with_pruning(runtime, HistoryPruning()).effective_context_budget()
           for name, runtime in runtimes.items()}
    rows = [
        PruningRow(
            name,
            limit,
            off[name],
            _with_pruning(
                runtime, HistoryPruning(enabled=True, max_tokens=limit)
            ).effective_context_budget(),
        )
        for name, runtime in runtimes.items()
        for limit in max_tokens
    ]
    figure = _draw_pruning(rows, off, max_tokens, title) if can_draw() else None
    return PruningPlot(figure, rows)


def _draw_pruning(
    rows: Sequence[PruningRow], off: Mapping[str, int], max_tokens: Sequence[int], title: str
) -> Figure:
    """One panel per runtime (`off`: its budget with pruning off): budget against max_tokens."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    count = max(len(off), 1)
    figure, panels = plt.subplots(1, count, figsize=(panel_width(count, 4.2), 4.6),
                                  squeeze=False)
    top = max(max_tokens, default=1)
    for i, (axes, (name, budget_off)) in enumerate(zip(panels[0], off.items(), strict=False)):
        mine = [r for r in rows if r.profile == name]
        color = _PALETTE[i % len(_PALETTE)]
        axes.plot([0, top], [0, top], color="#999999", linestyle=":", linewidth=1.2,
                  label="budget = max_tokens")
        axes.axhline(budget_off, color="black", linestyle="--", linewidth=1.2,
                     label="pruning off")
        positive = [r for r in mine if r.max_tokens > 0]
        axes.plot([r.max_tokens for r in positive], [r.budget_on for r in positive],
                  marker="o", color=color, linewidth=2, zorder=3, label="pruning on")
        ignored = [r for r in mine if r.max_tokens == 0]
        if ignored:
            axes.scatter([0] * len(ignored), [r.budget_on for r in ignored], marker="x", s=70,
                         color="black", zorder=4, label="max_tokens 0: ignored")
        axes.annotate(f"off: {budget_off:,}", (top, budget_off), xytext=(-4, 5),
                      textcoords="offset points", ha="right", fontsize=8)
        axes.set_title(name, fontsize=10)
        axes.set_xlabel("history_pruning.max_tokens")
        axes.set_ylim(0, max(budget_off, *(r.budget_on for r in mine)) * 1.15)
        axes.ticklabel_format(style="plain")
        axes.xaxis.set_major_locator(MaxNLocator(4))
        axes.xaxis.set_major_formatter(FuncFormatter(_thousands))
        axes.yaxis.set_major_formatter(FuncFormatter(_thousands))
    panels[0][0].set_ylabel("effective budget (tokens)")
    handles, labels = panels[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8,
                  frameon=False)
    figure.suptitle(title)
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    return figure
