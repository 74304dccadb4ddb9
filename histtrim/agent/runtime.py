"""The agent (`Agent`): its state, the turn loop with its tool iterations and final summary,
all-or-nothing turns and restoring a session (PAIR-2). The trims it runs (RUN-1..3,
LIMIT-1..2, SEEN-1..3) live in `agent_trims.py`, the capacity-checked dispatch (CAP-2..4) in
`agent_dispatch.py`, tools in `tools.py`, the call log in `calls.py`, the legacy path (SEEN-4)
in `legacy.py`; their public names are re-exported here."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError

from histtrim.agent.calls import CallKind, CallOutcome, ProviderCall, TurnOutcome
from histtrim.agent.dispatch import AgentDispatch
from histtrim.agent.history import AgentHistory
from histtrim.agent.legacy import (
    FINAL_SUMMARY_PROMPT,
    LEGACY_LOGGER,
    LEGACY_TRIM_LOG,
    LegacyRunResult,
    legacy_run,
)
from histtrim.agent.providers import ContextOverflowError, Provider, ProviderReply
from histtrim.agent.tools import Tool, _Toolbox
from histtrim.agent.trims import UNRECOVERABLE_OVERFLOW, AgentTrims, UnrecoverableContextOverflow
from histtrim.counting import TokenCounter
from histtrim.events import EventBus, HistoryTrimmed
from histtrim.messages import AssistantToolCalls, ChatMessage, ConversationMessage, ToolResults
from histtrim.pairing import SweepResult, sweep_orphans, validate_tool_pairing
from histtrim.policy import Policy
from histtrim.route import ResolvedRuntime

__all__ = [
    "FINAL_SUMMARY_PROMPT",
    "LEGACY_LOGGER",
    "LEGACY_TRIM_LOG",
    "UNRECOVERABLE_OVERFLOW",
    "Agent",
    "CallKind",
    "CallOutcome",
    "LegacyRunResult",
    "ProviderCall",
    "Tool",
    "TurnOutcome",
    "UnrecoverableContextOverflow",
    "legacy_run",
]

class Agent(AgentTrims, AgentDispatch):
    """A structured agent: `history` holds `ConversationMessage` items (TURN-1); every
    provider request is built from it with the system prompt in front.

    The provider-facing rows live in a `TokenLedger`, kept in step with the structured
    history: each item is converted and priced once, when recorded, so the check at every
    provider-call boundary is O(1) and recording k items O(k) (RUN-1); only a real trim
    (or a restore) rebuilds the rows, in one pass.

    The breadcrumb lives in the structured history right after its system rows; whether it
    is there is the agent's own flag (`crumb_present`), never inferred from text.

    A turn is all or nothing: when an exception escapes `turn` (a provider error, a
    non-reply, an interrupt), the history, ledger, breadcrumb flag, `turn_id`, `events` and
    `calls` are exactly as before the call, and the exception carries a note saying so
    (events already delivered to clients are not recalled). A tool's failure never escapes:
    it becomes an error result for the model.

    Threading contract: `turn`, `restore` and setting `system_prompt` may be called from any
    thread; they hold the agent's lock, so turns run one at a time, each whole. Calling
    `turn` from inside a turn (e.g. from a tool) raises `RuntimeError`."""

    def __init__(
        self,
        provider: Provider,
        runtime: ResolvedRuntime,
        *,
        system_prompt: str | None = None,
        tools: Iterable[Tool | Callable[..., object]] = (),
        bus: EventBus | None = None,
        channel: str = "cli",
        alias: str = "agent",
        token_counter: TokenCounter | None = None,
        policy: Policy | None = None,
    ) -> None:
        """`token_counter` prices the rows' text instead of EST-1's bytes in the ledger, the
        trims and the capacity check (`histtrim.counting`); None keeps the spec's estimate."""
        if not callable(getattr(provider, "complete", None)):
            raise TypeError(
                "provider: expected an object with a complete(messages, tool_schemas) method, "
                f"got {type(provider).__name__}"
            )
        if bus is not None and not isinstance(bus, EventBus):
            raise TypeError(f"bus: expected an EventBus or None, got {type(bus).__name__}")
        self._lock = threading.RLock()
        self._turning = False
        self.provider = provider
        if not isinstance(runtime, ResolvedRuntime):
            raise TypeError(f"runtime: expected a ResolvedRuntime, got {type(runtime).__name__}")
        self.policy = runtime.policy if policy is None else policy
        """The constants of every estimate and limit (the spec's; fixed for the agent's life)."""
        if runtime.policy != self.policy:
            runtime = runtime.model_copy(update={"policy": self.policy})
        self.runtime = runtime
        """The active route's resolved pair; replace it to switch routes (ROUTE-2)."""
        self.toolbox = _Toolbox(tools, self.policy)
        self.bus = bus if bus is not None else EventBus()
        self.channel = _name("channel", channel)
        self.alias = _name("alias", alias)
        self.turn_id = 0
        self.calls: list[ProviderCall] = []
        self.events: list[HistoryTrimmed] = []
        self._store = AgentHistory(token_counter=token_counter, policy=self.policy)
        self._ledger = self._store.ledger
        self._pending: list[HistoryTrimmed] = []
        self.system_prompt = system_prompt

    @property
    def runtime(self) -> ResolvedRuntime:
        """The active route's resolved pair; replace it to switch routes (ROUTE-2)."""
        return self._runtime

    @runtime.setter
    def runtime(self, runtime: ResolvedRuntime) -> None:
        if not isinstance(runtime, ResolvedRuntime):
            raise TypeError(f"runtime: expected a ResolvedRuntime, got {type(runtime).__name__}")
        self._runtime = runtime

    @property
    def system_prompt(self) -> str | None:
        return self._system_prompt

    @system_prompt.setter
    def system_prompt(self, text: str | None) -> None:
        """The system row in front of every request; replacing it rebuilds the rows."""
        if text is not None and not isinstance(text, str):
            raise TypeError(f"system_prompt: expected a str or None, got {type(text).__name__}")
        try:
            head = () if text is None else (ChatMessage.system(text),)
        except ValidationError as error:
            raise ValueError(f"system_prompt: {error.errors()[0]['msg']}") from None
        with self._lock:
            self._system_prompt = text
            self._store.set_head(head)

    @property
    def token_counter(self) -> TokenCounter | None:
        """The counter pricing the rows' text (fixed at construction); None: EST-1."""
        return self._ledger.token_counter

    @property
    def history(self) -> list[ConversationMessage]:
        """A copy of the structured history."""
        return list(self._store.items)

    @property
    def crumb_present(self) -> bool:
        return self._store.crumb

    def working_history(self) -> list[ChatMessage]:
        """The provider-facing rows (a copy): the system prompt, then the structured history
        converted."""
        return list(self._ledger)

    def restore(
        self,
        history: Iterable[ConversationMessage | Mapping[str, Any]],
        *,
        crumb_present: bool = False,
    ) -> SweepResult[ConversationMessage]:
        """Load a saved session, after the orphan sweep (PAIR-2); returns what it removed."""
        swept = sweep_orphans(history, crumb_present=crumb_present)  # checks the crumb flag
        broken = [p for p in validate_tool_pairing(swept.history) if p.is_error]
        if broken:  # a provider would reject every request: refuse the session, state unchanged
            raise ValueError(f"history: tool pairing still broken after the sweep: {broken[0]}")
        with self._lock:
            self._store.replace(list(swept.history))
            self._store.crumb = crumb_present
        return swept

    def turn(self, text: str) -> TurnOutcome:
        """One user turn: record it, apply the turn limit, then run the tool loop with
        proactive and reactive trimming and a capacity check before every dispatch.

        All or nothing: an exception that escapes leaves the agent as it was (see the class)."""
        if self.runtime.policy != self.policy:
            raise ValueError("runtime.policy: a new route must be resolved with the agent's policy")
        with self._lock, self._rollback_on_error():
            return self._turn(text)

    @contextmanager
    def _rollback_on_error(self) -> Iterator[None]:
        if self._turning:
            raise RuntimeError("Agent.turn called from inside a turn of the same agent")
        checkpoint = self._store.checkpoint()
        saved = (self.turn_id, len(self.calls), len(self.events), self._pending)
        self._turning = True
        try:
            yield
        except BaseException as error:
            self._store.rollback(checkpoint)
            self.turn_id, calls, events, self._pending = saved
            del self.calls[calls:], self.events[events:]
            error.add_note(
                f"histtrim: turn {self.turn_id + 1} was rolled back: the agent's history, "
                "ledger, turn_id, events and calls are as before the call"
            )
            raise
        finally:
            self._turning = False

    def _turn(self, text: str) -> TurnOutcome:
        self.turn_id += 1
        first_call, first_event = len(self.calls), len(self.events)
        self._store.record(ChatMessage.user(text))
        self._apply_turn_limit()
        limit = self.runtime.profile.max_tool_iterations
        toolbox = self.toolbox
        reply: str | None = None
        hit_limit = False
        for iteration in range(1, limit + 1):
            self._proactive_trim()
            request = self.working_history()
            history = self._ledger.total
            tokens = (history, history + toolbox.schema_tokens)
            try:
                answer = self._dispatch(request, toolbox.schemas, tokens, iteration, "tool_loop")
            except ContextOverflowError as overflow:
                if iteration == limit:
                    raise  # no tool iteration is left for a retry
                self._reactive_trim(overflow)
                continue
            if not answer.tool_calls:
                reply = answer.text or ""
                break
            self._record_tool_round(answer)
        if reply is None:
            hit_limit = True
            reply = self._final_summary(limit + 1)
        self._store.record(ChatMessage.assistant(reply))
        return TurnOutcome(
            self.turn_id,
            reply,
            tuple(self.calls[first_call:]),
            tuple(self.events[first_event:]),
            hit_limit,
        )

    def _record_tool_round(self, answer: ProviderReply) -> None:
        max_chars = self.runtime.max_tool_result_chars
        self._store.record(AssistantToolCalls(text=answer.text, tool_calls=answer.tool_calls))
        results = tuple(self.toolbox.run(call, max_chars) for call in answer.tool_calls)
        self._store.record(ToolResults(results=results))

    def _final_summary(self, iteration: int) -> str:
        """After `max_tool_iterations`: one more request, no tools, capacity-checked (CAP-4).

        Its extra system row is priced on top of the ledger (a system row never changes the
        price of the rows before it)."""
        self._proactive_trim()
        prompt = ChatMessage.system(FINAL_SUMMARY_PROMPT)
        history = self._ledger.total + self._ledger.pricing.total([prompt])
        request = [*self._ledger, prompt]
        answer = self._dispatch(request, (), (history, history), iteration, "final_summary")
        return answer.text or ""


def _name(field: str, value: object) -> str:
    """A non-empty text naming where events come from (`channel`, `alias`)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field}: expected a non-empty str, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{field}: not valid UTF-8 text") from None
    return value
