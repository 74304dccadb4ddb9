"""`HistoryTrimmed` and where it goes (SEEN-2..3): the observer bus used by dashboards and
event subscribers, and client transports (in memory, or JSON Lines on a stream)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from enum import StrEnum
from typing import Any, Literal, Protocol, TextIO

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    SerializerFunctionWrapHandler,
    StrictStr,
    model_serializer,
)


class TrimReason(StrEnum):
    """Which limit dropped the turns."""

    TOKEN_BUDGET = "token_budget"
    TURN_LIMIT = "turn_limit"

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    TrimReason.TOKEN_BUDGET: "context token budget exceeded",
    TrimReason.TURN_LIMIT: "history turn limit exceeded",
}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HistoryTrimmed(_Frozen):
    """Older turns were dropped: how many rows, how many turns remain, and why.

    `budget` is the token target the trim applied (for the turn limit: the effective
    budget in force); the token figures are estimates of the provider-facing history."""

    type: Literal["history_trimmed"] = "history_trimmed"
    reason: TrimReason
    dropped_messages: NonNegativeInt
    kept_turns: NonNegativeInt
    tokens_before: NonNegativeInt
    tokens_after: NonNegativeInt
    budget: NonNegativeInt
    counter: StrictStr | None = None
    """The `token_counter` the token figures come from; None (then left out of every dump and
    of the wire form): the spec's estimate (EST-1)."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.counter is None:
            data.pop("counter", None)
        return data

    @property
    def description(self) -> str:
        return self.reason.description

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        """The fields, `counter` only when set (a trim by the spec's estimate reads as before)."""
        for name, value in super().__repr_args__():
            if name != "counter" or value is not None:
                yield name, value

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


class EventBus:
    """Fans each event out to every connected client transport and every observer."""

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
        for transport in self.transports:
            transport.send(event)
        for observer in self.observers:
            observer(observed)
        return observed
