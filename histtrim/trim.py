"""KEEP-1..3, TURN-4, TURN-6, CAP-1, PAIR-1, SEEN-1: the three whole-turn trims, the single-turn
drop and the breadcrumb.

Every trim derives its cut from one `TurnIndex`; kept rows plus `dropped` rows are
exactly the input, and the input is never mutated."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import accumulate
from typing import Any, Generic, TypeVar, cast

from histtrim._checks import non_negative
from histtrim.counting import Pricing, TokenCounter
from histtrim.messages import (
    BREADCRUMB,
    ChatMessage,
    ConversationMessage,
    Row,
    chat_rows,
    conversation_rows,
)
from histtrim.policy import SPEC, Policy, low_water_tokens, low_water_turns
from histtrim.turns import TurnIndex, index_turns, is_system, leading_system_count

M = TypeVar("M", bound=Row)


@dataclass(frozen=True, repr=False)
class _WholeTurnTrim(Generic[M]):
    """What every whole-turn trim reports: the kept rows, the dropped rows and the counts."""

    history: list[M]
    dropped: list[M] = field(repr=False)
    dropped_messages: int
    dropped_turns: int
    kept_turns: int

    @property
    def trimmed(self) -> bool:
        return self.dropped_turns > 0

    def __repr__(self) -> str:
        """A one-line summary; the rows themselves are in `history` and `dropped`."""
        return (
            f"{type(self).__name__}(kept {_count(len(self.history), 'row')} in "
            f"{_count(self.kept_turns, 'turn')}, dropped {_count(self.dropped_messages, 'message')}"
            f" in {_count(self.dropped_turns, 'turn')}{self._summary()})"
        )

    def _summary(self) -> str:
        return ""


@dataclass(frozen=True, repr=False)
class TrimResult(_WholeTurnTrim[ChatMessage]):
    """What the token-budget trim kept and dropped (KEEP-1, CAP-1)."""

    tokens_before: int
    tokens_after: int
    budget_tokens: int
    counter: str | None = None
    """The `token_counter` the token figures come from; None: the spec's estimate (EST-1)."""

    @property
    def over_budget(self) -> bool:
        """True when a positive budget is still exceeded (only the newest turn can cause it)."""
        return self.budget_tokens > 0 and self.tokens_after > self.budget_tokens

    def _summary(self) -> str:
        counted = "" if self.counter is None else f", counted by {self.counter}"
        return (
            f", tokens {self.tokens_before} -> {self.tokens_after}, budget {self.budget_tokens}"
            f"{counted}"
        )


@dataclass(frozen=True, repr=False)
class TurnCountTrimResult(_WholeTurnTrim[M]):
    """What a turn-count trim kept and dropped (KEEP-2, LIMIT-1..2)."""

    max_turns: int

    def _summary(self) -> str:
        return f", max_turns {self.max_turns}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' * (number != 1)}"


def _cut(rows: Sequence[M], index: TurnIndex, first_kept: int) -> tuple[list[M], list[M]]:
    """Keep the prefix (and crumb) plus turns `first_kept..`; return (kept, dropped)."""
    body, cut = index.body_start, index.turn_start(first_kept)
    return [*rows[:body], *rows[cut:]], list(rows[body:cut])


def prefix_sums(costs: Sequence[int]) -> Sequence[int]:
    """0 and the running totals of `costs`: 8 bytes a row in an `array('q')` (a list of a
    million large ints is 40 MB), a list when a total is past 64 bits or not an int."""
    try:
        return array("q", accumulate(costs, initial=0))
    except (OverflowError, TypeError):
        return list(accumulate(costs, initial=0))


def first_turn_within(index: TurnIndex, costs: Sequence[int], budget: int) -> tuple[int, int]:
    """The oldest turn of the longest suffix of whole turns that fits the budget, and the
    kept size; the newest turn is always kept. One pass of prefix sums, then a binary
    search over the turns (the kept size only shrinks as the first kept turn moves on)."""
    return turn_within_sums(index, prefix_sums(costs), budget)


def turn_within_sums(index: TurnIndex, sums: Sequence[int], budget: int) -> tuple[int, int]:
    """`first_turn_within` on the rows' `prefix_sums` (a caller that has them already)."""
    fixed, total = sums[index.body_start], sums[-1]
    first, last = 0, index.turn_count - 1
    while first < last:
        middle = (first + last) // 2
        if fixed + total - sums[index.turn_start(middle)] <= budget:
            last = middle
        else:
            first = middle + 1
    return first, fixed + total - sums[index.turn_start(first)]


