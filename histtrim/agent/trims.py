"""The agent's trimming steps: the turn limit (LIMIT-1..2), the proactive and reactive token
trims (RUN-1..3), and how each drop becomes visible (SEEN-1..3). `Agent` inherits them; its
turn loop (`runtime.py`) decides when each runs."""

from __future__ import annotations

from histtrim.agent.history import AgentHistory
from histtrim.agent.ledger import TokenLedger
from histtrim.agent.providers import ContextOverflowError
from histtrim.events import EventBus, HistoryTrimmed
from histtrim.policy import Policy
from histtrim.route import ResolvedRuntime
from histtrim.visible import trim_structured

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
        max_turns = self.runtime.max_turns
        if self._ledger.turn_count(crumb_present=self._store.crumb) <= max(max_turns, 1):
            return
        budget = self.runtime.effective_context_budget()
        self._visible_trim(max_turns=max_turns, budget_in_force=budget)

    def _proactive_trim(self) -> None:
        """Before a dispatch, when the history is over a positive budget (RUN-1): an O(1)
        check on the ledger; only a needed trim looks at the rows."""
        budget = self.runtime.effective_context_budget()
        if self._ledger.needs_trim(budget, crumb_present=self._store.crumb):
            self._visible_trim(budget_tokens=budget)

    def _reactive_trim(self, overflow: ContextOverflowError) -> None:
        """After a provider overflow: trim to two thirds of the estimate (the policy's
        `reactive_target`), then retry (RUN-2).

        The request that overflowed is the ledger's rows: nothing changed since it was built."""
        if self._ledger.turn_count(crumb_present=self._store.crumb) <= 1:
            raise UnrecoverableContextOverflow(UNRECOVERABLE_OVERFLOW) from overflow
        self._visible_trim(budget_tokens=self.policy.reactive_tokens(self._ledger.total))

    def _visible_trim(
        self, *, max_turns: int | None = None, budget_tokens: int | None = None,
        budget_in_force: int = 0,
    ) -> None:
        """The visible trim (`trim_structured`) of the structured history, planned on the
        ledger's rows (RUN-3, SEEN-1): the breadcrumb comes back after the system rows and
        the event goes to the client transports and the observers (SEEN-2..3)."""
        trim = trim_structured(
            self._store.items, self._ledger, max_turns=max_turns, budget_tokens=budget_tokens,
            budget_in_force=budget_in_force, crumb_present=self._store.crumb,
            pricing=self._ledger.pricing,
        )
        if trim.event is None:
            return
        self._store.replace(trim.history)
        self._store.crumb = True
        self._publish(trim.event)

    def _publish(self, event: HistoryTrimmed) -> None:
        """One drop, one event (SEEN-2..3): to the client transports and the observers."""
        self.events.append(event)
        self._pending.append(event)
        self.bus.publish(event, channel=self.channel, agent_alias=self.alias, turn_id=self.turn_id)
