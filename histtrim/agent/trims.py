"""The agent's trimming steps: the turn limit (LIMIT-1..2), the proactive and reactive token
trims (RUN-1..3), and how each drop becomes visible (SEEN-1..3). `Agent` inherits them; its
turn loop (`runtime.py`) decides when each runs."""

from __future__ import annotations

from fractions import Fraction

from histtrim.agent.history import AgentHistory
from histtrim.agent.ledger import TokenLedger
from histtrim.agent.providers import ContextOverflowError
from histtrim.counting import counter_name
from histtrim.events import EventBus, HistoryTrimmed, TrimReason
from histtrim.policy import Policy, low_water_tokens
from histtrim.route import ResolvedRuntime
from histtrim.trim import (
    TrimResult,
    insert_breadcrumb,
    trim_conversation_to_recent_turns,
    trim_to_recent_turns,
)

UNRECOVERABLE_OVERFLOW = "context overflow unrecoverable: only one turn left, cannot trim further"


class UnrecoverableContextOverflow(RuntimeError):
    """The provider overflowed and no older turn is left to drop (RUN-2)."""


class AgentTrims:
    """Trims the agent's structured history and its ledger together, always by whole turns,
    re-inserting the breadcrumb and emitting one `HistoryTrimmed` per drop.

    The attributes below are the agent's (set by `Agent.__init__`)."""

    runtime: ResolvedRuntime
    policy: Policy
    bus: EventBus
    channel: str
    alias: str
    turn_id: int
    events: list[HistoryTrimmed]
    _store: AgentHistory
    _ledger: TokenLedger
    _pending: list[HistoryTrimmed]
    """Events not yet attached to a logged provider call."""

    def _apply_turn_limit(self) -> None:
        """Whole-turn limit on the structured history (LIMIT-1..2), after each user message.

        The ledger counts the turns (O(1)); only an excess runs the trim."""
        max_turns = self.runtime.max_history_turns
        if self._ledger.turn_count(crumb_present=self._store.crumb) <= max(max_turns, 1):
            return
        target = self.policy.turn_trim_target
        result = trim_conversation_to_recent_turns(
            self._store.items, max_turns, has_leading_breadcrumb=self._store.crumb, target=target
        )
        before = self._ledger.total
        self._store.replace(insert_breadcrumb(result.history, crumb_present=False))
        self._store.crumb = True
        self._emit(
            TrimReason.TURN_LIMIT,
            result.dropped_messages,
            result.kept_turns,
            before,
            self.runtime.effective_context_budget(),
            target,
        )

    def _proactive_trim(self) -> None:
        """Before a dispatch, when the history is over a positive budget (RUN-1): an O(1)
        check on the ledger; only a needed trim looks at the rows. The trim fits the policy's
        low-water mark (`token_trim_target`; the spec's is 1: just under the budget)."""
        budget = self.runtime.effective_context_budget()
        if self._ledger.needs_trim(budget, crumb_present=self._store.crumb):
            self._token_trim(budget, self.policy.token_trim_target)

    def _reactive_trim(self, overflow: ContextOverflowError) -> None:
        """After a provider overflow: trim to two thirds of the estimate (the policy's
        `reactive_target`), then retry (RUN-2).

        The request that overflowed is the ledger's rows: nothing changed since it was built."""
        if self._ledger.turn_count(crumb_present=self._store.crumb) <= 1:
            raise UnrecoverableContextOverflow(UNRECOVERABLE_OVERFLOW) from overflow
        self._token_trim(self.policy.reactive_tokens(self._ledger.total))

    def _token_trim(self, budget: int, low_water: Fraction = Fraction(1)) -> None:
        """Whole-turn token trim of the working history (RUN-3), mirrored on the structured one:
        once over `budget`, fit `budget * low_water`.

        A first drop trims the history as it will be sent, with the breadcrumb already in."""
        working = self._ledger
        counter = working.token_counter
        result: TrimResult = trim_to_recent_turns(
            working, budget, crumb_present=self._store.crumb, token_counter=counter,
            policy=self.policy, target=low_water,
        )
        if not result.trimmed:
            return
        if not self._store.crumb:
            with_crumb = insert_breadcrumb(working, crumb_present=False)
            result = trim_to_recent_turns(
                with_crumb, budget, crumb_present=True, token_counter=counter, policy=self.policy,
                target=low_water,
            )
        before = working.total
        structured = trim_conversation_to_recent_turns(
            self._store.items, result.kept_turns, has_leading_breadcrumb=self._store.crumb
        )
        if structured.dropped_turns != result.dropped_turns:
            raise AssertionError("the structured and working histories disagree about turns")
        self._store.replace(insert_breadcrumb(structured.history, crumb_present=False))
        self._store.crumb = True
        self._emit(
            TrimReason.TOKEN_BUDGET, result.dropped_messages, result.kept_turns, before,
            low_water_tokens(budget, low_water), low_water,
        )

    def _emit(
        self, reason: TrimReason, dropped: int, kept_turns: int, before: int, budget: int,
        low_water: Fraction = Fraction(1),
    ) -> None:
        """One drop, one event (SEEN-2..3): to the client transports and the observers. The
        event names a low-water mark only when it is not the spec's 1."""
        counter = self._ledger.token_counter
        event = HistoryTrimmed(
            reason=reason,
            dropped_messages=dropped,
            kept_turns=kept_turns,
            tokens_before=before,
            tokens_after=self._ledger.total,
            budget=budget,
            counter=None if counter is None else counter_name(counter),
            target=None if low_water == 1 else str(low_water),
        )
        self.events.append(event)
        self._pending.append(event)
        self.bus.publish(event, channel=self.channel, agent_alias=self.alias, turn_id=self.turn_id)
