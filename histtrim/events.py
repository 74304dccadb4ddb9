"""SEEN-2..3, CACHE-3: `HistoryTrimmed` and where it goes: the observer bus used by dashboards
and event subscribers, and client transports (in memory, or JSON Lines on a stream)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import Any, Literal, Protocol, TextIO

from pydantic import (
    ConfigDict,
    Field,
    NonNegativeInt,
    StrictStr,
)

from histtrim._unset import HidesUnset, unset_by_default


class TrimReason(StrEnum):
    """Why the turns were dropped: a limit (SEEN-2), or the provider's overflow (RUN-2)."""

    TOKEN_BUDGET = "token_budget"
    TURN_LIMIT = "turn_limit"
    CONTEXT_OVERFLOW = "context_overflow"
    """RUN-2: the provider reported an overflow and the history was trimmed to two thirds."""

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    TrimReason.TOKEN_BUDGET: "context token budget exceeded",
    TrimReason.TURN_LIMIT: "history turn limit exceeded",
    TrimReason.CONTEXT_OVERFLOW: "provider reported a context overflow",
}


class _Frozen(HidesUnset):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HistoryTrimmed(_Frozen):
    """Older turns were dropped: how many rows, how many turns remain, and why.

    `budget` has one meaning whoever trims (the agent, the CLI, an adapter): the effective
    token budget in force when the trim ran. For a token trim it is the target the trim
    applied (a `context_overflow` trim's is two thirds of the estimate, RUN-2); for a
    turn-limit trim it is the budget configured beside the limit, and 0 when none is
    (`histtrim trim --max-turns` alone) or proactive trimming is off. The token figures are
    estimates of the provider-facing history."""

    type: Literal["history_trimmed"] = "history_trimmed"
    reason: TrimReason
    dropped_messages: NonNegativeInt
    kept_turns: NonNegativeInt
    tokens_before: NonNegativeInt
    tokens_after: NonNegativeInt
    budget: NonNegativeInt
    counter: StrictStr | None = unset_by_default()
    """The `token_counter` the token figures come from; "reported_usage": the provider's own
    units, calibrated from its reported input tokens (USAGE-6); None (then left out of every
    dump and of the wire form): the spec's estimate (EST-1)."""
    target: StrictStr | None = unset_by_default()
    """The low-water mark the trim applied when it is not the spec's 1 (`Policy`'s
    `token_trim_target` or `turn_trim_target`, as text: "7/10"); None (then left out of every
    dump and of the wire form): the spec, trim just to fit."""

    cold_cache: bool | None = unset_by_default()
    """CACHE-3: True when the cut was made because the prompt cache was cold (the gap since
    the last request exceeded the policy's `cold_cache.lifetime`, CACHE-2); None (then left
    out of every dump and of the wire form): not a cold-cache cut."""
    hidden_prefix: NonNegativeInt | None = unset_by_default()
    """USAGE-8: the provider tokens of the request the rows do not show (system prompt, tool
    schemas) that a calibrated reported-usage trim used; None (then left out of every dump):
    the reference's single ratio."""
    ratio: StrictStr | None = unset_by_default()
    """USAGE-8: the provider tokens per estimated token of the rows that trim used, as text
    ("29/20"); None (then left out of every dump): the single ratio."""

    @property
    def description(self) -> str:
        return self.reason.description

    def after_overflow(self) -> HistoryTrimmed:
        """This token trim as the reactive recovery's event (RUN-2): the same figures, the
        reason the overflow that caused it, so it never reads like a budget trim."""
        return self.model_copy(update={"reason": TrimReason.CONTEXT_OVERFLOW})

    def to_wire(self) -> dict[str, Any]:
        """The client wire form: plain JSON values, the reason's text included."""
        return {**self.model_dump(mode="json"), "description": self.description}

    def to_json(self) -> str:
        """One compact JSON line with sorted keys (deterministic)."""
        return json.dumps(self.to_wire(), sort_keys=True, separators=(",", ":"))


class ObservedTrim(_Frozen):
    """What an observer receives: the event and where it happened."""

    event: HistoryTrimmed
    channel: StrictStr
    agent_alias: StrictStr
    turn_id: NonNegativeInt = Field(description="the agent's turn counter, from 1")


Observer = Callable[[ObservedTrim], object]


class ClientTransport(Protocol):
    """The active client connection: receives each event in its wire form."""

    def send(self, event: HistoryTrimmed) -> None: ...


class InMemoryTransport:
    """Keeps what a client would have received, in order."""

    def __init__(self) -> None:
        self.events: list[HistoryTrimmed] = []

    def send(self, event: HistoryTrimmed) -> None:
        self.events.append(event)

    def wire(self) -> list[dict[str, Any]]:
        return [event.to_wire() for event in self.events]


class JsonLinesTransport:
    """Writes each event as one JSON line to a text stream."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def send(self, event: HistoryTrimmed) -> None:
        self.stream.write(event.to_json() + "\n")
        self.stream.flush()


LOGGER = "histtrim.events"


class EventBus:
    """Fans each event out to every connected client transport and every observer.

    Each delivery is isolated (SEEN-3: every client gets the event): a transport or observer
    that raises is logged on the `histtrim.events` logger and the others still receive it."""

    def __init__(
        self, transports: Iterable[ClientTransport] = (), observers: Iterable[Observer] = ()
    ) -> None:
        self.transports: list[ClientTransport] = list(transports)
        self.observers: list[Observer] = list(observers)

    def connect(self, transport: ClientTransport) -> None:
        self.transports.append(transport)

    def subscribe(self, observer: Observer) -> None:
        self.observers.append(observer)

    def publish(
        self, event: HistoryTrimmed, *, channel: str, agent_alias: str, turn_id: int
    ) -> ObservedTrim:
        """Deliver one event; returns what the observers received."""
        observed = ObservedTrim(
            event=event, channel=channel, agent_alias=agent_alias, turn_id=turn_id
        )
        for transport in list(self.transports):
            _deliver(transport.send, event, transport)
        for observer in list(self.observers):
            _deliver(observer, observed, observer)
        return observed


def _deliver(send: Callable[[Any], object], payload: object, target: object) -> None:
    try:
        send(payload)
    except Exception:
        logging.getLogger(LOGGER).exception("histtrim: delivering an event to %r failed", target)
