"""The Jupyter rich display of histories and trim results: `history_html`,
`trim_result_html`, `History`, and the IPython formatter that renders trim results.

The display depends on the results, never the reverse: trim results render as HTML in
Jupyter because this module registers `trim_result_html` with IPython's HTML formatter.
The page itself is `display_page` (its pieces `display_html`); the per-turn figures are
`turn_sizes`, re-exported here."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from histtrim.display.page import HistoryPage, Status
from histtrim.display.pieces import frame
from histtrim.messages import ConversationMessage, conversation_rows
from histtrim.trim import TrimResult, TurnCountTrimResult
from histtrim.turn_sizes import turn_stats
from histtrim.turns import index_turns, leading_system_count

__all__ = [
    "History",
    "history_html",
    "register_ipython_formatters",
    "trim_result_html",
]


def history_html(
    history: Iterable[ConversationMessage | Mapping[str, Any]], *, crumb_present: bool = False
) -> str:
    """One block per turn, token counts, tool calls linked to their results."""
    items = conversation_rows(history)
    page = HistoryPage(items, ["kept"] * len(items), crumb_present)
    total = sum(page.priced.costs)
    turns = page.priced.index.turn_count
    summary = f"{turns} turns · {len(items)} messages · {total:,} tokens"
    return frame("History", summary, page.blocks())


def _crumb_counted(rows: Sequence[ConversationMessage], turns: int) -> bool:
    """Whether the row after the prefix is a breadcrumb the result did not count as a turn.

    A result's kept/dropped turn counts exclude the breadcrumb, while an index built
    without the flag counts it: the difference tells, without reading any text."""
    return index_turns(rows).turn_count == turns + 1


def trim_result_html(
    result: TrimResult | TurnCountTrimResult[Any], *, crumb_inserted: bool = False
) -> str:
    """The input of a trim, dropped turns greyed out, where the breadcrumb goes marked."""
    kept: Sequence[ConversationMessage] = result.history
    dropped: Sequence[ConversationMessage] = result.dropped
    crumb_kept = _crumb_counted(kept, result.kept_turns)
    crumb_dropped = bool(dropped) and _crumb_counted(dropped, result.dropped_turns)
    body = leading_system_count(kept) + crumb_kept
    items = [*kept[:body], *dropped, *kept[body:]]
    kept_status: list[Status] = ["kept"]
    dropped_status: list[Status] = ["dropped"]
    rest = len(kept) - body
    status = [*kept_status * body, *dropped_status * len(dropped), *kept_status * rest]
    page = HistoryPage(items, status, crumb_kept or crumb_dropped)
    turns = result.kept_turns + result.dropped_turns
    if isinstance(result, TrimResult):
        title = "Token-budget trim"
        if result.budget_tokens == 0:
            summary = f"budget 0: proactive trimming is off · {turns} turns kept"
        elif result.trimmed:
            summary = (
                f"kept {result.kept_turns} of {turns} turns · dropped {result.dropped_messages}"
                f" messages · {result.tokens_before:,} → {result.tokens_after:,} tokens"
                f" (budget {result.budget_tokens:,})"
            )
            crumb_cost = page.priced.costs[body - 1] if crumb_kept else 0
            if result.over_budget and (
                result.counter is not None
                or result.tokens_after - crumb_cost > result.budget_tokens
            ):
                summary += " · the newest turn alone is over the budget and stays (CAP-1)"
            elif result.over_budget:
                summary += (
                    f" · the kept rows fit without the breadcrumb; the breadcrumb"
                    f" ({crumb_cost:,} tokens) tips them over (KEEP-3, SEEN-1)"
                )
        else:
            summary = (
                f"no trim: {turns} turns · {result.tokens_before:,} tokens"
                f" (budget {result.budget_tokens:,})"
            )
    else:
        title = "Turn-limit trim"
        if result.trimmed:
            summary = (
                f"kept {result.kept_turns} of {turns} turns (max_turns {result.max_turns})"
                f" · dropped {result.dropped_messages} messages"
            )
        else:
            summary = f"no trim: {turns} turns (max_turns {result.max_turns})"
    marker = None
    if result.trimmed and not crumb_kept:
        marker = (
            "breadcrumb inserted here, before the first kept turn (SEEN-1)"
            if crumb_inserted
            else "the owner inserts the breadcrumb here, before the first kept turn (SEEN-1)"
        )
    return frame(title, summary, page.blocks(marker))


@dataclass(frozen=True)
class History:
    """Wraps a history for Jupyter: `History(rows)` renders one block per turn."""

    rows: Sequence[ConversationMessage | Mapping[str, Any]]
    crumb_present: bool = False

    def _repr_html_(self) -> str:
        return history_html(self.rows, crumb_present=self.crumb_present)

    def __repr__(self) -> str:
        stats = turn_stats(self.rows, crumb_present=self.crumb_present)
        total = stats[0].cumulative if stats else 0
        return f"History({len(stats) - 1} turns, {len(self.rows)} messages, {total:,} tokens)"


def register_ipython_formatters(shell: Any = None) -> bool:
    """Render `TrimResult` and `TurnCountTrimResult` with `trim_result_html` in Jupyter.

    Called when this module is imported inside IPython (so `import histtrim` is enough);
    call it yourself for a shell started later. Returns whether a shell was found."""
    if shell is None:
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    html = shell.display_formatter.formatters["text/html"]
    for result_type in (TrimResult, TurnCountTrimResult):
        html.for_type(result_type, trim_result_html)
    return True


register_ipython_formatters()