def trim_to_recent_turns(
    history: Iterable[ChatMessage | Mapping[str, Any]],
    budget_tokens: int,
    *,
    crumb_present: bool = False,
    token_counter: TokenCounter | None = None,
    policy: Policy = SPEC,
    target: Fraction = Fraction(1),
) -> TrimResult:
    """Drop the oldest whole turns until the provider-facing history fits `budget_tokens`.

    Budget 0 disables the trim; the newest turn stays even when it alone is over. A
    `token_counter` prices each row's text instead of EST-1's bytes (see `histtrim.counting`).
    `target` (a low-water mark, 1 in the spec): once over the budget, fit `budget * target`."""
    budget = non_negative("budget_tokens", budget_tokens)
    rows = chat_rows(history)
    index = index_turns(rows, crumb_present=crumb_present)
    prices = Pricing(policy, token_counter)
    costs, counter = prices.costs(rows, index), prices.counter_name
    total = sum(costs)
    if budget == 0 or total <= budget or index.turn_count <= 1:
        return TrimResult(list(rows), [], 0, 0, index.turn_count, total, total, budget, counter)
    first, kept_tokens = first_turn_within(index, costs, low_water_tokens(budget, target))
    kept, dropped = _cut(rows, index, first)
    return TrimResult(
        kept,
        dropped,
        len(dropped),
        first,
        index.turn_count - first,
        total,
        kept_tokens,
        budget,
        counter,
    )


def trim_to_recent_turn_count(
    history: Iterable[ChatMessage | Mapping[str, Any]],
    max_turns: int,
    *,
    crumb_present: bool = False,
    target: Fraction = Fraction(1),
) -> TurnCountTrimResult[ChatMessage]:
    """Keep the newest `max(max_turns, 1)` turns of a provider-facing history.

    The leading system block and the breadcrumb stay in place; a later system row goes
    with its turn. `target` (1 in the spec): once over, keep `max(1, ceil(max_turns * target))`."""
    limit = non_negative("max_turns", max_turns)
    rows = chat_rows(history)
    index = index_turns(rows, crumb_present=crumb_present)
    drop = _turns_to_drop(index.turn_count, limit, target)
    if drop <= 0:
        return TurnCountTrimResult(list(rows), [], 0, 0, index.turn_count, limit)
    kept, dropped = _cut(rows, index, drop)
    return TurnCountTrimResult(kept, dropped, len(dropped), drop, index.turn_count - drop, limit)


def trim_conversation_to_recent_turns(
    history: Iterable[ConversationMessage | Mapping[str, Any]],
    max_turns: int,
    *,
    crumb_present: bool = False,
    target: Fraction = Fraction(1),
) -> TurnCountTrimResult[ConversationMessage]:
    """Keep the newest `max(max_turns, 1)` turns of the structured `Agent.history`.

    When it trims, every system row is kept and moved to the front in order, and the
    breadcrumb is dropped (its owner re-inserts it); neither counts as a dropped message.
    `target` as in `trim_to_recent_turn_count`."""
    limit = non_negative("max_turns", max_turns)
    rows = conversation_rows(history)
    index = index_turns(rows, crumb_present=crumb_present)
    drop = _turns_to_drop(index.turn_count, limit, target)
    if drop <= 0:
        return TurnCountTrimResult(list(rows), [], 0, 0, index.turn_count, limit)
    cut = index.turn_start(drop)
    systems = [row for row in rows if is_system(row)]
    body = [row for row in rows[cut:] if not is_system(row)]
    dropped = [
        row for row in rows[index.prefix_len : cut] if not is_system(row)
    ]  # crumb included: it is removed from the output
    crumb_rows = index.crumb is not None
    return TurnCountTrimResult(
        [*systems, *body], dropped, len(dropped) - crumb_rows, drop, index.turn_count - drop, limit
    )


def _turns_to_drop(turns: int, limit: int, target: Fraction) -> int:
    """How many oldest turns a turn-limit trim drops: none within `max(limit, 1)`, else down
    to the low-water mark (`max(limit, 1)` itself when `target` is 1)."""
    if turns <= max(limit, 1):
        return 0
    return turns - low_water_turns(limit, target)


def drop_oldest_whole_turn(
    history: Sequence[M], *, crumb_present: bool = False
) -> tuple[list[M], int]:
    """Drop the oldest turn (and any preamble) if another remains: (new list, rows dropped)."""
    rows = cast(Sequence[M], conversation_rows(history))  # dicts are validated, like the trims
    index = index_turns(rows, crumb_present=crumb_present)
    if index.turn_count <= 1:
        return list(rows), 0
    kept, dropped = _cut(rows, index, 1)
    return kept, len(dropped)


def breadcrumb_message() -> ChatMessage:
    """The context note as the model sees it: a user row (its slot is named by the owner's flag)."""
    return ChatMessage.user(BREADCRUMB)


def insert_breadcrumb(history: Sequence[M], *, crumb_present: bool) -> list[M | ChatMessage]:
    """Insert the breadcrumb once, right after the leading system rows (SEEN-1)."""
    rows = cast(Sequence[M], conversation_rows(history))  # a dict system row is a system row
    if crumb_present:
        index_turns(rows, crumb_present=True)  # the flag must name a real crumb slot
        return list(rows)
    prefix = leading_system_count(rows)
    return [*rows[:prefix], breadcrumb_message(), *rows[prefix:]]
