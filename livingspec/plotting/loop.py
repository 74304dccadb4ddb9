"""The agent-loop timeline: tokens sent at each provider call, with the trims before it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from histtrim.agent.calls import ProviderCall
from histtrim.display.tables import Table, fields_table
from livingspec.plotting import can_draw
from livingspec.plotting._base import (
    _DROPPED_COLOR,
    _FIXED_COLOR,
    _KEPT_COLOR,
    _label,
    _Plot,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class TimelineRow:
    """One provider call of an agent session and the trims made just before it."""

    call: int
    turn: int
    iteration: int
    kind: str
    outcome: str
    history: int
    """The estimated history sent (what the budget measures)."""
    tokens: int
    """History plus tool schemas (what the capacity check measures)."""
    budget: int
    window: int
    trims: str | None
    """The trims made since the previous call, as `reason -dropped_messages`."""


_TIMELINE_COLUMNS = (
    "call", "turn", "iter", "kind", "outcome", "history", "request", "budget", "window", "trims"
)  # fmt: skip


@dataclass(frozen=True)
class CallTimeline(_Plot[TimelineRow]):
    columns = _TIMELINE_COLUMNS


def timeline_table(rows: Sequence[TimelineRow]) -> Table:
    """The timeline as text: history = what the budget measures, request = what the capacity
    check measures (history plus tool schemas), trims = those made before the call."""
    return fields_table(_TIMELINE_COLUMNS, rows)


_OUTCOME_COLORS = {"reply": _KEPT_COLOR, "tool_calls": "#0072B2", "overflow": _DROPPED_COLOR}
_BUDGET_COLOR = "#E69F00"
_PROVIDER_COLOR = "#CC79A7"
_TRIM_COLOR = "#555555"


def timeline_rows(calls: Sequence[ProviderCall]) -> list[TimelineRow]:
    """The numbers of `call_timeline`: one row per dispatch, trims as `reason -rows`."""
    return [
        TimelineRow(
            call=n,
            turn=c.turn_id,
            iteration=c.iteration,
            kind=c.kind,
            outcome=c.outcome,
            history=c.history_tokens,
            tokens=c.tokens,
            budget=c.budget,
            window=c.window,
            trims=", ".join(f"{t.reason.value} -{t.dropped_messages}" for t in c.trims) or None,
        )
        for n, c in enumerate(calls, start=1)
    ]


def call_timeline(
    calls: Sequence[ProviderCall], *, title: str, provider_window: int | None = None
) -> CallTimeline:
    """Estimated tokens sent at each provider call: the history (coloured by the call's
    outcome; what the budget measures) topped by the tool schemas (grey; the capacity check
    counts both), against the budget and the capacity. A dotted line marks each trim;
    `provider_window` draws a window the provider enforces on its own (unknown to the runtime)."""
    rows = timeline_rows(calls)
    figure = _draw_timeline(rows, title, provider_window) if can_draw() else None
    return CallTimeline(figure, rows)


def _draw_timeline(rows: Sequence[TimelineRow], title: str, provider_window: int | None) -> Figure:
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    figure, axes = plt.subplots(figsize=(10, 4.8))
    xs = [r.call for r in rows]
    highest = max([r.tokens for r in rows] + ([provider_window] if provider_window else []),
                  default=1)
    # A window or budget line is drawn only when it is on the bars' scale: a line far above
    # every bar would squash them (its value is in the legend either way).
    window_on_scale = all(r.window <= 1.6 * highest for r in rows)
    budgets = [r.budget for r in rows if r.budget]
    budget_on_scale = all(b <= 1.6 * highest for b in budgets)
    highest = max([highest, *([r.window for r in rows] if window_on_scale else []),
                   *(budgets if budget_on_scale else [])])
    axes.bar(xs, [r.history for r in rows], color=[_OUTCOME_COLORS[r.outcome] for r in rows],
             alpha=0.8)
    axes.bar(xs, [r.tokens - r.history for r in rows], bottom=[r.history for r in rows],
             color=_FIXED_COLOR, alpha=0.8, label="tool schemas")
    windows = sorted({r.window for r in rows})
    window_text = "capacity (window) " + ", ".join(f"{w:,}" for w in windows)
    if window_on_scale:
        axes.plot(xs, [r.window for r in rows], color="black", linestyle="--",
                  drawstyle="steps-mid", linewidth=1.5, label=window_text)
    else:
        axes.plot([], [], color="black", linestyle="--", label=window_text + ": above the chart")
    if provider_window is not None:
        axes.axhline(provider_window, color=_PROVIDER_COLOR, linestyle="-.", linewidth=2,
                     label=f"provider's own window ({provider_window:,})", zorder=1)
    if budgets:
        budget_text = "budget (proactive target) " + ", ".join(
            f"{b:,}" for b in sorted(set(budgets)))
        if budget_on_scale:
            axes.plot(xs, [r.budget for r in rows], color=_BUDGET_COLOR, linestyle="-.",
                      linewidth=2, drawstyle="steps-mid", label=budget_text)
        else:
            axes.plot([], [], color=_BUDGET_COLOR, linestyle="-.",
                      label=budget_text + ": above the chart")
    top = highest * 1.3
    for r in rows:
        axes.text(r.call, r.tokens + top * 0.01, f"{r.tokens:,}", ha="center", va="bottom",
                  fontsize=8, bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
    trimmed = [r for r in rows if r.trims]
    for n, r in enumerate(trimmed):
        axes.axvline(r.call - 0.5, color=_TRIM_COLOR, linestyle=":", linewidth=1.2)
        label = (r.trims or "").replace("token_budget ", "budget ").replace("turn_limit ", "turns ")
        axes.text(r.call - 0.5, top * (0.97 - 0.06 * (n % 2)), f"✂ {label} rows",
                  ha="center", va="top", fontsize=8, color=_TRIM_COLOR,
                  bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
    axes.set_ylim(0, top)
    axes.set_xticks(
        xs,
        [
            f"t{r.turn}.{r.iteration}" + ("\nfinal" if r.kind == "final_summary" else "")
            for r in rows
        ],
        fontsize=8,
    )
    _label(axes, "provider call (turn.iteration)", "estimated tokens sent", title)
    outcomes = [o for o in _OUTCOME_COLORS if any(r.outcome == o for r in rows)]
    axes.legend(
        handles=[
            *axes.get_legend_handles_labels()[0],
            *(Patch(color=_OUTCOME_COLORS[o], alpha=0.8, label=f"history, call outcome {o}")
              for o in outcomes),
            *([Line2D([], [], color=_TRIM_COLOR, linestyle=":", label="trim before the call")]
              if trimmed else []),
        ],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
    )
    figure.tight_layout()
    return figure
