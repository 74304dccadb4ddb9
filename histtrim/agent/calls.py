"""What the agent logs: each provider dispatch (`ProviderCall`) and each turn (`TurnOutcome`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from histtrim.events import HistoryTrimmed

CallKind = Literal["tool_loop", "final_summary"]
CallOutcome = Literal["reply", "tool_calls", "overflow"]


@dataclass(frozen=True)
class ProviderCall:
    """One dispatch, as the agent logged it: the estimated history (what the budget measures)
    and request (plus tool schemas: what the capacity check measures) against the budget and
    window, and the trims made since the previous dispatch."""

    turn_id: int
    iteration: int
    kind: CallKind
    history_tokens: int
    tokens: int
    budget: int
    window: int
    outcome: CallOutcome
    trims: tuple[HistoryTrimmed, ...]


@dataclass(frozen=True)
class TurnOutcome:
    """What one `Agent.turn` did."""

    turn_id: int
    reply: str
    calls: tuple[ProviderCall, ...]
    events: tuple[HistoryTrimmed, ...]
    hit_iteration_limit: bool


