"""EST-4, KEEP-1: how big each turn of a history is: its messages, tokens, images and the
cumulative size from the newest turn (`turn_stats`), priced as the provider-facing rows the
items become.

Below the display, which renders these figures, and the CLI and adapters, which print them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from histtrim.carriers import to_chat_messages
from histtrim.counting import Pricing, TokenCounter
from histtrim.estimate import dispatched_images
from histtrim.messages import ChatMessage, ConversationMessage, conversation_rows
from histtrim.policy import SPEC, Policy
from histtrim.turns import TurnIndex, index_turns


@dataclass(frozen=True, slots=True)
class TurnStats:
    """One turn's share of a history (turn 0 is the system prefix and the breadcrumb)."""

    turn: int
    first_row: int
    messages: int
    tokens: int
    images: int
    cumulative: int
    """Tokens kept when this turn and every newer one are kept, the prefix included: the
    figure the token-budget trim compares with the budget."""


@dataclass(frozen=True, slots=True)
class TurnColumns:
    """`TurnStats` of a whole history as columns: a file of 300,000 turns is
    six lists of integers, summed and formatted at C speed, not an object per turn."""

    turn: Sequence[int]
    first_row: Sequence[int]
    messages: Sequence[int]
    tokens: Sequence[int]
    images: Sequence[int]
    cumulative: Sequence[int]

    def __len__(self) -> int:
        return len(self.turn)

    @classmethod
    def of(cls, stats: Sequence[TurnStats]) -> TurnColumns:
        """The columns of per-turn stats."""
        return cls(
            [s.turn for s in stats], [s.first_row for s in stats], [s.messages for s in stats],
            [s.tokens for s in stats], [s.images for s in stats],
            [s.cumulative for s in stats],
        )

    def stats(self) -> list[TurnStats]:
        columns = (self.turn, self.first_row, self.messages, self.tokens, self.images,
                   self.cumulative)
        return [TurnStats(*row) for row in zip(*columns, strict=True)]


@dataclass(frozen=True, slots=True)
class PricedItems:
    """A history with its turn index and each item's estimate and dispatched images."""

    items: Sequence[ConversationMessage]
    index: TurnIndex
    costs: list[int]
    images: list[int]

    def turn_of(self) -> list[int]:
        """1-based turn of each item; 0 for the system prefix and the breadcrumb."""
        return [turn + 1 for turn in self.index.turn_of()]


def price_items(
    items: Sequence[ConversationMessage],
    crumb_present: bool,
    token_counter: TokenCounter | None = None,
    policy: Policy = SPEC,
) -> PricedItems:
    """Each item priced as the rows it expands to (a structured item's rows add up)."""
    index = index_turns(items, crumb_present=crumb_present)
    rows: list[ChatMessage] = []
    owner: list[int] = []
    for i, item in enumerate(items):
        expanded = [item] if isinstance(item, ChatMessage) else to_chat_messages([item])
        rows.extend(expanded)
        owner.extend([i] * len(expanded))
    row_index = index_turns(rows, crumb_present=crumb_present)
    row_costs = Pricing(policy, token_counter).costs(rows, row_index)
    current = row_index.current_turn_after
    costs, images = [0] * len(items), [0] * len(items)
    for r, (i, row) in enumerate(zip(owner, rows, strict=True)):
        costs[i] += row_costs[r]
        images[i] += dispatched_images(row, current_turn=r > current)
    return PricedItems(items, index, costs, images)


def turn_stats(
    history: Iterable[ConversationMessage | Mapping[str, Any]],
    *,
    crumb_present: bool = False,
    token_counter: TokenCounter | None = None,
    policy: Policy = SPEC,
) -> list[TurnStats]:
    """Messages, tokens, images and the cumulative size from the newest turn, per turn.

    Structured items are priced as the provider-facing rows they become; a `token_counter`
    prices the rows' text instead of EST-1's bytes (`histtrim.counting`)."""
    priced = price_items(conversation_rows(history), crumb_present, token_counter, policy)
    turn_of = priced.turn_of()
    turns = priced.index.turn_count
    first = [0, *(priced.index.turn_start(k) for k in range(turns))]
    messages, tokens, images = [0] * (turns + 1), [0] * (turns + 1), [0] * (turns + 1)
    for i, turn in enumerate(turn_of):
        messages[turn] += 1
        tokens[turn] += priced.costs[i]
        images[turn] += priced.images[i]
    stats: list[TurnStats] = []
    cumulative = tokens[0]
    for t in range(turns, -1, -1):
        if t > 0:
            cumulative += tokens[t]
        stats.append(TurnStats(t, first[t], messages[t], tokens[t], images[t], cumulative))
    return stats[::-1]
