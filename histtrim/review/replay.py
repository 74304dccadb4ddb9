"""Replay one recorded session through the agent loop (`histtrim.agent.runtime.Agent`) under one
`Policy`: the recorded assistant steps become a scripted provider whose hidden true window
(and true prices) decide which requests overflow. `replay_session` is a pure function of
its arguments, so a process pool or a Dask cluster can run it anywhere."""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, islice
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from histtrim.adapters.tokenizers import exact_counter
from histtrim.agent.providers import (
    ContextOverflowError,
    ProviderRequest,
    RequestCounter,
    ScriptedProvider,
    ScriptExhaustedError,
)
from histtrim.agent.runtime import Agent, UnrecoverableContextOverflow
from histtrim.agent.tools import Tool, ToolOutput
from histtrim.capacity import ContextCapacityExceeded
from histtrim.carriers import to_chat_messages
from histtrim.config import ProviderProfile, RuntimeProfile
from histtrim.counting import Pricing
from histtrim.estimate import ToolSchema, estimate_tool_schemas, message_costs
from histtrim.events import EventBus, ObservedTrim
from histtrim.messages import AssistantToolCalls, ChatMessage
from histtrim.policy import SPEC, Policy
from histtrim.review.cache import Prompt
from histtrim.review.loss import (
    NO_LOSS,
    ContextLoss,
    RowTokens,
    distinctive_tokens,
    reply_text,
    request_loss,
)
from histtrim.review.recorded import RecordedUsage
from histtrim.review.sessions import NO_OUTPUT, ReviewSession
from histtrim.route import ResolvedRuntime, resolve_runtime
from histtrim.turns import index_turns

