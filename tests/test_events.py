"""HistoryTrimmed and its delivery: client transports and observers (SEEN-2, SEEN-3)."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from histtrim import EventBus, HistoryTrimmed, TrimReason
from histtrim.events import InMemoryTransport, JsonLinesTransport, ObservedTrim

counts = st.integers(min_value=0, max_value=10**9)
events = st.builds(
    HistoryTrimmed,
    reason=st.sampled_from(TrimReason),
    dropped_messages=counts,
    kept_turns=counts,
    tokens_before=counts,
    tokens_after=counts,
    budget=counts,
)


def _event(reason: TrimReason = TrimReason.TOKEN_BUDGET) -> HistoryTrimmed:
    return HistoryTrimmed(
        reason=reason,
        dropped_messages=4,
        kept_turns=2,
        tokens_before=1200,
        tokens_after=700,
        budget=800,
    )


def test_seen_2_reason_names_the_limit() -> None:
    """SEEN-2: the reason names the token budget or the turn limit."""
    assert TrimReason.TOKEN_BUDGET.value == "token_budget"
    assert TrimReason.TOKEN_BUDGET.description == "context token budget exceeded"
    assert TrimReason.TURN_LIMIT.value == "turn_limit"
    assert TrimReason.TURN_LIMIT.description == "history turn limit exceeded"
    assert _event(TrimReason.TURN_LIMIT).description == "history turn limit exceeded"


def test_seen_2_wire_form_is_one_sorted_json_line() -> None:
    """SEEN-2: dropped messages, kept turns and the reason, in a deterministic wire form."""
    assert _event().to_json() == (
        '{"budget":800,"description":"context token budget exceeded","dropped_messages":4,'
        '"kept_turns":2,"reason":"token_budget","tokens_after":700,"tokens_before":1200,'
        '"type":"history_trimmed"}'
    )


def test_seen_3_bus_reaches_clients_and_observers() -> None:
    """SEEN-3: every client transport and every observer gets each event."""
    memory, stream, seen = InMemoryTransport(), io.StringIO(), []
    bus = EventBus([memory], [seen.append])
    bus.connect(JsonLinesTransport(stream))
    first, second = _event(), _event(TrimReason.TURN_LIMIT)
    bus.publish(first, channel="telegram", agent_alias="shop-bot", turn_id=3)
    later: list[ObservedTrim] = []
    bus.subscribe(later.append)
    observed = bus.publish(second, channel="telegram", agent_alias="shop-bot", turn_id=4)
    assert memory.events == [first, second]
    assert memory.wire() == [first.to_wire(), second.to_wire()]
    assert [json.loads(line) for line in stream.getvalue().splitlines()] == memory.wire()
    assert [(o.event, o.channel, o.agent_alias, o.turn_id) for o in seen] == [
        (first, "telegram", "shop-bot", 3),
        (second, "telegram", "shop-bot", 4),
    ]
    assert later == seen[1:] == [observed]


def test_event_validation_names_the_field() -> None:
    with pytest.raises(ValidationError, match="dropped_messages"):
        HistoryTrimmed(
            reason=TrimReason.TURN_LIMIT,
            dropped_messages=-1,
            kept_turns=1,
            tokens_before=0,
            tokens_after=0,
            budget=0,
        )
    with pytest.raises(ValidationError, match="reason"):
        HistoryTrimmed.model_validate(
            {
                "reason": "tired",
                "dropped_messages": 1,
                "kept_turns": 1,
                "tokens_before": 0,
                "tokens_after": 0,
                "budget": 0,
            }
        )


def test_observer_needs_where_it_happened() -> None:
    with pytest.raises(ValidationError, match="turn_id"):
        ObservedTrim(event=_event(), channel="cli", agent_alias="a", turn_id=-1)


@given(events)
def test_wire_form_round_trips(event: HistoryTrimmed) -> None:
    wire = json.loads(event.to_json())
    assert list(wire) == sorted(wire)
    assert wire["description"] == event.reason.description
    del wire["description"]
    assert HistoryTrimmed.model_validate(wire) == event


@given(st.lists(events, max_size=5))
def test_json_lines_writes_one_line_per_event(batch: list[HistoryTrimmed]) -> None:
    stream = io.StringIO()
    bus = EventBus([JsonLinesTransport(stream)])
    for number, event in enumerate(batch, start=1):
        bus.publish(event, channel="cli", agent_alias="agent", turn_id=number)
    lines = stream.getvalue().splitlines()
    assert lines == [event.to_json() for event in batch]
