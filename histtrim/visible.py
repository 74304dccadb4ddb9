"""SEEN-1..2, LIMIT-1..2, KEEP-1, CAP-1: the visible trim, one mechanism for every caller.

The agent, the adapters' record trims, the column rewrite and `histtrim trim` all plan their
trims here: the turn limit, then the token budget (the runtime's order), each dropping the
oldest whole turns (down to a low-water mark when the policy sets one, `Policy`'s
`turn_trim_target` and `token_trim_target`; the spec's is 1); the first drop brings the
breadcrumb right after the system prefix (SEEN-1), and since it is sent too it counts toward
the budget; every drop is one `HistoryTrimmed` event (SEEN-2). The plan needs only a turn
index and the rows' prices, so each caller applies the cut to what it holds (rows, records,
a file's columns)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

from histtrim._checks import non_negative
from histtrim.counting import ESTIMATE, Pricing
from histtrim.events import HistoryTrimmed, TrimReason
from histtrim.messages import ChatMessage, ConversationMessage
from histtrim.policy import low_water_tokens, low_water_turns
from histtrim.trim import (
    breadcrumb_message,
    insert_breadcrumb,
    prefix_sums,
    trim_conversation_to_recent_turns,
    turn_within_sums,
)
from histtrim.turns import TurnIndex, index_turns

T = TypeVar("T")


@dataclass(frozen=True)
class VisibleTrim:
    """What a visible trim keeps of the indexed rows: the system prefix, the breadcrumb (the
    input's, or one to insert) and the turns from `first` on; one event per drop."""

    index: TurnIndex
    first: int
    """The first kept turn of `index` (0: nothing was dropped)."""
    crumb_inserted: bool
    tokens_before: int
    tokens_after: int
    """The kept rows' price, the inserted breadcrumb's included."""
    events: tuple[HistoryTrimmed, ...]
    crumb_tokens: int = 0
    """The breadcrumb's share of `tokens_after` (inserted or the input's; 0: none is kept)."""
    replay: Any = None
    """A held-cut plan's state before its last request (`histtrim.low_water.Replay`)."""

    @property
    def trimmed(self) -> bool:
        return bool(self.events)

    @property
    def crumb_present(self) -> bool:
        """The breadcrumb flag of the output (pass it to the next trim)."""
        return self.index.crumb is not None or self.crumb_inserted

    @property
    def cut(self) -> int:
        """The first kept row after the prefix and breadcrumb (`body_start` when none dropped)."""
        return self.index.turn_start(self.first)

    @property
    def turns_after(self) -> int:
        return self.index.turn_count - self.first

    def kept(self, rows: Sequence[T], crumb: T | None) -> list[T]:
        """The kept items of `rows` (item k is row k of the index), with `crumb` inserted
        after the system prefix when the trim brings the breadcrumb."""
        inserted = [crumb] if self.crumb_inserted and crumb is not None else []
        return [*rows[: self.index.body_start], *inserted, *rows[self.cut :]]

    def dropped(self, rows: Sequence[T]) -> list[T]:
        return list(rows[self.index.body_start : self.cut])


def plan_visible_trim(
    index: TurnIndex,
    costs: Sequence[int],
    *,
    max_turns: int | None = None,
    budget_tokens: int | None = None,
    budget_in_force: int | None = None,
    crumb_cost: int | Callable[[], int] = 0,
    breadcrumb: bool = True,
    counter: str | None = None,
    turn_target: Fraction = Fraction(1),
    token_target: Fraction = Fraction(1),
    sums: Sequence[int] | None = None,
) -> VisibleTrim:
    """Plan the turn limit (`max_turns`: over `max(max_turns, 1)` turns, keep the newest
    `max(1, ceil(max_turns * turn_target))`), then the token budget (`budget_tokens`, 0 off;
    it runs only over budget with more than one turn left, and fits
    `budget_tokens * token_target`), on the rows `index` describes and priced `costs`. The
    targets are low-water marks (`Policy.turn_trim_target`, `token_trim_target`); the spec's
    are 1, trim just to fit.

    With `breadcrumb`, the first drop inserts one costing `crumb_cost` unless the index has
    one; a callable is asked once, only when a drop brings the breadcrumb in (a counter may
    be slow or paid). An event's `budget` is the budget trim's low-water mark, or for the
    turn limit `budget_in_force` (default: `budget_tokens or 0`), and its `target` the
    low-water mark applied when it is not 1; `counter` names the prices' counter. `sums`:
    `prefix_sums(costs)`, when the caller has them."""
    limit = None if max_turns is None else non_negative("max_turns", max_turns)
    target = None if budget_tokens is None else non_negative("budget_tokens", budget_tokens)
    sums = prefix_sums(costs) if sums is None else sums
    turns, body = index.turn_count, index.body_start
    insert = breadcrumb and index.crumb is None
    first, added, crumb = 0, False, None
    events: list[HistoryTrimmed] = []

    def crumb_price() -> int:
        nonlocal crumb
        if crumb is None:
            crumb = (crumb_cost() if callable(crumb_cost) else crumb_cost) if insert else 0
        return crumb

    def size(first: int) -> int:
        inserted = crumb_price() if added else 0
        return sums[body] + inserted + sums[-1] - sums[index.turn_start(first)]

    def drop(to: int, reason: TrimReason, budget: int, low_water: Fraction) -> None:
        nonlocal first, added
        before, dropped = size(first), index.turn_start(to) - index.turn_start(first)
        first, added = to, insert
        events.append(
            HistoryTrimmed(
                reason=reason,
                dropped_messages=dropped,
                kept_turns=turns - first,
                tokens_before=before,
                tokens_after=size(first),
                budget=budget,
                counter=counter,
                target=None if low_water == 1 else str(low_water),
            )
        )

    if limit is not None and turns > max(limit, 1):
        in_force = (target or 0) if budget_in_force is None else budget_in_force
        kept = low_water_turns(limit, turn_target)
        drop(turns - kept, TrimReason.TURN_LIMIT, in_force, turn_target)
    if target and size(first) > target and turns - first > 1:
        fit = low_water_tokens(target, token_target)
        fits, _ = turn_within_sums(index, sums, fit - crumb_price())  # it is sent too
        drop(max(fits, first), TrimReason.TOKEN_BUDGET, fit, token_target)
    crumb_tokens = crumb_price() if added else 0 if index.crumb is None else costs[index.crumb]
    return VisibleTrim(
        index, first, added, sums[-1], size(first), tuple(events), crumb_tokens
    )


@dataclass(frozen=True)
class StructuredTrim:
    """A visible trim of a structured history: the plan, the kept items (the breadcrumb
    inserted once something was dropped) and how many items were dropped."""

    plan: VisibleTrim
    history: list[ConversationMessage]
    dropped_items: int

    def event(self, tokens_after: int) -> HistoryTrimmed:
        """The drop's event (SEEN-2), with `tokens_after` the price of the kept history as its
        owner sends it: the structured cut keeps every system item, so the owner prices what
        it kept. A turn-limit event counts the items dropped (LIMIT-1 trims the structured
        history), a token-budget event the rows (RUN-3 trims those)."""
        (event,) = self.plan.events  # one limit, one drop
        update = {"tokens_after": tokens_after}
        if event.reason is TrimReason.TURN_LIMIT:
            update["dropped_messages"] = self.dropped_items
        return event.model_copy(update=update)


def trim_structured(
    items: Sequence[ConversationMessage],
    rows: Sequence[ChatMessage],
    *,
    max_turns: int | None = None,
    budget_tokens: int | None = None,
    budget_in_force: int = 0,
    crumb_present: bool = False,
    pricing: Pricing = ESTIMATE,
    turn_target: Fraction = Fraction(1),
    token_target: Fraction = Fraction(1),
) -> StructuredTrim:
    """The visible trim of a structured history (`Agent.history`, a structured session),
    planned on `rows`, its provider-facing rows (the system prompt's in front, if any): the
    structured cut (`trim_conversation_to_recent_turns`) keeps every system item, moved to
    the front, then the breadcrumb (SEEN-1). The targets as in `plan_visible_trim`."""
    index = index_turns(rows, crumb_present=crumb_present)
    searched = budget_tokens is not None and index.crumb is None  # the crumb to fit in
    plan = plan_visible_trim(
        index, pricing.costs(rows, index), max_turns=max_turns, budget_tokens=budget_tokens,
        budget_in_force=budget_in_force,
        crumb_cost=(lambda: pricing.plain(breadcrumb_message())) if searched else 0,
        counter=pricing.counter_name, turn_target=turn_target, token_target=token_target,
    )
    if not plan.trimmed:
        return StructuredTrim(plan, list(items), 0)
    structured = trim_conversation_to_recent_turns(
        items, plan.turns_after, crumb_present=crumb_present
    )
    if structured.dropped_turns != plan.first:
        raise AssertionError("the structured and provider-facing histories disagree about turns")
    kept = insert_breadcrumb(structured.history, crumb_present=False)
    return StructuredTrim(plan, kept, structured.dropped_messages)
