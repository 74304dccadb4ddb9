"""The agent loop: where the trims run (RUN-1..3, LIMIT-1..2), how a drop becomes visible
(SEEN-1..3), the pre-dispatch capacity check (CAP-2..4), the safety nets (PAIR-2..4), and the
legacy log-only path (SEEN-4)."""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Literal

from .capacity import check_request
from .carriers import to_chat_messages
from .estimate import ToolSchema, estimate_history_tokens, estimate_tool_schemas
from .events import EventBus, HistoryTrimmed, TrimReason
from .ledger import TokenLedger
from .messages import (
    AssistantToolCalls,
    ChatMessage,
    ConversationMessage,
    ToolCall,
    ToolResultMessage,
    ToolResults,
    chat_rows,
)
from .policy import SPEC, Policy
from .providers import ContextOverflowError, Provider, ProviderReply
from .route import ResolvedRuntime
from .safety import SweepResult, cap_tool_result, sweep_orphans
from .trim import (
    TrimResult,
    insert_breadcrumb,
    trim_conversation_to_recent_turns,
    trim_to_recent_turn_count,
    trim_to_recent_turns,
)

LEGACY_LOGGER = "histtrim.legacy"
LEGACY_TRIM_LOG = "trim_history: dropped oldest whole turns"
UNRECOVERABLE_OVERFLOW = "context overflow unrecoverable: only one turn left, cannot trim further"
FINAL_SUMMARY_PROMPT = (
    "The tool iteration limit was reached. Without calling tools, summarize what was done "
    "and what remains."
)
"""A request-only system row appended to the final summary request; never recorded."""


class UnrecoverableContextOverflow(RuntimeError):
    """The provider overflowed and no older turn is left to drop (RUN-2)."""


@dataclass(frozen=True)
class Tool:
    """A plain Python callable the model may call; JSON arguments become keyword arguments."""

    fn: Callable[..., object]
    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, fn: Callable[..., object] | Tool) -> Tool:
        """A callable as a tool named after it, described by its docstring's first line."""
        if isinstance(fn, Tool):
            return fn
        doc = inspect.getdoc(fn) or ""
        return cls(fn, getattr(fn, "__name__", type(fn).__name__), doc.split("\n", 1)[0])

    @property
    def schema(self) -> ToolSchema:
        return ToolSchema(
            name=self.name, description=self.description, parameters=dict(self.parameters)
        )


class _Toolbox:
    """Registered tools: their schemas, and each call run into a capped result (PAIR-3)."""

    def __init__(
        self, tools: Iterable[Tool | Callable[..., object]], policy: Policy = SPEC
    ) -> None:
        self.policy = policy
        self.tools: dict[str, Tool] = {}
        for tool in map(Tool.of, tools):
            if tool.name in self.tools:
                raise ValueError(f"tools: duplicate tool name {tool.name!r}")
            self.tools[tool.name] = tool
        self.schemas = tuple(tool.schema for tool in self.tools.values())
        self.schema_tokens = estimate_tool_schemas(self.schemas, policy=policy)

    def run(self, call: ToolCall, max_chars: int) -> ToolResultMessage:
        tool = self.tools.get(call.name)
        output: object
        if tool is None:
            output = f"error: unknown tool {call.name!r}"
        else:
            try:
                arguments = json.loads(call.arguments)
                if not isinstance(arguments, dict):
                    raise ValueError("arguments must be a JSON object")
                output = tool.fn(**arguments)
            except Exception as exc:  # a failing tool is reported to the model, not raised
                output = f"error: {type(exc).__name__}: {exc}"
        text = output if isinstance(output, str) else json.dumps(output, default=str)
        return ToolResultMessage(
            tool_call_id=call.id,
            content=cap_tool_result(text, max_chars, policy=self.policy),
            tool_name=call.name,
        )


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


