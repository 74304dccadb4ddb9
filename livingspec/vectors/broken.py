"""Deliberately broken implementations: `serve --broken NAME` is histtrim with one rule
changed, to show the kit catches real mistakes. Each names the rules it breaks; a test
checks that the runner fails exactly those."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import accumulate
from typing import Any

from histtrim import trim, visible
from histtrim.agent import legacy
from histtrim.agent.runtime import UNRECOVERABLE_OVERFLOW, Agent, UnrecoverableContextOverflow
from histtrim.estimate import message_costs
from histtrim.events import HistoryTrimmed, TrimReason
from histtrim.messages import ChatMessage, chat_rows, conversation_rows
from histtrim.policy import SPEC, ColdCache, low_water_turns
from histtrim.trim import TrimResult, TurnCountTrimResult
from histtrim.turns import TurnIndex, index_turns


def _message_count(
    history: Any, max_turns: int, *, crumb_present: bool = False, target: Fraction = Fraction(1)
) -> Any:
    """Keeps the newest `max_turns` *messages* (rows), not turns (once over, the low-water
    mark's `target` of them, as the turn-count trims take it)."""
    rows = conversation_rows(history)
    index = index_turns(rows, crumb_present=crumb_present)
    limit, body = max(max_turns, 1), index.body_start
    if len(rows) - body <= limit:
        return TurnCountTrimResult(list(rows), [], 0, 0, index.turn_count, max_turns)
    cut = len(rows) - low_water_turns(max_turns, target)
    kept_turns = sum(1 for start in index.starts if start >= cut)
    dropped = list(rows[body:cut])
    return TurnCountTrimResult(
        [*rows[:body], *rows[cut:]], dropped, len(dropped), index.turn_count - kept_turns,
        kept_turns, max_turns,
    )


def _message_limit(self: Agent) -> None:
    """The agent's turn limit, counting messages (the token trim's mirror is left alone)."""
    max_turns = self.runtime.max_turns
    if self._ledger.turn_count(crumb_present=self._store.crumb) <= max(max_turns, 1):
        return
    result = _message_count(self._store.items, max_turns, crumb_present=self._store.crumb)
    before = self._ledger.total
    self._store.replace(trim.insert_breadcrumb(result.history, crumb_present=False))
    self._store.crumb = True
    self._publish(HistoryTrimmed(
        reason=TrimReason.TURN_LIMIT, dropped_messages=result.dropped_messages,
        kept_turns=result.kept_turns, tokens_before=before, tokens_after=self._ledger.total,
        budget=self.runtime.effective_context_budget(),
        counter=self._ledger.pricing.counter_name,
    ))


def _strict_fit(index: TurnIndex, sums: Sequence[int], budget: int) -> tuple[int, int]:
    """`turn_within_sums` with `<` where the rule says `<=` when it looks for the oldest
    turn to keep."""
    fixed, total = sums[index.body_start], sums[-1]
    first = 0
    while first < index.turn_count - 1 and not (
        fixed + total - sums[index.turn_start(first)] < budget
    ):
        first += 1
    return first, fixed + total - sums[index.turn_start(first)]


def _strict_trim(
    history: Any, budget_tokens: int, *, crumb_present: bool = False, **options: Any
) -> TrimResult:
    """The token trim, written from the public pieces, with `<` where the rule says `<=`
    when it looks for the oldest turn to keep."""
    rows = chat_rows(history)
    index = index_turns(rows, crumb_present=crumb_present)
    costs = message_costs(rows, index, policy=options.get("policy", SPEC))
    total = sum(costs)
    if budget_tokens == 0 or total <= budget_tokens or index.turn_count <= 1:
        return TrimResult(list(rows), [], 0, 0, index.turn_count, total, total, budget_tokens)
    sums = list(accumulate(costs, initial=0))
    fixed = sums[index.body_start]
    first = 0
    while first < index.turn_count - 1 and not (
        fixed + total - sums[index.turn_start(first)] < budget_tokens
    ):
        first += 1
    body, cut = index.body_start, index.turn_start(first)
    kept, dropped = [*rows[:body], *rows[cut:]], list(rows[body:cut])
    return TrimResult(kept, dropped, len(dropped), first, index.turn_count - first, total,
                      fixed + total - sums[cut], budget_tokens)


def _half_reactive(self: Agent, overflow: Exception) -> None:
    """The reactive retry trims to half of the estimate instead of two thirds."""
    if self._ledger.turn_count(crumb_present=self._store.crumb) <= 1:
        raise UnrecoverableContextOverflow(UNRECOVERABLE_OVERFLOW) from overflow
    self._visible_trim(budget_tokens=self._ledger.total // 2)


def _never_cold(self: ColdCache, now: float | None, last: float | None) -> bool:
    """The request times ignored: the prompt cache is never found cold."""
    return False


@dataclass(frozen=True)
class Broken:
    description: str
    breaks: dict[str, str]
    """Rule ID -> why this change breaks it."""
    patches: Callable[[], list[tuple[Any, str, Any]]]


def _carrier_opens_turn() -> list[tuple[Any, str, Any]]:
    original = ChatMessage.model_post_init

    def post_init(self: ChatMessage, context: Any, /) -> None:
        original(self, context)
        facts = self.__dict__["facts"]
        self.__dict__["facts"] = facts._replace(opens_turn=self.role == "user")

    return [(ChatMessage, "model_post_init", post_init)]


BROKEN: dict[str, Broken] = {
    "message-count-limit": Broken(
        "the turn limit counts messages, not whole turns",
        {
            "KEEP-2": "the turn-count trims keep the wrong rows",
            "KEEP-3": "a limit of 0 keeps one message, not the newest complete turn",
            "LIMIT-1": "the unit is a message, and tool rows use slots",
            "LIMIT-2": "an explicit limit keeps part of a turn",
            "SEEN-4": "the legacy path's count-based trim keeps the wrong rows",
        },
        lambda: [
            (trim, "trim_to_recent_turn_count", _message_count),
            (trim, "trim_conversation_to_recent_turns", _message_count),
            (legacy, "trim_to_recent_turn_count", _message_count),  # the legacy path's limit
            (Agent, "_apply_turn_limit", _message_limit),
        ],
    ),
    "lt-budget-fit": Broken(
        "the token trim keeps turns while the kept size is < the budget, not <=",
        {"KEEP-1": "a history that fits the budget exactly loses a turn"},
        lambda: [(trim, "trim_to_recent_turns", _strict_trim),
                 (visible, "turn_within_sums", _strict_fit)],
    ),
    "carrier-opens-turn": Broken(
        "a `[Tool results]` user row opens a new turn",
        {"TURN-3": "the carrier opens a turn"},
        _carrier_opens_turn,
    ),
    "half-reactive-target": Broken(
        "the reactive retry trims to 1/2 of the estimate, not 2/3",
        {
            "RUN-2": "the retry drops more turns than two thirds needs",
            "PAIR-4": "the trim a provider's own overflow triggers is that wrong retry",
        },
        lambda: [(Agent, "_reactive_trim", _half_reactive)],
    ),
    "cold-cache-ignored": Broken(
        "the request times are ignored: the prompt cache is never cold",
        {
            "CACHE-1": "a request more than the lifetime after the one before is not cold",
            "CACHE-2": "a cold request over budget x cut_from waits for the budget to cut",
            "CACHE-3": "no event says cold_cache",
        },
        lambda: [(ColdCache, "is_cold", _never_cold)],
    ),
}


@contextlib.contextmanager
def broken(name: str | None) -> Iterator[None]:
    """Apply one broken variant for the duration (None: histtrim as it is)."""
    if name is None:
        yield
        return
    saved = []
    for owner, attribute, value in BROKEN[name].patches():
        saved.append((owner, attribute, getattr(owner, attribute)))
        setattr(owner, attribute, value)
    try:
        yield
    finally:
        for owner, attribute, value in reversed(saved):
            setattr(owner, attribute, value)
