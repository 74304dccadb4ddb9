"""The agent's provider dispatch: the capacity check before it (CAP-2..4) and its entry in
the call log (`calls.py`), with the trims made since the previous dispatch. `Agent` inherits
it; its turn loop (`runtime.py`) builds the requests."""

from __future__ import annotations

from collections.abc import Sequence

from histtrim.agent.calls import CallKind, CallOutcome, ProviderCall
from histtrim.agent.ledger import TokenLedger
from histtrim.agent.providers import ContextOverflowError, Provider, ProviderReply, checked_reply
from histtrim.capacity import check_request
from histtrim.estimate import ToolSchema
from histtrim.events import HistoryTrimmed
from histtrim.messages import ChatMessage
from histtrim.route import ResolvedRuntime


class AgentDispatch:
    """Sends one request to the provider and logs it as a `ProviderCall`.

    The attributes below are the agent's (set by `Agent.__init__`)."""

    provider: Provider
    runtime: ResolvedRuntime
    turn_id: int
    calls: list[ProviderCall]
    _ledger: TokenLedger
    _pending: list[HistoryTrimmed]
    """Events not yet attached to a logged provider call."""

    def _dispatch(
        self,
        request: list[ChatMessage],
        schemas: Sequence[ToolSchema],
        tokens: tuple[int, int],
        iteration: int,
        kind: CallKind,
    ) -> ProviderReply:
        """Dispatch a request whose estimates are `tokens`: (history, history + schemas).

        Those are the capacity check's total (CAP-2): only a request over the window needs the
        full breakdown, which `check_request` computes and raises with."""
        if tokens[1] > self.runtime.context_window:
            counter = self._ledger.token_counter
            check_request(
                request, runtime=self.runtime, tool_schemas=schemas, token_counter=counter
            )
        trims, self._pending = tuple(self._pending), []
        try:
            answer = self.provider.complete(request, schemas)
        except ContextOverflowError:
            self._log_call(iteration, kind, tokens, "overflow", trims)
            raise
        answer = checked_reply(self.provider, answer)
        self._log_call(
            iteration, kind, tokens, "tool_calls" if answer.tool_calls else "reply", trims
        )
        return answer

    def _log_call(
        self,
        iteration: int,
        kind: CallKind,
        tokens: tuple[int, int],
        outcome: CallOutcome,
        trims: tuple[HistoryTrimmed, ...],
    ) -> None:
        runtime = self.runtime
        self.calls.append(
            ProviderCall(
                self.turn_id,
                iteration,
                kind,
                *tokens,
                runtime.effective_context_budget(),
                runtime.context_window,
                outcome,
                trims,
            )
        )
