"""The token-budget trim's cut over a history's turns: each turn's tokens and the running
total from the newest turn back, against the budget (KEEP-1..3)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from histtrim.estimate import message_costs
from histtrim.messages import ChatMessage
from histtrim.trim import TrimResult, trim_to_recent_turns
from histtrim.turns import index_turns
from livingspec.plotting import can_draw
from livingspec.plotting._base import _DROPPED_COLOR, _KEPT_COLOR, _Plot

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class CutRow:
    """One turn, newest first: its size and the running total from the newest turn back."""

    turn: int
    messages: int
    tokens: int
    cumulative: int
    fits: bool
    kept: bool


@dataclass(frozen=True)
class BudgetCut(_Plot[CutRow]):
    """Cumulative tokens from the newest turn backwards against the budget."""

    columns = ("turn", "messages", "tokens", "cumulative", "fits", "kept")
    budget: int
    fixed_tokens: int
    """System prefix and breadcrumb: kept whatever the budget."""
    result: TrimResult


def cumulative_from_newest(
    history: Sequence[ChatMessage],
    budget_tokens: int,
    *,
    crumb_present: bool = False,
) -> tuple[list[CutRow], int, TrimResult]:
    """Every turn, newest first, with the running total from the newest turn backwards
    (starting from the system prefix and crumb), whether that total fits the budget (budget
    0: no trim, everything fits) and whether `trim_to_recent_turns` kept the turn.

    Returns (rows, tokens of the system prefix and crumb, the trim result)."""
    index = index_turns(history, crumb_present=crumb_present)
    costs = message_costs(history, index)
    result = trim_to_recent_turns(history, budget_tokens, crumb_present=crumb_present)
    fixed = sum(costs[: index.body_start])
    running = fixed
    rows: list[CutRow] = []
    for turn in reversed(range(index.turn_count)):
        start, end = index.turn_start(turn), index.turn_end(turn)
        tokens = sum(costs[start:end])
        running += tokens
        rows.append(
            CutRow(
                turn=turn + 1,
                messages=end - start,
                tokens=tokens,
                cumulative=running,
                fits=budget_tokens == 0 or running <= budget_tokens,
                kept=turn >= result.dropped_turns,
            )
        )
    return rows, fixed, result


def budget_cut(
    history: Sequence[ChatMessage],
    budget_tokens: int,
    *,
    title: str,
    crumb_present: bool = False,
) -> BudgetCut:
    """Bars of each turn's tokens and a line of the running total (system rows included),
    newest turn first, against the budget; the trim's cut is marked."""
    rows, fixed, result = cumulative_from_newest(
        history, budget_tokens, crumb_present=crumb_present
    )
    figure = _draw_cut(rows, budget_tokens, title) if can_draw() else None
    return BudgetCut(figure, rows, budget_tokens, fixed, result)


def _draw_cut(rows: Sequence[CutRow], budget_tokens: int, title: str) -> Figure:
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    figure, axes = plt.subplots(figsize=(10, 4.5))
    positions = list(range(len(rows)))
    axes.bar(
        positions,
        [r.tokens for r in rows],
        color=[_KEPT_COLOR if r.kept else _DROPPED_COLOR for r in rows],
        alpha=0.55,
    )
    axes.plot(
        positions,
        [r.cumulative for r in rows],
        marker="o",
        color="black",
        label="cumulative from the newest turn (+ system rows)",
    )
    axes.axhline(budget_tokens, color="#0072B2", linestyle="--", label=f"budget {budget_tokens:,}")
    kept_count = sum(r.kept for r in rows)
    if 0 < kept_count < len(rows):
        axes.axvline(kept_count - 0.5, color=_DROPPED_COLOR, linestyle=":", label="cut")
    # "(newest)" on a second line so it cannot run into the next label; many turns: rotate.
    axes.set_xticks(
        positions,
        [f"turn {r.turn}" + ("\n(newest)" if i == 0 else "") for i, r in enumerate(rows)],
        rotation=45 if len(rows) > 12 else 0,
        ha="right" if len(rows) > 12 else "center",
    )
    axes.set_xlabel("turns, newest first")
    axes.set_ylabel("estimated tokens")
    axes.set_title(title)
    axes.legend(
        handles=[
            *axes.get_legend_handles_labels()[0],
            Patch(color=_KEPT_COLOR, alpha=0.55, label="kept turn"),
            Patch(color=_DROPPED_COLOR, alpha=0.55, label="dropped turn"),
        ],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
    )
    top = max([budget_tokens, *(r.cumulative for r in rows)], default=1)
    for x, r in zip(positions, rows, strict=True):
        # On a white box, clear of the bars, the cut line, the budget line and the next
        # label: above-left of the point, below-right just after the cut, and above the
        # budget line when that line is just above the point.
        under_budget_line = budget_tokens - top * 0.1 < r.cumulative <= budget_tokens
        after_cut = 0 < kept_count == x
        axes.annotate(
            f"{r.cumulative:,}",
            (x, budget_tokens + top * 0.02) if under_budget_line else (x, r.cumulative),
            textcoords="offset points",
            xytext=(0, 2) if under_budget_line else (7, -14) if after_cut else (-7, 7),
            ha="center" if under_budget_line else "left" if after_cut else "right",
            fontsize=8,
            zorder=5,
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5},
        )
    axes.set_ylim(0, top * 1.15)
    figure.tight_layout()
    return figure
