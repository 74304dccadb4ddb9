"""EST-1, EST-4: bring your own token counter: a row's text priced by a callable instead of
EST-1's bytes.

With a `token_counter`, a row costs

    token_counter(row) + frame tokens + image tokens x (its dispatched images)

The counter replaces only `ceil(utf8_bytes / 4)`, the text part of EST-1; the four framing
tokens and the image price, with the spec's rule for which images are dispatched (EST-2, EST-3),
stay as the spec's estimate says. The counter sees the whole provider-facing row and is called
once per row, whatever the row's position, its result cached on the row like the row facts:
a history re-priced at every provider-call boundary costs no second call. Hooks and tool
schemas are not rows: they stay priced by the spec's estimate.

The spec's estimate stays the default everywhere; a trim or event made with a counter names it
(`counter`), so no one mistakes its figures for EST-1's. `Pricing` is the one value every
estimate, trim and check prices rows with: the policy's constants and the optional counter."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Any

from histtrim.estimate import dispatched_images, message_cost, message_costs, plain_cost
from histtrim.messages import ChatMessage
from histtrim.policy import SPEC, Policy
from histtrim.turns import TurnIndex, index_turns

TokenCounter = Callable[[ChatMessage], int]
"""A callable from a provider-facing row to the tokens of its text (no framing, no images)."""

_CACHE = "_counted_tokens"
"""The key of the per-row cache in the row's `__dict__` (beside the row facts)."""


class _Counts(dict[Any, int]):
    """One row's counts, per counter. Made for one (role, content): a copy of the row with other
    content (`model_copy(update=...)`) gets its own. A cache, so never pickled or deep-copied."""

    __slots__ = ("content", "role")

    def __init__(self, role: str, content: str) -> None:
        super().__init__()
        self.role = role
        self.content = content

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Counts, ("", ""))  # matches no row: recounted after a pickle or deep copy


def counter_name(counter: TokenCounter) -> str:
    """What a result or event says the figures were counted with: the counter's `name`
    attribute when it has one (e.g. `exact_counter`'s "o200k_base"), else its `__name__` (a
    function's), else its class name."""
    name = getattr(counter, "name", None)
    if isinstance(name, str) and name:
        return name
    return str(getattr(counter, "__name__", type(counter).__name__))


def counted_tokens(row: ChatMessage, counter: TokenCounter) -> int:
    """`counter(row)`, called once per row and counter, checked: an int >= 0 (a bool is not).

    A counter that raises, or returns anything else, leaves nothing cached."""
    counts = row.__dict__.get(_CACHE)
    if counts is None or counts.content is not row.content or counts.role != row.role:
        counts = _Counts(row.role, row.content)
        row.__dict__[_CACHE] = counts
    tokens = counts.get(counter)
    if tokens is None:
        tokens = counter(row)
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise ValueError(
                f"token_counter {counter_name(counter)!r} must return an integer >= 0 for a "
                f"row, got {tokens!r} for a {row.role} row"
            )
        counts[counter] = tokens
    return tokens


def counted_plain_cost(row: ChatMessage, counter: TokenCounter, *, policy: Policy = SPEC) -> int:
    """A row with no dispatched image: the counter's tokens plus the framing tokens."""
    return counted_tokens(row, counter) + policy.frame_tokens


def counted_cost(
    row: ChatMessage, counter: TokenCounter, *, current_turn: bool, policy: Policy = SPEC
) -> int:
    """One row's price with a counter; `current_turn` is whether it follows the last real user
    row (it decides which tool results dispatch their declared images, EST-2/EST-3)."""
    return counted_plain_cost(row, counter, policy=policy) + policy.image_tokens * (
        dispatched_images(row, current_turn=current_turn)
    )


def counted_costs(
    history: Sequence[ChatMessage],
    counter: TokenCounter,
    index: TurnIndex | None = None,
    *,
    policy: Policy = SPEC,
) -> list[int]:
    """Every row's price with a counter, in one pass: `message_costs` with the text part counted.

    Only the rows the row facts flag can carry dispatched images: user rows with markers, and
    the current turn's tool results and carriers that declare attachments."""
    if index is None:
        index = index_turns(history)
    facts = index.facts
    frame, image = policy.frame_tokens, policy.image_tokens
    costs = [counted_tokens(row, counter) + frame for row in history]
    for i in compress(range(len(facts)), [f.image_markers for f in facts]):
        costs[i] += image * dispatched_images(history[i], current_turn=False)
    current = index.current_turn_after
    declared = [f.declares_attachments for f in facts[current + 1 :]]
    for i in compress(range(current + 1, len(history)), declared):
        costs[i] += image * dispatched_images(history[i], current_turn=True)
    return costs


@dataclass(frozen=True)
class Pricing:
    """How rows are priced: the policy's constants (EST-1..4) and, optionally, a token counter
    for the rows' text. Every trim, estimate and check takes its prices from one of these; the
    public functions build it from their `policy=` and `token_counter=` arguments."""

    policy: Policy = SPEC
    counter: TokenCounter | None = None

    @property
    def counter_name(self) -> str | None:
        """What results and events name the figures' counter; None: the spec's estimate."""
        return None if self.counter is None else counter_name(self.counter)

    def costs(self, rows: Sequence[ChatMessage], index: TurnIndex | None = None) -> list[int]:
        """Every row's price, in one pass (`message_costs`, or `counted_costs`)."""
        if self.counter is None:
            return message_costs(rows, index, policy=self.policy)
        return counted_costs(rows, self.counter, index, policy=self.policy)

    def total(self, rows: Sequence[ChatMessage]) -> int:
        """The rows' estimate (`estimate_history_tokens`, or counted)."""
        return sum(self.costs(rows))

    def cost(self, row: ChatMessage, *, current_turn: bool) -> int:
        """One row's price; `current_turn`: it follows the last real user row (EST-2..3)."""
        if self.counter is None:
            return message_cost(row, current_turn=current_turn, policy=self.policy)
        return counted_cost(row, self.counter, current_turn=current_turn, policy=self.policy)

    def plain(self, row: ChatMessage) -> int:
        """A row with no dispatched image: its text plus the framing tokens."""
        if self.counter is None:
            return plain_cost(row, policy=self.policy)
        return counted_plain_cost(row, self.counter, policy=self.policy)

    def parts(self, count: int) -> int:
        """What `count` loadable parts cost that a row's text does not carry (a model's own
        images and files, `carriers.part_target`): one image's fixed price each (EST-2)."""
        return self.policy.image_tokens * count

    def both(self, row: ChatMessage, parts: int = 0) -> tuple[int, int]:
        """One row's price as an older row and as a row of the current turn (EST-2, EST-3:
        they differ only for a tool result declaring images), `parts` added to both."""
        extra = self.parts(parts) if parts else 0
        older = self.cost(row, current_turn=False) + extra
        if not row.facts.declares_attachments:
            return older, older
        return older, self.cost(row, current_turn=True) + extra


ESTIMATE = Pricing()
"""The spec's estimate with the spec's constants: no counter, `SPEC`."""