class Agent:
    """A structured agent: `history` holds `ConversationMessage` items (TURN-1); every
    provider request is built from it with the system prompt in front.

    The provider-facing rows live in a `TokenLedger`, kept in step with the structured
    history: each item is converted and priced once, when recorded, so the check at every
    provider-call boundary is O(1) and recording k items O(k) (RUN-1); only a real trim
    (or a restore) rebuilds the rows, in one pass.

    The breadcrumb lives in the structured history right after its system rows; whether it
    is there is the agent's own flag (`crumb_present`), never inferred from text."""

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
        policy: Policy | None = None,
    ) -> None:
        self.provider = provider
        self.policy = runtime.policy if policy is None else policy
        """The constants of every estimate and limit (the spec's; fixed for the agent's life)."""
        if runtime.policy != self.policy:
            runtime = runtime.model_copy(update={"policy": self.policy})
        self.runtime = runtime
        """The active route's resolved pair; replace it to switch routes (ROUTE-2)."""
        self.toolbox = _Toolbox(tools, self.policy)
        self.bus = bus if bus is not None else EventBus()
        self.channel = channel
        self.alias = alias
        self.turn_id = 0
        self.calls: list[ProviderCall] = []
        self.events: list[HistoryTrimmed] = []
        self._history: list[ConversationMessage] = []
        self._item_rows: list[tuple[ChatMessage, ...]] = []
        """The provider-facing rows of each `_history` item, converted once."""
        self._ledger = TokenLedger(policy=self.policy)
        self._crumb = False
        self._pending: list[HistoryTrimmed] = []
        self.system_prompt = system_prompt

    @property
    def system_prompt(self) -> str | None:
        return self._system_prompt

    @system_prompt.setter
    def system_prompt(self, text: str | None) -> None:
        """The system row in front of every request; replacing it rebuilds the rows."""
        self._system_prompt = text
        self._head = () if text is None else (ChatMessage.system(text),)
        self._replace(self._history)

    @property
    def history(self) -> list[ConversationMessage]:
        """A copy of the structured history."""
        return list(self._history)

    @property
    def crumb_present(self) -> bool:
        return self._crumb

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
        self._replace(list(swept.history))
        self._crumb = crumb_present
        return swept

    def turn(self, text: str) -> TurnOutcome:
        """One user turn: record it, apply the turn limit, then run the tool loop with
        proactive and reactive trimming and a capacity check before every dispatch."""
        if self.runtime.policy != self.policy:
            raise ValueError("runtime.policy: a new route must be resolved with the agent's policy")
        self.turn_id += 1
        first_call, first_event = len(self.calls), len(self.events)
        self._record(ChatMessage.user(text))
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
        self._record(ChatMessage.assistant(reply))
        return TurnOutcome(
            self.turn_id,
            reply,
            tuple(self.calls[first_call:]),
            tuple(self.events[first_event:]),
            hit_limit,
        )

    def _record(self, item: ConversationMessage) -> None:
        """Append one item to the structured history and its rows to the ledger: O(its rows)."""
        rows = tuple(to_chat_messages((item,)))
        self._history.append(item)
        self._item_rows.append(rows)
        self._ledger.extend(rows)

    def _replace(self, history: list[ConversationMessage]) -> None:
        """A new structured history (a restore or a trim): items already recorded keep their
        rows, and the ledger is rebuilt from the system prompt and those rows in one pass."""
        known = {id(item): rows for item, rows in zip(self._history, self._item_rows, strict=True)}
        item_rows: list[tuple[ChatMessage, ...]] = []
        for item in history:
            rows = known.get(id(item))
            item_rows.append(tuple(to_chat_messages((item,))) if rows is None else rows)
        self._history, self._item_rows = history, item_rows
        self._ledger.rebuild([*self._head, *chain.from_iterable(item_rows)])

    def _record_tool_round(self, answer: ProviderReply) -> None:
        max_chars = self.runtime.max_tool_result_chars
        self._record(AssistantToolCalls(text=answer.text, tool_calls=answer.tool_calls))
        results = tuple(self.toolbox.run(call, max_chars) for call in answer.tool_calls)
        self._record(ToolResults(results=results))

    def _final_summary(self, iteration: int) -> str:
        """After `max_tool_iterations`: one more request, no tools, capacity-checked (CAP-4).

        Its extra system row is priced on top of the ledger (a system row never changes the
        price of the rows before it)."""
        self._proactive_trim()
        prompt = ChatMessage.system(FINAL_SUMMARY_PROMPT)
        history = self._ledger.total + estimate_history_tokens((prompt,), policy=self.policy)
        request = [*self._ledger, prompt]
        answer = self._dispatch(request, (), (history, history), iteration, "final_summary")
        return answer.text or ""

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
            check_request(request, runtime=self.runtime, tool_schemas=schemas)
        trims, self._pending = tuple(self._pending), []
        try:
            answer = self.provider.complete(request, schemas)
        except ContextOverflowError:
            self._log_call(iteration, kind, tokens, "overflow", trims)
            raise
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

    def _apply_turn_limit(self) -> None:
        """Whole-turn limit on the structured history (LIMIT-1..2), after each user message.

        The ledger counts the turns (O(1)); only an excess runs the trim."""
        max_turns = self.runtime.max_history_turns
        if self._ledger.turn_count(crumb_present=self._crumb) <= max(max_turns, 1):
            return
        result = trim_conversation_to_recent_turns(
            self._history, max_turns, has_leading_breadcrumb=self._crumb
        )
        before = self._ledger.total
        self._replace(insert_breadcrumb(result.history, crumb_present=False))
        self._crumb = True
        self._emit(
            TrimReason.TURN_LIMIT,
            result.dropped_messages,
            result.kept_turns,
            before,
            self.runtime.effective_context_budget(),
        )

    def _proactive_trim(self) -> None:
        """Before a dispatch, when the history is over a positive budget (RUN-1): an O(1)
        check on the ledger; only a needed trim looks at the rows."""
        budget = self.runtime.effective_context_budget()
        if self._ledger.needs_trim(budget, crumb_present=self._crumb):
            self._token_trim(budget)

    def _reactive_trim(self, overflow: ContextOverflowError) -> None:
        """After a provider overflow: trim to two thirds of the estimate (the policy's
        `reactive_target`), then retry (RUN-2).

        The request that overflowed is the ledger's rows: nothing changed since it was built."""
        if self._ledger.turn_count(crumb_present=self._crumb) <= 1:
            raise UnrecoverableContextOverflow(UNRECOVERABLE_OVERFLOW) from overflow
        self._token_trim(self.policy.reactive_tokens(self._ledger.total))

    def _token_trim(self, target: int) -> None:
        """Whole-turn token trim of the working history (RUN-3), mirrored on the structured one.

        A first drop trims the history as it will be sent, with the breadcrumb already in."""
        working = self._ledger
        result: TrimResult = trim_to_recent_turns(
            working, target, crumb_present=self._crumb, policy=self.policy
        )
        if not result.trimmed:
            return
        if not self._crumb:
            with_crumb = insert_breadcrumb(working, crumb_present=False)
            result = trim_to_recent_turns(
                with_crumb, target, crumb_present=True, policy=self.policy
            )
        before = working.total
        structured = trim_conversation_to_recent_turns(
            self._history, result.kept_turns, has_leading_breadcrumb=self._crumb
        )
        if structured.dropped_turns != result.dropped_turns:
            raise AssertionError("the structured and working histories disagree about turns")
        self._replace(insert_breadcrumb(structured.history, crumb_present=False))
        self._crumb = True
        self._emit(
            TrimReason.TOKEN_BUDGET, result.dropped_messages, result.kept_turns, before, target
        )

    def _emit(
        self, reason: TrimReason, dropped: int, kept_turns: int, before: int, budget: int
    ) -> None:
        """One drop, one event (SEEN-2..3): to the client transports and the observers."""
        event = HistoryTrimmed(
            reason=reason,
            dropped_messages=dropped,
            kept_turns=kept_turns,
            tokens_before=before,
            tokens_after=self._ledger.total,
            budget=budget,
        )
        self.events.append(event)
        self._pending.append(event)
        self.bus.publish(event, channel=self.channel, agent_alias=self.alias, turn_id=self.turn_id)


