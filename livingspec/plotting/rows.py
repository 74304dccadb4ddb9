"""Row-by-row figures: what one row's estimate is made of (EST-1..2) and what the orphan
sweep removed from a history (PAIR-2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from histtrim.estimate import dispatched_images, message_costs
from histtrim.messages import ChatMessage
from histtrim.pairing import SweepResult
from histtrim.policy import SPEC
from histtrim.turns import index_turns
from livingspec.plotting._base import _DROPPED_COLOR, _KEPT_COLOR, _PALETTE, _Plot, panel_width
from livingspec.plotting.tables import Item, _role, item_costs, row_summary
from livingspec.plotting.turns import axis_cut


@dataclass(frozen=True)
class RowEstimateRow:
    """One row's estimate in its parts: text (`ceil(bytes / 4)`), framing and images."""

    row: int
    role: str
    text: int
    framing: int
    images: int
    total: int


@dataclass(frozen=True)
class RowEstimatePlot(_Plot[RowEstimateRow]):
    columns = ("row", "role", "text", "framing", "images", "total")


def row_estimate_rows(history: Sequence[ChatMessage]) -> list[RowEstimateRow]:
    """Each row's estimate (`message_costs`) split into its image part (dispatched images
    times the image price), the framing tokens and the rest, its text."""
    costs = message_costs(history)
    current = index_turns(history).current_turn_after
    rows = []
    for i, (message, cost) in enumerate(zip(history, costs, strict=True)):
        images = SPEC.image_tokens * dispatched_images(message, current_turn=i > current)
        framing = SPEC.frame_tokens
        rows.append(RowEstimateRow(i, message.role, cost - images - framing, framing, images,
                                   cost))
    return rows


def row_estimate(history: Sequence[ChatMessage], *, title: str) -> RowEstimatePlot:
    """One stacked bar per row: its text tokens, its framing tokens and its images' price."""
    rows = row_estimate_rows(history)
    figure, axes = plt.subplots(figsize=(panel_width(1, 9.5), 1.2 + 0.32 * len(rows)))
    parts = (("text", "text: ceil(UTF-8 bytes / 4)"), ("framing", "framing: 4 per message"),
             ("images", "images: 1,600 each dispatched"))
    cut = axis_cut([r.total for r in rows])  # an image's 1,600 would flatten every text bar
    top = cut if cut is not None else max((r.total for r in rows), default=1)
    left = [0] * len(rows)
    for k, (name, label) in enumerate(parts):
        values = [min(getattr(r, name), max(top - x, 0)) for r, x in zip(rows, left, strict=True)]
        axes.barh([r.row for r in rows], values, left=left, label=label,
                  color=_PALETTE[k], edgecolor="black", linewidth=0.4)
        left = [a + b for a, b in zip(left, values, strict=True)]
    for r in rows:
        shown = f"{r.total:,}" + (" (bar cut)" if r.total > top else "")
        axes.text(min(r.total, top) + top * 0.01, r.row, shown, va="center", fontsize=8)
    axes.set_xlim(0, top * 1.25)
    axes.set_ylim(len(rows) - 0.4, -0.6)
    axes.set_yticks([r.row for r in rows], [f"{r.row} {r.role}" for r in rows], fontsize=8)
    axes.set_xlabel("estimated tokens" + (f" (axis cut at {top:,})" if cut else ""))
    axes.set_ylabel("row (oldest at the top)")
    axes.set_title(title, fontsize=10)
    below = -0.5 / figure.get_figheight() - 0.04  # under the axis label
    axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, below), ncol=3)
    figure.tight_layout()
    return RowEstimatePlot(figure, rows)


@dataclass(frozen=True)
class SweepRow:
    """One input row of a sweep: kept whole, or what the sweep removed from it."""

    row: int
    role: str
    tokens: int
    removed: str
    content: str


@dataclass(frozen=True)
class SweepPlot(_Plot[SweepRow]):
    columns = ("row", "role", "tokens", "removed", "content")


def sweep_rows(history: Sequence[Item], swept: SweepResult[Item]) -> list[SweepRow]:
    """Each input row with what the sweep removed at its position: a result row (`result
    call_9`), calls stripped from a dispatch (`call call_3`), or nothing (`-`)."""
    removed: dict[int, list[str]] = {}
    for r in swept.removed:
        removed.setdefault(r.position, []).append(f"{r.kind} {r.tool_call_id or '?'}")
    costs = item_costs(history)
    return [
        SweepRow(i, _role(item), costs[i], ", ".join(removed.get(i, [])) or "-",
                 row_summary(item, 40))
        for i, item in enumerate(history)
    ]


def sweep_map(history: Sequence[Item], swept: SweepResult[Item], *, title: str) -> SweepPlot:
    """One bar per input row (estimated tokens): kept rows solid, rows the sweep touched
    hatched in the dropped colour and labelled with what it removed there."""
    rows = sweep_rows(history, swept)
    figure, axes = plt.subplots(figsize=(panel_width(1, 9.5), 1.4 + 0.34 * len(rows)))
    top = max((r.tokens for r in rows), default=1)
    for r in rows:
        touched = r.removed != "-"
        axes.barh(r.row, r.tokens, color=_DROPPED_COLOR if touched else _KEPT_COLOR,
                  alpha=0.45 if touched else 1.0, hatch="///" if touched else None,
                  edgecolor="black", linewidth=0.5)
        note = f"{r.tokens:,}" + (f"  removed: {r.removed}" if touched else "")
        axes.text(r.tokens + top * 0.015, r.row, note, va="center", fontsize=8)
    axes.set_xlim(0, top * 2.2)  # room for the notes
    axes.set_ylim(len(rows) - 0.4, -0.6)
    axes.set_yticks([r.row for r in rows], [f"{r.row} {r.role}" for r in rows], fontsize=8)
    axes.set_xlabel("estimated tokens")
    axes.set_ylabel("row as saved (oldest at the top)")
    axes.set_title(title, fontsize=10)
    axes.legend(handles=[
        Patch(facecolor=_KEPT_COLOR, edgecolor="black", label="kept as saved"),
        Patch(facecolor=_DROPPED_COLOR, alpha=0.45, hatch="///", edgecolor="black",
              label="the sweep removed this row, or part of it"),
    ], fontsize=8, loc="lower right")
    figure.tight_layout()
    return SweepPlot(figure, rows)
