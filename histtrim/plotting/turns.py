"""The turn map: every message as a bar coloured by turn, dropped rows faded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from ..messages import ChatMessage
from ..trim import TrimResult, TurnCountTrimResult
from ..turns import index_turns, is_system
from ._base import _DROPPED_COLOR, _FIXED_COLOR, _Plot
from .tables import Item, _role, _turn_labels, item_costs, row_summary, text_table


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

    def table(self) -> str:
        """The rows with `part` as their turn (`sys`, `crumb` or the number)."""
        return text_table(
            ["row", "role", "turn", "tokens", "kept", "content"],
            [(r.row, r.role, r.part, r.tokens, r.kept, r.content) for r in self.rows],
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
    if turn is None:
        return _FIXED_COLOR
    palette = plt.get_cmap("tab10").colors  # type: ignore[attr-defined]
    red, green, blue = palette[(turn - 1) % len(palette)]
    return f"#{round(red * 255):02x}{round(green * 255):02x}{round(blue * 255):02x}"


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
    """One bar per message (length = estimated tokens, log scale), coloured by turn;
    dropped rows are faded and hatched."""
    rows = turn_map_rows(history, result, crumb_present=crumb_present)
    figure, axes = plt.subplots(figsize=(10, 1.4 + 0.3 * len(rows)))
    for r in rows:
        axes.barh(
            r.row,
            r.tokens,
            color=_turn_color(r.turn),
            alpha=1.0 if r.kept else 0.3,
            hatch=None if r.kept else "///",
            edgecolor="black" if r.kept else _DROPPED_COLOR,
            linewidth=0.6,
        )
        axes.text(r.tokens * 1.08, r.row, f"{r.tokens}", va="center", fontsize=8)
    axes.set_xscale("log")
    axes.set_xlim(1, max(r.tokens for r in rows) * 4 if rows else 10)
    axes.set_yticks([r.row for r in rows], [f"{r.row} {r.role}" for r in rows], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel("estimated tokens (log scale)")
    axes.set_ylabel("message (oldest at the top)")
    axes.set_title(title)
    turns = sorted({r.turn for r in rows if r.turn is not None})
    handles = [Patch(color=_FIXED_COLOR, label="system / crumb")]
    handles += [Patch(color=_turn_color(t), label=f"turn {t}") for t in turns]
    handles += [
        Patch(facecolor="white", edgecolor="black", label="kept"),
        Patch(facecolor="white", edgecolor=_DROPPED_COLOR, hatch="///", label="dropped"),
    ]
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    figure.tight_layout()
    return TurnMap(figure, rows)