@dataclass(frozen=True)
class LegacyRunResult:
    """What `legacy_run` returns: the new provider-facing history and the final reply."""

    history: list[ChatMessage]
    reply: str
    provider_calls: int
    dropped_messages: int


def legacy_run(
    provider: Provider,
    history: Iterable[ChatMessage | Mapping[str, Any]],
    text: str,
    *,
    runtime: ResolvedRuntime,
    tools: Iterable[Tool | Callable[..., object]] = (),
    logger: logging.Logger | None = None,
) -> LegacyRunResult:
    """The legacy `agent::run` path (SEEN-4): one turn on a provider-facing history with the
    whole-turn count limit, reported only through `logging`: no breadcrumb, no event.

    Requests are capacity-checked; a provider overflow propagates. The input is not changed."""
    log = logger if logger is not None else logging.getLogger(LEGACY_LOGGER)
    profile = runtime.profile
    toolbox = _Toolbox(tools, runtime.policy)
    rows = [*chat_rows(history), ChatMessage.user(text)]
    trimmed = trim_to_recent_turn_count(rows, runtime.max_history_turns)
    if trimmed.trimmed:
        log.info(
            "%s: dropped_turns=%d dropped_messages=%d kept_turns=%d max_turns=%d",
            LEGACY_TRIM_LOG,
            trimmed.dropped_turns,
            trimmed.dropped_messages,
            trimmed.kept_turns,
            runtime.max_history_turns,
        )
    rows = trimmed.history
    calls = 0
    for _ in range(profile.max_tool_iterations):
        check_request(rows, runtime=runtime, tool_schemas=toolbox.schemas)
        calls += 1
        answer = provider.complete(rows, toolbox.schemas)
        if not answer.tool_calls:
            rows.append(ChatMessage.assistant(answer.text or ""))
            return LegacyRunResult(rows, answer.text or "", calls, trimmed.dropped_messages)
        rows.append(ChatMessage.assistant_tool_calls(answer.text, answer.tool_calls))
        for call in answer.tool_calls:
            result = toolbox.run(call, runtime.max_tool_result_chars)
            rows.append(ChatMessage.tool_result(result.tool_call_id, result.content))
    request = [*rows, ChatMessage.system(FINAL_SUMMARY_PROMPT)]
    check_request(request, runtime=runtime)
    reply = provider.complete(request, ()).text or ""
    rows.append(ChatMessage.assistant(reply))
    return LegacyRunResult(rows, reply, calls + 1, trimmed.dropped_messages)
