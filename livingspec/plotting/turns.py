"""The turn map: every message as a bar coloured by turn, dropped rows faded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from histtrim.display.tables import Table, text_table
from histtrim.messages import ChatMessage
from histtrim.trim import TrimResult, TurnCountTrimResult
from histtrim.turns import index_turns, is_system
from livingspec.plotting import can_draw
from livingspec.plotting._base import _FIXED_COLOR, _PALETTE, _Plot
from livingspec.plotting.tables import Item, _role, _turn_labels, item_costs, row_summary

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class TurnMapRow:
    """One message of a turn map: its turn (1-based, None for the system prefix and crumb)
    and `part`, the turn as the table shows it (`sys`, `crumb` or the number)."""

    row: int
    role: str
    turn: int | None
    part: str
    tokens: int
    kept: bool
    content: str


@dataclass(frozen=True)
class TurnMap(_Plot[TurnMapRow]):
    """A turn-map figure and the rows it draws."""

    def table(self) -> Table:
        """The rows with `part` as their turn (`sys`, `crumb` or the number)."""
        return text_table(
            ["row", "role", "turn", "tokens", "kept", "content"],
            [(r.row, r.role, r.part, r.tokens, r.kept, r.content) for r in self.rows],
        )

    def turn_table(self) -> Table:
        """`turn_table` of the rows drawn."""
        return turn_table(self.rows)


def turn_table(rows: Sequence[TurnMapRow]) -> Table:
    """One line per turn (and per system block or crumb): its rows, tokens and fate; the
    short form when the row-by-row table was already shown for the same history."""
    groups: dict[str, list[TurnMapRow]] = {}
    for r in rows:
        groups.setdefault(r.part, []).append(r)
    return text_table(
        ["turn", "rows", "tokens", "kept"],
        [
            (part, f"{group[0].row}-{group[-1].row}" if len(group) > 1 else str(group[0].row),
             sum(r.tokens for r in group), all(r.kept for r in group))
            for part, group in groups.items()
        ],
    )


def kept_rows(
    history: Sequence[Item],
    result: TrimResult | TurnCountTrimResult[ChatMessage] | TurnCountTrimResult[Item],
    *,
    crumb_present: bool = False,
) -> list[bool]:
    """Which input rows a trim result kept, derived from the turn index.

    Provider-facing trims keep the leading block and turns `dropped_turns..` in place; the
    structured trim keeps every system row (hoisted to the front) and drops the crumb. The
    flags are checked against `result`: ValueError when it did not come from `history`."""
    index = index_turns(history, crumb_present=crumb_present)
    owner = index.turn_of()
    drop = result.dropped_turns
    in_place = [turn < 0 or turn >= drop for turn in owner]
    hoisted = [
        is_system(item) or (turn >= drop and i != index.crumb)
        for i, (item, turn) in enumerate(zip(history, owner, strict=True))
    ]
    for flags, hoist in ((in_place, False), (hoisted, True)):
        kept = [item for item, keep in zip(history, flags, strict=True) if keep]
        if hoist:
            kept = [*filter(is_system, kept), *(k for k in kept if not is_system(k))]
        dropped = [item for item, keep in zip(history, flags, strict=True) if not keep]
        if kept == list(result.history) and dropped == list(result.dropped):
            return flags
    raise ValueError("result: does not come from trimming this history")


def _turn_color(turn: int | None) -> str:
    return _FIXED_COLOR if turn is None else _PALETTE[(turn - 1) % len(_PALETTE)]


def axis_cut(values: Sequence[int]) -> int | None:
    """Where a linear axis is cut so a few outliers do not flatten every other bar: 1.5 times
    the largest value within 8 times the median, when some value is over twice that; else
    None (no cut)."""
    if not values:
        return None
    ordered = sorted(values)
    median = ordered[len(ordered) // 2]
    ordinary = max(v for v in ordered if v <= 8 * max(median, 1))
    return round(ordinary * 1.5) if ordered[-1] > 2 * ordinary else None


def turn_map_rows(
    history: Sequence[Item],
    result: TrimResult | TurnCountTrimResult[ChatMessage] | TurnCountTrimResult[Item],
    *,
    crumb_present: bool = False,
) -> list[TurnMapRow]:
    """The numbers of a turn map: every input row with its turn, tokens and fate."""
    index = index_turns(history, crumb_present=crumb_present)
    kept = kept_rows(history, result, crumb_present=crumb_present)
    costs = item_costs(history)
    parts = _turn_labels(index)
    rows = [
        TurnMapRow(
            row=i,
            role=_role(item),
            turn=turn + 1 if turn >= 0 else None,
            part=parts[i],
            tokens=costs[i],
            kept=kept[i],
            content=row_summary(item, 44),
        )
        for i, (item, turn) in enumerate(zip(history, index.turn_of(), strict=True))
    ]
    return rows


def turn_map(
    history: Sequence[Item],
    result: TrimResult | TurnCountTrimResult[ChatMessage] | TurnCountTrimResult[Item],
    *,
    title: str,
    crumb_present: bool = False,
) -> TurnMap:
    """One bar per message (length = estimated tokens, linear), coloured by turn; dropped
    rows faded and hatched. A few very long bars are cut at `axis_cut` (marked with a break
    and their value), so the short ones stay readable."""
    rows = turn_map_rows(history, result, crumb_present=crumb_present)
    return TurnMap(_draw_turn_map(rows, title) if can_draw() else None, rows)


def _draw_turn_map(rows: Sequence[TurnMapRow], title: str) -> Figure:
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    figure, axes = plt.subplots(figsize=(10, 1.4 + 0.3 * len(rows)))
    cut = axis_cut([r.tokens for r in rows])
    limit = cut if cut is not None else max((r.tokens for r in rows), default=10)
    for r in rows:
        length = min(r.tokens, limit)
        color = _turn_color(r.turn)
        axes.barh(
            r.row,
            length,
            color=color,
            alpha=1.0 if r.kept else 0.3,
            hatch=None if r.kept else "///",
            edgecolor="black" if r.kept else color,
            linewidth=0.6,
        )
        label = f"{r.tokens:,}"
        if r.tokens > limit:
            for offset in (0.035, 0.055):  # the break: two white slashes across the bar
                x = limit * (1 - offset)
                axes.plot([x - limit * 0.01, x + limit * 0.01], [r.row + 0.4, r.row - 0.4],
                          color="white", linewidth=2.5)
            label += " (bar cut)"
        axes.text(length + limit * 0.015, r.row, label, va="center", fontsize=8)
    axes.set_xlim(0, limit * 1.25)
    axes.set_ylim(len(rows) - 0.4, -0.6)
    axes.set_yticks([r.row for r in rows], [f"{r.row} {r.role}" for r in rows], fontsize=8)
    axes.set_xlabel("estimated tokens" + (f" (axis cut at {limit:,})" if cut else ""))
    axes.set_ylabel("message (oldest at the top)")
    axes.set_title(title)
    turns = sorted({r.turn for r in rows if r.turn is not None})
    handles = [Patch(facecolor=_FIXED_COLOR, edgecolor="black", label="system / crumb")]
    handles += [Patch(facecolor=_turn_color(t), edgecolor="black", label=f"turn {t}")
                for t in turns]
    handles += [
        Patch(facecolor="#777777", edgecolor="black", label="kept: solid"),
        Patch(facecolor="#777777", alpha=0.3, edgecolor="#777777", hatch="///",
              label="dropped: faded, hatched"),
    ]
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    figure.tight_layout()
    return figure
