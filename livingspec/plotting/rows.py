"""Row-by-row figures: what one row's estimate is made of (EST-1..2), what the orphan sweep
removed from a history and what each of its passes removed (PAIR-2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from histtrim.estimate import dispatched_images, message_costs
from histtrim.messages import ChatMessage
from histtrim.pairing import SweepResult, SweepStep
from histtrim.policy import SPEC
from histtrim.turns import index_turns
from livingspec.plotting import can_draw
from livingspec.plotting._base import (
    _DROPPED_COLOR,
    _KEPT_COLOR,
    _PALETTE,
    _Plot,
    panel_width,
)
from livingspec.plotting.tables import Item, _role, item_costs, row_summary
from livingspec.plotting.turns import axis_cut

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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
    return RowEstimatePlot(_draw_row_estimate(rows, title) if can_draw() else None, rows)


def _draw_row_estimate(rows: Sequence[RowEstimateRow], title: str) -> Figure:
    import matplotlib.pyplot as plt

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
    return figure


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
    return SweepPlot(_draw_sweep(rows, title) if can_draw() else None, rows)


def _draw_sweep(rows: Sequence[SweepRow], title: str) -> Figure:
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

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
    return figure


@dataclass(frozen=True)
class PassCell:
    """One row after one stage of the sweep: `kept`, `stripped` (calls removed at this stage,
    the row stays), `removed` (at this stage) or `gone` (removed by an earlier stage)."""

    row: int
    stage: str
    state: str


@dataclass(frozen=True)
class PassesPlot(_Plot[PassCell]):
    columns = ("row", "stage", "state")


_STATE_STYLE = {
    "kept": (_KEPT_COLOR, 1.0, None),
    "stripped": (_PALETTE[1], 1.0, ".."),
    "removed": (_DROPPED_COLOR, 0.6, "///"),
    "gone": ("#FFFFFF", 1.0, None),
}


def pass_cells(history: Sequence[Item], steps: Sequence[SweepStep[Item]]) -> list[PassCell]:
    """Each input row's state after each stage of `sweep_stages`."""
    cells = []
    for step in steps:
        present = set(step.positions)
        here = {r.position: r.kind for r in step.removed_here}
        for row in range(len(history)):
            if row in here:
                state = "removed" if row not in present else "stripped"
            else:
                state = "kept" if row in present else "gone"
            cells.append(PassCell(row, step.stage, state))
    return cells


def sweep_passes(
    history: Sequence[Item], steps: Sequence[SweepStep[Item]], *, labels: Sequence[str],
    title: str,
) -> PassesPlot:
    """A grid: one line per input row (`labels`), one column per stage of the sweep; each
    cell says whether the row is kept, loses calls, is removed at that stage, or is gone."""
    cells = pass_cells(history, steps)
    stages: list[str] = [step.stage for step in steps]
    figure = _draw_passes(cells, stages, labels, title) if can_draw() else None
    return PassesPlot(figure, cells)


def _draw_passes(
    cells: Sequence[PassCell], stages: list[str], labels: Sequence[str], title: str
) -> Figure:
    """One line per input row (`labels`, one per row), one column per stage."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    figure, axes = plt.subplots(figsize=(panel_width(1, 7.5), 1.3 + 0.32 * len(labels)))
    for cell in cells:
        color, alpha, hatch = _STATE_STYLE[cell.state]
        axes.add_patch(Rectangle((stages.index(cell.stage) - 0.45, cell.row - 0.4), 0.9, 0.8,
                                 facecolor=color, alpha=alpha, hatch=hatch,
                                 edgecolor="black" if cell.state != "gone" else "#BBBBBB",
                                 linewidth=0.5))
    axes.set_xlim(-0.6, len(stages) - 0.4)
    axes.set_ylim(len(labels) - 0.5, -0.6)
    axes.set_xticks(range(len(stages)), stages, fontsize=9)
    axes.xaxis.tick_top()
    axes.set_yticks(range(len(labels)), [f"{n} {text}" for n, text in enumerate(labels)],
                    fontsize=8)
    axes.set_title(title, fontsize=10, pad=24)
    axes.legend(handles=[
        Patch(facecolor=_STATE_STYLE[s][0], alpha=_STATE_STYLE[s][1], hatch=_STATE_STYLE[s][2],
              edgecolor="black", label=text)
        for s, text in (("kept", "kept"), ("stripped", "part of it removed here"),
                        ("removed", "removed here"), ("gone", "removed earlier"))
    ], fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    return figure
