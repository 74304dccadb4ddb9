"""The agent (`Agent`), in one class a reader can follow from `turn()` to the provider call:
its state, the turn loop with its tool iterations and final summary, the turn limit
(LIMIT-1..2) and the proactive and reactive token trims (RUN-1..3), each made visible by
`histtrim.visible` (SEEN-1..3), the capacity-checked dispatch (CAP-2..4) and its call log,
all-or-nothing turns and restoring a session (PAIR-2). The structured history and its ledger
are the `AgentHistory` collaborator's (`history.py`); tools are in `tools.py`, the call log's
records in `calls.py`, the legacy path (SEEN-4) in `legacy.py`."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

from pydantic import ValidationError

from histtrim.agent.calls import CallKind, CallOutcome, ProviderCall, TurnOutcome
from histtrim.agent.history import AgentHistory
from histtrim.agent.legacy import (
    FINAL_SUMMARY_PROMPT,
)
from histtrim.agent.providers import ContextOverflowError, Provider, ProviderReply, checked_reply
from histtrim.agent.tools import Tool, _Toolbox
from histtrim.capacity import check_request
from histtrim.counting import TokenCounter
from histtrim.estimate import ToolSchema
from histtrim.events import EventBus, HistoryTrimmed
from histtrim.messages import AssistantToolCalls, ChatMessage, ConversationMessage, ToolResults
from histtrim.pairing import SweepResult, sweep_orphans, validate_tool_pairing
from histtrim.policy import ColdCuts, ColdTrim, Policy, low_water_tokens
from histtrim.reported_usage import (
    PAIRS_KEPT,
    PROVIDER_UNITS,
    HiddenPrefix,
    calibrated,
    fit_hidden_prefix,
    reported_input_tokens,
    scaled_budget,
    usable_report,
)
from histtrim.route import ResolvedRuntime
from histtrim.tool_context import ClearMemo, edit_tool_context
from histtrim.visible import trim_structured

__all__ = [
    "UNRECOVERABLE_OVERFLOW",
    "Agent",
    "UnrecoverableContextOverflow",
]

UNRECOVERABLE_OVERFLOW = "context overflow unrecoverable: only one turn left, cannot trim further"


class UnrecoverableContextOverflow(RuntimeError):
    """The provider overflowed and no older turn is left to drop (RUN-2)."""


class Agent:
    """A structured agent: `history` holds `ConversationMessage` items (TURN-1); every
    provider request is built from it with the system prompt in front.

    Reading order, as a turn runs: `turn` -> `_turn` records the user row and applies the
    turn limit (`_apply_turn_limit`); each tool iteration trims when over budget
    (`_proactive_trim`), then `_dispatch` checks capacity, calls `provider.complete` and logs
    the call (`_log_call`); an overflow trims and retries (`_reactive_trim`); after the last
    iteration `_final_summary` asks once more without tools. Every trim is `_visible_trim`.

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
        clock: Callable[[], float] | None = None,
    ) -> None:
        """`token_counter` prices the rows' text instead of EST-1's bytes in the ledger, the
        trims and the capacity check (`histtrim.counting`); None keeps the spec's estimate.
        `clock` (seconds, e.g. `time.monotonic`) times each request for the policy's
        `cold_cache` (CACHE-1..3); None: no time is known and the cache is never cold."""
        if clock is not None and not callable(clock):
            raise TypeError(f"clock: expected a callable or None, got {type(clock).__name__}")
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
        self._clear = ClearMemo()
        """The last request's clear (CTX-6..10): the next one, which extends it, resumes it."""
        self._pending: list[HistoryTrimmed] = []
        self._usage_pairs: tuple[tuple[int, int], ...] = ()
        """The newest (rows estimate, reported) pairs of this session (USAGE-8's fit)."""
        self._fitted: HiddenPrefix | None = None
        """The hidden prefix fitted on them (USAGE-8), None until a report is in."""
        self.system_prompt = system_prompt
        self._clock = clock
        self._last_request: float | None = None
        self._cold: ColdTrim | None = None
        """CACHE-2: the cold cut of the request being made (None: warm), which its clear
        makes too (`_request`)."""

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
        saved = (self.turn_id, len(self.calls), len(self.events), self._pending,
                 self._last_request, self._usage_pairs, self._fitted)
        self._turning = True
        try:
            yield
        except BaseException as error:
            self._store.rollback(checkpoint)
            (self.turn_id, calls, events, self._pending, self._last_request,
             self._usage_pairs, self._fitted) = saved
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
        self._cold = None  # the new request's clock is read before it is sent
        first_call, first_event = len(self.calls), len(self.events)
        self._store.record(ChatMessage.user(text))
        self._apply_turn_limit()
        limit = self.runtime.profile.max_tool_iterations
        toolbox = self.toolbox
        reply: str | None = None
        hit_limit = False
        for iteration in range(1, limit + 1):
            self._proactive_trim()
            request, history = self._request()
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
            self._reported_trim(answer, tokens[1], toolbox.schema_tokens)
        if reply is None:
            hit_limit = True
            reply, answer, tokens = self._final_summary(limit + 1)
        self._store.record(ChatMessage.assistant(reply))
        self._reported_trim(answer, tokens[1], 0 if hit_limit else toolbox.schema_tokens)
        return TurnOutcome(
            self.turn_id,
            reply,
            tuple(self.calls[first_call:]),
            tuple(self.events[first_event:]),
            hit_limit,
        )

    def _request(self) -> tuple[list[ChatMessage], int]:
        """The rows to send and their estimate: the working history through the policy's
        tool context edit (CTX-1..9, a copy: the stored history and the ledger keep every
        row, and the budget check before it reads them, decision-tool-context-order); a
        request whole turns left over the budget is fitted to it (CTX-10; to its rows part
        with a calibrated hidden prefix, USAGE-8)."""
        rows = self.working_history()
        if self.policy.tool_context.mode == "off":
            return rows, self._ledger.total
        cold = None if self._cold is None else ColdCuts(frozenset({len(rows)}), self._cold)
        budget = self.runtime.effective_context_budget()
        if budget and self._fitted is not None:  # USAGE-8: the budget's rows part
            budget = min(budget, self._fitted.rows_budget(budget))
        edit = edit_tool_context(
            rows, self.policy, crumb_present=self._store.crumb,
            token_counter=self._ledger.token_counter,
            budget_tokens=budget, memo=self._clear,
            cold=cold,
        )
        if not edit.changed:
            return rows, self._ledger.total
        tokens = edit.tokens
        return edit.messages, self._ledger.pricing.total(edit.messages) if tokens is None \
            else tokens

    def _record_tool_round(self, answer: ProviderReply) -> None:
        max_chars = self.runtime.max_tool_result_chars
        self._store.record(AssistantToolCalls(text=answer.text, tool_calls=answer.tool_calls))
        results = tuple(self.toolbox.run(call, max_chars) for call in answer.tool_calls)
        self._store.record(ToolResults(results=results))

    def _final_summary(self, iteration: int) -> tuple[str, ProviderReply, tuple[int, int]]:
        """After `max_tool_iterations`: one more request, no tools, capacity-checked (CAP-4);
        its text, the reply and the request's estimates.

        Its extra system row is priced on top of the ledger (a system row never changes the
        price of the rows before it)."""
        self._proactive_trim()
        prompt = ChatMessage.system(FINAL_SUMMARY_PROMPT)
        rows, history = self._request()
        history += self._ledger.pricing.total([prompt])
        request = [*rows, prompt]
        tokens = (history, history)
        answer = self._dispatch(request, (), tokens, iteration, "final_summary")
        return answer.text or "", answer, tokens

    # -------------------------------------------------------- trims (LIMIT, RUN, SEEN)

    def _apply_turn_limit(self) -> None:
        """Whole-turn limit on the structured history (LIMIT-1..2), after each user message.

        The ledger counts the turns (O(1)); only an excess runs the trim, which keeps the
        policy's low-water mark of turns (`turn_trim_target`; the spec's is 1)."""
        max_turns = self.runtime.max_turns
        if self._ledger.turn_count(crumb_present=self._store.crumb) <= max(max_turns, 1):
            return
        budget = self.runtime.effective_context_budget()
        self._visible_trim(
            max_turns=max_turns, budget_in_force=budget,
            turn_target=self.policy.turn_trim_target,
        )

    def _proactive_trim(self) -> None:
        """Before a dispatch, when the history is over a positive budget (RUN-1): an O(1)
        check on the ledger; only a needed trim looks at the rows. The trim fits the policy's
        low-water mark (`token_trim_target`; the spec's is 1: just under the budget). With
        the policy's `cold_cache` and a clock, a request after a gap longer than the cache's
        lifetime whose history is over `cut_from` of the budget cuts to the low-water mark
        now (CACHE-2): the provider rewrites the whole prefix anyway."""
        budget = self.runtime.effective_context_budget()
        cold = self.policy.cold_cache
        now = None if self._clock is None else _seconds(self._clock())
        last, self._last_request = self._last_request, now
        deep = self._cold = cold.cold_trim(budget, self.policy.token_trim_target, now, last)
        prefix = self._fitted if budget else None
        rows = budget if prefix is None else min(budget, prefix.rows_budget(budget))
        if self._ledger.needs_trim(rows, crumb_present=self._store.crumb):
            self._visible_trim(budget_tokens=rows, token_target=self.policy.token_trim_target,
                               prefix=prefix, provider_budget=budget)
            return
        if deep is not None:  # CACHE-2: cut deep while it costs nothing
            cut = deep.budget_tokens if prefix is None else min(
                deep.budget_tokens, prefix.rows_budget(deep.budget_tokens))
            self._visible_trim(budget_tokens=cut, token_target=deep.token_target, cold=True)

    def _reported_trim(self, answer: ProviderReply, estimated: int, schema_tokens: int) -> None:
        """After a reply, with the reply recorded (USAGE-1..6, the reference's
        `enforce_reported_budget`): when the provider reports more input tokens than the budget,
        trim to the budget (its low-water mark, USAGE-4) scaled by the request's estimate over
        the report (`scaled_budget`). `estimated` is the request's estimate, schemas included.
        Missing or bad usage changes nothing (USAGE-5): the estimate's trims still run."""
        reported = usable_report(
            reported_input_tokens(answer.usage), estimated, policy=self.policy)
        if reported is None:
            return
        budget = self.runtime.effective_context_budget()
        target = self.policy.token_trim_target
        fitted = None
        if self.policy.hidden_prefix == "calibrated":  # USAGE-8
            rows = max(0, estimated - schema_tokens)
            self._usage_pairs = (*self._usage_pairs, (rows, reported))[-PAIRS_KEPT:]
            fitted = self._fitted = fit_hidden_prefix(self._usage_pairs, schema_tokens)
        if fitted is not None:
            due = budget > 0 and reported > budget
            scaled = fitted.rows_budget(low_water_tokens(budget, target)) if due else None
        else:
            scaled = scaled_budget(budget, reported, estimated, schema_tokens, target=target)
        if scaled is None or self._ledger.turn_count(crumb_present=self._store.crumb) <= 1:
            return
        self._visible_trim(
            budget_tokens=scaled,
            reported=(reported, estimated, schema_tokens, low_water_tokens(budget, target)),
            prefix=fitted,
        )

    def _reactive_trim(self, overflow: ContextOverflowError) -> None:
        """After a provider overflow: trim to two thirds of the estimate (the policy's
        `reactive_target`), then retry (RUN-2).

        The request that overflowed is the ledger's rows: nothing changed since it was built."""
        if self._ledger.turn_count(crumb_present=self._store.crumb) <= 1:
            raise UnrecoverableContextOverflow(UNRECOVERABLE_OVERFLOW) from overflow
        self._visible_trim(
            budget_tokens=self.policy.reactive_tokens(self._ledger.total), overflow=True
        )

    def _visible_trim(
        self, *, max_turns: int | None = None, budget_tokens: int | None = None,
        budget_in_force: int = 0, turn_target: Fraction = Fraction(1),
        token_target: Fraction = Fraction(1), overflow: bool = False,
        reported: tuple[int, int, int, int] | None = None, prefix: HiddenPrefix | None = None,
        provider_budget: int = 0, cold: bool = False,
    ) -> None:
        """The visible trim (`trim_structured`) of the structured history, planned on the
        ledger's rows (RUN-3, SEEN-1): the breadcrumb comes back after the system rows and
        the event, naming a low-water mark only when it is not the spec's 1 and the overflow
        when one caused it (RUN-2), goes to the client transports and the observers
        (SEEN-2..3). A `reported` trim (reported, estimated, schema tokens, fit) states its
        event in provider units (USAGE-6), by the hidden `prefix` when one was fitted
        (USAGE-8)."""
        trim = trim_structured(
            self._store.items, self._ledger, max_turns=max_turns, budget_tokens=budget_tokens,
            budget_in_force=budget_in_force, crumb_present=self._store.crumb,
            pricing=self._ledger.pricing, turn_target=turn_target, token_target=token_target,
        )
        if not trim.plan.trimmed:
            return
        self._store.replace(trim.history)
        self._store.crumb = True
        sent = self._request()[1]  # the request as the tool context edit sends it (CTX-10)
        event = trim.event(tokens_after=sent)
        if reported is None and prefix is not None:  # USAGE-8: held to the rows' budget
            event = event.model_copy(update={
                "tokens_before": prefix.count(event.tokens_before),
                "tokens_after": prefix.count(event.tokens_after),
                "budget": low_water_tokens(provider_budget, token_target),
                "counter": PROVIDER_UNITS, "hidden_prefix": prefix.prefix,
                "ratio": prefix.ratio_text,
            })
        if reported is not None:
            tokens, estimated, schemas, fit = reported
            target = self.policy.token_trim_target
            event = event.model_copy(update={
                "tokens_before": tokens,
                "tokens_after": prefix.count(sent) if prefix is not None
                else calibrated(sent + schemas, tokens, estimated),
                "budget": fit,
                "counter": PROVIDER_UNITS,
                "target": None if target == 1 else str(target),
                "hidden_prefix": None if prefix is None else prefix.prefix,
                "ratio": None if prefix is None else prefix.ratio_text,
            })
        if cold:  # CACHE-3: the event says why the cut came now
            target = self.policy.cold_cache.fit(self.policy.token_trim_target)
            event = event.model_copy(update={
                "cold_cache": True, "target": None if target == 1 else str(target)})
        self._publish(event.after_overflow() if overflow else event)

    def _publish(self, event: HistoryTrimmed) -> None:
        """One drop, one event (SEEN-2..3): to the client transports and the observers."""
        self.events.append(event)
        self._pending.append(event)
        self.bus.publish(event, channel=self.channel, agent_alias=self.alias, turn_id=self.turn_id)

    # -------------------------------------------------------- dispatch (CAP-2..4)

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


def _name(field: str, value: object) -> str:
    """A non-empty text naming where events come from (`channel`, `alias`)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field}: expected a non-empty str, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{field}: not valid UTF-8 text") from None
    return value


def _seconds(value: object) -> float:
    """What the Agent's clock returned, as seconds: a finite number, or a one-line error."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"clock: expected a finite number of seconds, got {value!r}")
    return float(value)
