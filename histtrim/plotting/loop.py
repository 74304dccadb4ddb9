"""The agent-loop timeline: tokens sent at each provider call, with the trims before it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..runtime import ProviderCall
from ._base import _DROPPED_COLOR, _FIXED_COLOR, _KEPT_COLOR, _label, _Plot
from .tables import Table, _fields_table


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
    return _fields_table(_TIMELINE_COLUMNS, rows)


_OUTCOME_COLORS = {"reply": _KEPT_COLOR, "tool_calls": "#1565c0", "overflow": _DROPPED_COLOR}


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
    figure, axes = plt.subplots(figsize=(10, 4.5))
    xs = [r.call for r in rows]
    axes.bar(
        xs, [r.history for r in rows], color=[_OUTCOME_COLORS[r.outcome] for r in rows], alpha=0.7
    )
    axes.bar(
        xs,
        [r.tokens - r.history for r in rows],
        bottom=[r.history for r in rows],
        color=_FIXED_COLOR,
        alpha=0.7,
        label="tool schemas",
    )
    axes.plot(
        xs,
        [r.window for r in rows],
        color="black",
        linestyle="--",
        drawstyle="steps-mid",
        label="capacity (window)",
    )
    if provider_window is not None:
        axes.axhline(
            provider_window,
            color=_DROPPED_COLOR,
            linestyle=":",
            label=f"provider's own window ({provider_window:,})",
        )
    if any(r.budget for r in rows):
        axes.plot(
            xs,
            [r.budget for r in rows],
            color="#ef6c00",
            linestyle="-.",
            drawstyle="steps-mid",
            label="budget (proactive target)",
        )
    for r in rows:
        axes.annotate(
            str(r.tokens),
            (r.call, r.tokens),
            textcoords="offset points",
            xytext=(0, 4),
            ha="center",
            fontsize=8,
        )
        if r.trims:
            axes.axvline(r.call - 0.5, color="#6a1b9a", linestyle=":")
            axes.annotate(
                r.trims.replace(", ", "\n"),
                (r.call - 0.5, 0),
                textcoords="offset points",
                xytext=(3, 4),
                fontsize=7,
                color="#6a1b9a",
                rotation=90,
                va="bottom",
            )
    axes.set_xticks(
        xs,
        [
            f"t{r.turn}.{r.iteration}" + ("\nfinal" if r.kind == "final_summary" else "")
            for r in rows
        ],
        fontsize=8,
    )
    _label(axes, "provider call (turn.iteration)", "estimated tokens sent", title)
    axes.legend(
        handles=[
            *axes.get_legend_handles_labels()[0],
            *(
                Patch(color=color, alpha=0.7, label=outcome)
                for outcome, color in _OUTCOME_COLORS.items()
            ),
            Line2D([], [], color="#6a1b9a", linestyle=":", label="trim before the call"),
        ],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
    )
    figure.tight_layout()
    return CallTimeline(figure, rows)