__all__ = [
    "ReplaySettings",
    "SessionReplay",
    "Trim",
    "median_max",
    "replay",
    "replay_session",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ReplaySettings(_Frozen):
    """The route every policy is replayed on: the runtime profile, the provider profile
    (its declared `context_window` is what the capacity check knows), and the provider's
    hidden truth: its real window and its real prices (`true_policy`, the spec's)."""

    profile: RuntimeProfile = Field(default_factory=RuntimeProfile)
    provider: ProviderProfile = Field(
        default_factory=lambda: ProviderProfile(model="replay-model", context_window=16_000)
    )
    selected_model: str | None = None
    true_window: int | None = Field(
        default=None, ge=1, description="The provider's real window; unset: the declared one."
    )
    true_policy: Policy = SPEC
    tokenizer: Literal["o200k_base", "cl100k_base"] | None = Field(
        default=None,
        description="Count the rows' text with this vocabulary (the extra histtrim[tokenizers]) "
        "instead of EST-1's bytes; unset: the spec's estimate.",
    )
    measure_loss: bool = Field(
        default=False,
        description="Measure the needed context lost at each billed request "
        "(`histtrim.review.loss`): the next reply's distinctive tokens the full request held "
        "and the sent one did not; off by default: it reads every request.",
    )
    provider_usage: Literal["o200k_base", "cl100k_base"] | None = Field(
        default=None,
        description="The provider reports each answered request's input tokens counted with "
        "this vocabulary (each row's text plus the policy's framing, the tool schemas' text), "
        "so the agent trims on its reported usage too (USAGE-1..6); unset: it reports none.",
    )
    record_prompts: bool = Field(
        default=False,
        description="Record each billed request as cache blocks (`SessionReplay.prompts`) for "
        "a prompt-cache model (`histtrim.review.cache`); off by default: it costs time and "
        "memory.",
    )
    think_seconds: float | None = Field(
        default=None, ge=0, le=86_400,
        description="The replay's clock (CACHE-1..3, the cache model's lifetimes): seconds "
        "between one reply and the next request of a turn; unset: no clock (no request has "
        "a time, the cache is always warm and a cold-cache policy never fires).",
    )
    idle_seconds: float = Field(
        default=0, ge=0, le=31_536_000,
        description="With the clock: seconds the user takes before each turn after the first.",
    )
    recorded_times: bool = Field(
        default=False,
        description="With the clock: a call the session recorded the time of "
        "(`ReviewSession.times`) is made at that time, relative to the session's first "
        "call; the others `think_seconds` or `idle_seconds` after the one before.",
    )
    recorded_tool_rounds: bool = Field(
        default=False,
        description="Raise the profile's max_tool_iterations, per session, to the most "
        "provider calls one of its turns recorded, so every recorded call is replayed; off: "
        "the profile's limit applies and a turn it cuts short counts as failed.",
    )

    def runtime(self, policy: Policy, session: ReviewSession | None = None) -> ResolvedRuntime:
        """The route under `policy`; with `recorded_tool_rounds`, the tool loop long enough
        for every turn of `session`."""
        profile = self.profile
        if self.recorded_tool_rounds and session is not None and session.turns:
            rounds = max(len(turn.steps) for turn in session.turns)
            if rounds > profile.max_tool_iterations:
                profile = profile.model_copy(update={"max_tool_iterations": rounds})
        return resolve_runtime(profile, self.provider, self.selected_model, policy=policy)

    @property
    def hidden_window(self) -> int | None:
        if self.true_window is not None:
            return self.true_window
        return self.provider.context_window or None


@dataclass(frozen=True)
class Trim:
    """One `HistoryTrimmed` of a replay, with the turn it happened in and the turns it
    dropped (the oldest ones still kept: trims always drop from the front)."""

    turn_id: int
    reason: str
    dropped_messages: int
    dropped_turns: int
    kept_turns: int
    tokens_before: int
    tokens_after: int
    budget: int


@dataclass(frozen=True)
class SessionReplay:
    """What one policy did to one session (every figure from the agent's own log)."""

    session: str
    policy: str
    turns: int
    calls: int
    tokens: tuple[int, ...]
    """The policy's estimate of each dispatched request (what the capacity check measured)."""
    true_tokens: tuple[int, ...]
    """The same requests priced as the provider really prices them."""
    token_trims: int
    """Proactive token-budget trims (RUN-1); the overflow retries' trims are apart."""
    turn_limit_trims: int
    dropped_turns: int
    dropped_messages: int
    reactive_retries: int
    model_refusals: int
    """Requests the capacity check passed and the provider refused (its hidden window)."""
    capacity_refusals: int
    """Turns refused before dispatch by the capacity check (CAP-2)."""
    failed_turns: int
    """Turns that ended in an unrecoverable overflow, or ran out of tool iterations before
    the recording's last call (`cut_short_turns`): either way not replayed as recorded."""
    kept_turns: int
    trace: tuple[Trim, ...]
    """Every trim, in order: what `differs` compares."""
    history_tokens: tuple[int, ...] = ()
    """The estimated history (system rows included, tool schemas not) of each dispatch."""
    overflow_trims: int = 0
    """Trims after the provider reported an overflow (RUN-2), before the retry."""
    loss: ContextLoss = NO_LOSS
    """The needed context lost over the billed requests (`ReplaySettings.measure_loss`)."""
    prompts: tuple[Prompt, ...] = ()
    """Each billed request (the provider answered) as blocks, for the cache model
    (`histtrim.review.cache`): the tool schemas, then one block per row, in true tokens.
    Recorded only with `ReplaySettings(record_prompts=True)`."""
    cut_short_turns: int = 0
    """Turns the profile's max_tool_iterations ended before the recording's last provider
    call (the agent asked for its final summary instead): counted in `failed_turns`."""
    unreplayed_calls: int = 0
    """The recorded provider calls those turns never made."""
    cold_cuts: int = 0
    """Trims made because the prompt cache was cold (CACHE-2: `HistoryTrimmed.cold_cache`)."""
    prompt_times: tuple[float, ...] = ()
    """When each billed request of `prompts` was made (seconds since the session's first),
    with the replay's clock (`ReplaySettings.think_seconds`); empty without one."""
    recorded: RecordedUsage | None = None
    """The session's recorded usage, when its file records it: the replay's truth."""

    @property
    def trims(self) -> int:
        return self.token_trims + self.turn_limit_trims + self.overflow_trims

    def differs(self, other: SessionReplay) -> bool:
        """Whether another policy kept, dropped or sent anything differently."""
        return (self.trace, self.tokens, self.capacity_refusals, self.failed_turns) != (
            other.trace, other.tokens, other.capacity_refusals, other.failed_turns
        )


class _Blocks:
    """Requests as cache blocks: equal rows get the same small key within one session."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.keys: dict[object, int] = {}

    def key(self, value: ChatMessage | str) -> int:
        try:
            return self.keys.setdefault(value, len(self.keys))
        except TypeError:  # a row holding a dict (extras): its JSON is its identity
            assert isinstance(value, ChatMessage)
            return self.key(value.model_dump_json())

    def prompt(self, rows: Sequence[ChatMessage], schemas: Sequence[ToolSchema]) -> Prompt:
        costs = message_costs(rows, policy=self.policy)
        body = tuple((self.key(row), cost) for row, cost in zip(rows, costs, strict=True))
        if not schemas:
            return body
        text = "\n".join(schema.model_dump_json() for schema in schemas)
        return ((self.key(text), estimate_tool_schemas(schemas, policy=self.policy)), *body)


class _LossMeter:
    """The full request of every recorded step (the session's rows before its reply) and
    the needed context each sent request lost (`histtrim.review.loss`)."""

    def __init__(self, session: ReviewSession) -> None:
        items = session.history()
        self.rows: list[ChatMessage] = []
        before = len(items) - sum(
            1 + sum(2 if s.tool_calls else 1 for s in t.steps) for t in session.turns
        )
        self.ends: list[int] = []
        for at, item in enumerate(items):
            step = isinstance(item, AssistantToolCalls) or (
                isinstance(item, ChatMessage) and item.role == "assistant"
            )
            if at >= before and step:
                self.ends.append(len(self.rows))
            self.rows.extend(to_chat_messages((item,)))
        self.steps = [s for t in session.turns for s in t.steps]
        self.first = list(accumulate((len(t.steps) for t in session.turns), initial=0))
        self.system = frozenset(distinctive_tokens(session.system_prompt or ""))
        self.tokens = RowTokens()

    def turn(self, number: int, requests: Sequence[ProviderRequest]) -> ContextLoss:
        """The loss of a turn's billed requests: the j-th answered the turn's j-th step."""
        total = ContextLoss()
        for j, request in enumerate(requests):
            k = self.first[number] + j
            total += request_loss(
                reply_text(self.steps[k]), islice(self.rows, self.ends[k]), request.messages,
                system=self.system, tokens=self.tokens,
            )
        return total


def step_times(session: ReviewSession, settings: ReplaySettings) -> list[float] | None:
    """The replay clock's time of every recorded step (seconds from the first), or None
    without a clock: recorded where `recorded_times` and the session has them, else
    `think_seconds` after the step before (`idle_seconds` before a turn's first step)."""
    think = settings.think_seconds
    if think is None:
        return None
    recorded = session.times if settings.recorded_times else ()
    origin = next((t for t in recorded if t is not None), None)
    out: list[float] = []
    now = 0.0
    for number, turn in enumerate(session.turns):
        for j, _ in enumerate(turn.steps):
            k = len(out)
            at = recorded[k] if k < len(recorded) else None
            if at is not None and origin is not None:
                now = max(now, at - origin)
            elif out:
                now += settings.idle_seconds if j == 0 and number else think
            out.append(now)
    return out


class _Recorded:
    """A tool that returns the recorded outputs of the current turn, in call order."""

    def __init__(self, outputs: deque[ToolOutput]) -> None:
        self.outputs = outputs

    def __call__(self, **_: object) -> ToolOutput:
        return self.outputs.popleft() if self.outputs else NO_OUTPUT


def replay_session(
    session: ReviewSession, policy: Policy, settings: ReplaySettings, *, label: str = "spec"
) -> SessionReplay:
    """Replay `session` under `policy`: a pure function of its arguments."""
    return replay(session, policy, settings, label=label)[1]


def replay(
    session: ReviewSession, policy: Policy, settings: ReplaySettings, *, label: str = "spec"
) -> tuple[Agent, SessionReplay]:
    """`replay_session`, also returning the agent at the end (its history and events)."""
    outputs: deque[ToolOutput] = deque()
    tools = [Tool(_Recorded(outputs), name) for name in session.tools]
    observed: list[ObservedTrim] = []
    reactive: set[int] = set()  # indices in `observed` of the trims an overflow caused
    answered = [0]  # provider requests seen when the last trim was observed

    def observe(seen: ObservedTrim) -> None:
        requests = agent.provider.requests if isinstance(agent.provider, ScriptedProvider) else []
        if len(requests) > answered[0] and requests[-1].outcome == "overflow":
            reactive.add(len(observed))  # the first trim after an overflow: RUN-2's
        answered[0] = len(requests)
        observed.append(seen)

    counter = None if settings.tokenizer is None else exact_counter(settings.tokenizer)
    times = step_times(session, settings)
    done = [0]  # steps of the turns before the current one

    def clock() -> float:
        """The time of the step the next request answers (the last one's after the end)."""
        assert times is not None
        provider = agent.provider
        answered = sum(1 for r in provider.requests if r.outcome == "reply") if isinstance(
            provider, ScriptedProvider) else 0
        return times[min(done[0] + answered, len(times) - 1)] if times else 0.0

    agent = Agent(
        ScriptedProvider(),
        settings.runtime(policy, session),
        token_counter=counter,
        bus=EventBus(observers=[observe]),
        system_prompt=session.system_prompt,
        tools=tools,
        policy=policy,
        alias=session.name,
        clock=None if times is None else clock,
    )
    live = 0
    if session.restored:
        agent.restore(session.restored, crumb_present=session.crumb_present)
        live = index_turns(agent.history, crumb_present=agent.crumb_present).turn_count
    dropped_turns = model_refusals = capacity_refusals = failed = retries = 0
    cut_short = unreplayed = 0
    trims: list[Trim] = []
    true_tokens: list[int] = []
    blocks = _Blocks(settings.true_policy) if settings.record_prompts else None
    prompts: list[Prompt] = []
    prompt_times: list[float] = []
    measure = _LossMeter(session) if settings.measure_loss else None
    loss = ContextLoss()
    reports = None if settings.provider_usage is None else _reports(settings)
    truth = None if session.recorded is None else session.recorded.counter(settings.true_policy)
    for number, turn in enumerate(session.turns):
        provider = ScriptedProvider(
            turn.steps, hidden_window=settings.hidden_window, policy=settings.true_policy,
            reports=truth if reports is None else reports, counter=truth,
        )
        agent.provider = provider
        outputs.clear()
        outputs.extend(turn.outputs)
        first_event = len(agent.events)
        answered[0] = 0
        live += 1
        unretried = 0
        try:
            agent.turn(turn.user)
            if provider.remaining:  # the tool loop ended before the recording did
                cut_short, unreplayed = cut_short + 1, unreplayed + provider.remaining
                failed += 1
        except ContextCapacityExceeded:
            capacity_refusals += 1
        except (UnrecoverableContextOverflow, ContextOverflowError):
            failed += 1
            unretried = 1  # the last overflow of the turn was not retried
        except ScriptExhaustedError:
            failed += 1
        for seen in observed[first_event:]:
            event = seen.event
            trims.append(Trim(
                seen.turn_id, str(event.reason), event.dropped_messages, live - event.kept_turns,
                event.kept_turns, event.tokens_before, event.tokens_after, event.budget,
            ))
            dropped_turns += live - event.kept_turns
            live = event.kept_turns
        overflows = sum(1 for r in provider.requests if r.outcome == "overflow")
        model_refusals += overflows
        retries += overflows - unretried
        true_tokens.extend(r.true_tokens for r in provider.requests)
        if measure is not None:
            loss += measure.turn(number, [r for r in provider.requests if r.outcome == "reply"])
        replies = [r for r in provider.requests if r.outcome == "reply"]
        if blocks is not None:
            prompts.extend(blocks.prompt(r.messages, r.tool_schemas) for r in replies)
            if times:
                prompt_times.extend(
                    times[min(done[0] + j, len(times) - 1)] for j in range(len(replies)))
        done[0] += len(turn.steps)
    events = agent.events
    overflow_trims = len(reactive)
    budget_trims = sum(
        1 for i, seen in enumerate(observed)
        if seen.event.reason == "token_budget" and i not in reactive
    )
    return agent, SessionReplay(
        session=session.name,
        policy=label,
        turns=len(session.turns),
        calls=len(agent.calls),
        tokens=tuple(call.tokens for call in agent.calls),
        true_tokens=tuple(true_tokens),
        token_trims=budget_trims,
        turn_limit_trims=sum(1 for e in events if e.reason == "turn_limit"),
        dropped_turns=dropped_turns,
        dropped_messages=sum(e.dropped_messages for e in events),
        reactive_retries=retries,
        model_refusals=model_refusals,
        capacity_refusals=capacity_refusals,
        failed_turns=failed,
        kept_turns=live,
        trace=tuple(trims),
        history_tokens=tuple(call.history_tokens for call in agent.calls),
        overflow_trims=overflow_trims,
        prompts=tuple(prompts),
        loss=loss,
        cut_short_turns=cut_short,
        unreplayed_calls=unreplayed,
        prompt_times=tuple(prompt_times),
        cold_cuts=sum(1 for e in events if e.cold_cache),
        recorded=session.recorded,
    )


def _reports(settings: ReplaySettings) -> RequestCounter:
    """A provider counting each request with `settings.provider_usage` (USAGE-5's source)."""
    assert settings.provider_usage is not None
    prices = Pricing(settings.true_policy, exact_counter(settings.provider_usage))
    counter = exact_counter(settings.provider_usage)
    frame = settings.true_policy.frame_tokens

    def count(rows: Sequence[ChatMessage], schemas: Sequence[ToolSchema]) -> int:
        return prices.total(list(rows)) + sum(
            counter.count_text(s.name + s.description + str(s.parameters)) + frame
            for s in schemas
        )

    return count


def median_max(values: Sequence[int]) -> tuple[float, int]:
    """The median and maximum of some token counts (0, 0 when there are none)."""
    return (statistics.median(values), max(values)) if values else (0.0, 0)
