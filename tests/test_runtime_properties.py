"""Scripted-session properties of the agent loop (RUN-1..3, SEEN-1..4, CAP-2, CAP-4,
PAIR-1..4, LIMIT-1..2, TURN-1): random profiles, windows, tools and provider scripts."""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from hypothesis import given
from hypothesis import strategies as st

from histtrim import (
    BREADCRUMB,
    LEGACY_TRIM_LOG,
    Agent,
    AssistantToolCalls,
    ChatMessage,
    ContextCapacityExceeded,
    ContextOverflowError,
    ConversationMessage,
    EventBus,
    ProviderProfile,
    ProviderReply,
    ResolvedRuntime,
    RuntimeProfile,
    ToolCall,
    ToolResultMessage,
    ToolResults,
    UnrecoverableContextOverflow,
    estimate_history_tokens,
    index_turns,
    leading_system_count,
    legacy_run,
    opens_turn,
    parse_tool_result,
    resolve_runtime,
)
from histtrim.agent.legacy import FINAL_SUMMARY_PROMPT
from histtrim.agent.providers import Overflow, ScriptedProvider, ScriptExhaustedError, ScriptStep
from histtrim.carriers import parse_tool_calls
from histtrim.estimate import ToolSchema
from histtrim.events import ObservedTrim

SYSTEM = "You are the shop assistant."
EXPECTED_FAILURES = (
    ContextCapacityExceeded,
    UnrecoverableContextOverflow,
    ContextOverflowError,
    ScriptExhaustedError,
)


def read_log(size: int = 0) -> str:
    """Read `size` characters of log."""
    return "L" * size


def pairing_problems(rows: Sequence[ChatMessage]) -> list[str]:
    """Every tool row answers a call issued earlier in its exchange; every call is answered."""
    problems: list[str] = []
    issued: set[str] = set()
    answered: set[str] = set()
    for row in [*rows, ChatMessage.user("end")]:
        if opens_turn(row):
            problems.extend(f"call {c} unanswered" for c in sorted(issued - answered))
            issued, answered = set(), set()
        parsed = parse_tool_calls(row)
        if parsed is not None:
            issued.update(call.id for call in parsed.calls)
        result = parse_tool_result(row)
        if row.role == "tool":
            if result is None or result.tool_call_id not in issued:
                problems.append("result without its call")
            else:
                answered.add(result.tool_call_id)
    return problems


def turn_number(row: ConversationMessage) -> int:
    assert isinstance(row, ChatMessage)
    return int(row.content.split(" ", 1)[0][1:])


def oldest_turn(rows: Sequence[ConversationMessage], crumb: bool) -> int | None:
    index = index_turns(rows, crumb_present=crumb)
    return turn_number(rows[index.starts[0]]) if index.starts else None


# ------------------------------------------------------------------ strategies

step = st.one_of(
    st.builds(lambda n: ProviderReply(text="r" * n), st.integers(0, 300)),
    st.builds(
        lambda sizes: sizes,
        st.lists(st.integers(0, 3000), min_size=1, max_size=3),
    ),
    st.just(Overflow()),
)


@dataclass
class Session:
    runtime: ResolvedRuntime
    hidden_window: int | None
    past: list[ConversationMessage]
    turns: list[tuple[int, list[ScriptStep]]]


@st.composite
def sessions(draw: st.DrawFn) -> Session:
    profile = RuntimeProfile(
        max_context_tokens=draw(st.sampled_from([None, 0]) | st.integers(60, 2500)),
        context_compact_ratio=draw(st.sampled_from([None, 0.5])),
        max_history_messages=draw(st.none() | st.integers(0, 4)),
        max_tool_iterations=draw(st.integers(0, 4)),
        max_tool_result_chars=draw(st.sampled_from([0, 80, 1000, 50_000])),
    )
    window = draw(st.sampled_from([None, 0]) | st.integers(200, 4000))
    runtime = resolve_runtime(profile, ProviderProfile(model="m", context_window=window), "m")
    past: list[ConversationMessage] = []
    for n in range(draw(st.integers(0, 4))):
        size = draw(st.integers(0, 800))
        past += [
            ChatMessage.user(f"u{n} " + "q" * size),
            AssistantToolCalls(text=None, tool_calls=(ToolCall(id=f"p{n}", name="read_log"),)),
            ToolResults(results=(ToolResultMessage(tool_call_id=f"p{n}", content="r" * size),)),
            ChatMessage.assistant(f"a{n}"),
        ]
    serial = [0]

    def steps(raw: list[object]) -> list[ScriptStep]:
        out: list[ScriptStep] = []
        for item in raw:
            if isinstance(item, list):
                calls = []
                for size in item:
                    serial[0] += 1
                    calls.append(
                        ToolCall(id=f"c{serial[0]}", name="read_log", arguments={"size": size})
                    )
                out.append(ProviderReply(tool_calls=tuple(calls)))
            else:
                assert isinstance(item, ProviderReply | Overflow)
                out.append(item)
        return out

    turns = [
        (draw(st.integers(0, 1500)), steps(draw(st.lists(step, max_size=5))))
        for _ in range(draw(st.integers(1, 5)))
    ]
    hidden = draw(st.none() | st.integers(100, 4000))
    return Session(runtime, hidden, past, turns)


# ------------------------------------------------------------------ the watched session


@dataclass
class Watch:
    """Checks every dispatch and every event against the agent's state at that moment."""

    agent: Agent | None = None
    oldest: int | None = None
    problems: list[str] = field(default_factory=list)
    events: list[ObservedTrim] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    """Why each failed turn was entitled to fail."""
    last_ok: bool = False
    rolled_back: set[int] = field(default_factory=set)
    """Provider requests of failed turns (their calls were rolled back with the turn)."""

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.problems.append(what)

    def on_event(self, observed: ObservedTrim) -> None:
        """SEEN-1..2: each event is a real drop, with the breadcrumb in place once."""
        agent = self.agent
        assert agent is not None
        self.events.append(observed)
        history = agent.history
        now = oldest_turn(history, agent.crumb_present)
        self.check(
            now is not None and self.oldest is not None and now > self.oldest,
            "event without a drop",
        )
        self.oldest = now
        self.check(agent.crumb_present, "drop without breadcrumb flag")
        self.check_crumb(history, agent.crumb_present)
        turns = index_turns(history, crumb_present=True).turn_count
        self.check(observed.event.kept_turns == turns, "kept_turns disagrees with the history")
        self.check(observed.event.dropped_messages > 0, "event dropped nothing")
        self.check(observed.turn_id == agent.turn_id, "wrong turn id")
        self.check(
            observed.event.tokens_after == estimate_history_tokens(agent.working_history()),
            "tokens_after is not the estimate of the kept rows",
        )

    def check_crumb(self, rows: Sequence[ConversationMessage], crumb: bool) -> None:
        contents = [getattr(r, "content", None) for r in rows]
        self.check(contents.count(BREADCRUMB) == crumb, "breadcrumb count")
        if crumb:
            self.check(contents[leading_system_count(rows)] == BREADCRUMB, "breadcrumb slot")

    def on_dispatch(self, messages: Sequence[ChatMessage], schemas: Sequence[ToolSchema]) -> None:
        """CAP-2, PAIR-1, TURN-1: what the provider receives; RUN-1: a needed proactive trim
        happened before every dispatch, the final summary's included."""
        agent = self.agent
        assert agent is not None
        rows = list(messages)
        if rows and rows[-1] == ChatMessage.system(FINAL_SUMMARY_PROMPT):
            self.check(not schemas, "final summary with tools")
            rows = rows[:-1]
        budget = agent.runtime.effective_context_budget()
        turns = index_turns(rows, crumb_present=agent.crumb_present).turn_count
        self.check(
            budget == 0 or estimate_history_tokens(rows) <= budget or turns <= 1,
            "dispatched over the budget with an older turn left (no proactive trim)",
        )
        self.check(rows == agent.working_history(), "request is not the structured history")
        self.check(pairing_problems(rows) == [], f"pairing: {pairing_problems(rows)}")
        self.check_crumb(rows, agent.crumb_present)
        self.check(oldest_turn(rows, agent.crumb_present) == self.oldest, "turn dropped silently")
        self.check(
            index_turns(rows, crumb_present=agent.crumb_present).turn_count
            == index_turns(agent.history, crumb_present=agent.crumb_present).turn_count,
            "turn counts disagree",
        )


class WatchedProvider(ScriptedProvider):
    def __init__(self, watch: Watch, hidden: int | None) -> None:
        super().__init__(hidden_window=hidden)
        self.watch = watch

    def complete(
        self, messages: Sequence[ChatMessage], tool_schemas: Sequence[ToolSchema]
    ) -> ProviderReply:
        self.watch.on_dispatch(messages, tool_schemas)
        return super().complete(messages, tool_schemas)


def turn_rows(rows: Sequence[ChatMessage]) -> int:
    """Real user turns in a request (the breadcrumb row is not a turn)."""
    return sum(row.facts.opens_turn and row.content != BREADCRUMB for row in rows)


def check_warranted(
    failure: Exception, provider: WatchedProvider, sent_before: int, bot: Agent
) -> str | None:
    """Why a failed turn was entitled to fail, or None when it was not."""
    requests = provider.requests[sent_before:]
    last = requests[-1] if requests else None
    if isinstance(failure, ContextCapacityExceeded):
        report = failure.report
        ok = report.total > report.window == bot.runtime.context_window
        return "capacity" if ok else None
    if isinstance(failure, ScriptExhaustedError):
        return "exhausted" if last is not None and last.outcome == "exhausted" else None
    if isinstance(failure, UnrecoverableContextOverflow):
        ok = last is not None and last.outcome == "overflow"
        return "unrecoverable" if ok and turn_rows(last.messages) <= 1 else None
    if isinstance(failure, ContextOverflowError):
        # only the last tool iteration's overflow, or the final summary's, propagates
        limit = bot.runtime.profile.max_tool_iterations
        final = last is not None and last.messages[-1] == ChatMessage.system(FINAL_SUMMARY_PROMPT)
        ok = last is not None and last.outcome == "overflow" and (final or len(requests) >= limit)
        return "overflow" if ok else None
    return None


def run_session(session: Session) -> tuple[Watch, WatchedProvider, Agent]:
    watch = Watch()
    provider = WatchedProvider(watch, session.hidden_window)
    bot = Agent(
        provider,
        session.runtime,
        system_prompt=SYSTEM,
        tools=[read_log],
        bus=EventBus(observers=[watch.on_event]),
    )
    watch.agent = bot
    past = copy.deepcopy(session.past)
    swept = bot.restore(past)
    assert past == session.past and swept.removed == ()
    watch.oldest = 0
    number = len(session.past) // 4  # the label of the next recorded turn
    for size, steps in session.turns:
        provider.extend(steps)
        before = (bot.history, bot.working_history(), bot.turn_id, list(bot.events),
                  list(bot.calls), bot.crumb_present)
        oldest, seen, sent = watch.oldest, len(watch.events), len(provider.requests)
        try:
            bot.turn(f"u{number} " + "w" * size)
        except EXPECTED_FAILURES as failure:
            why = check_warranted(failure, provider, sent, bot)
            watch.check(why is not None, f"unwarranted {type(failure).__name__}: {failure}")
            watch.failures.append(why or "unwarranted")
            # all or nothing: the failed turn left the agent exactly as before
            after = (bot.history, bot.working_history(), bot.turn_id, list(bot.events),
                     list(bot.calls), bot.crumb_present)
            watch.check(after == before, "a failed turn changed the agent")
            watch.oldest = oldest
            del watch.events[seen:]  # delivered, then rolled back with the turn
            watch.rolled_back.update(range(sent, len(provider.requests)))
            watch.last_ok = False
        else:
            number += 1
            watch.last_ok = True
            watch.check(
                oldest_turn(bot.history, bot.crumb_present) == watch.oldest, "silent drop"
            )
        watch.check_crumb(bot.history, bot.crumb_present)
    return watch, provider, bot


@given(sessions())
def test_scripted_sessions_keep_every_runtime_invariant(session: Session) -> None:
    """One random scripted session (profile, window, hidden provider window, restored past,
    tool calls, overflows), checked at every dispatch and every event:

    - CAP-2, CAP-4: the provider never receives a request over capacity, final summaries
      included.
    - PAIR-1, RUN-3: no request holds a tool result without its call or a call without its
      result.
    - SEEN-1, SEEN-2, SEEN-3: every drop emits exactly one event, to the observers (an event
      without a drop, or a drop first seen without an event, fails) and the breadcrumb appears
      exactly once, right after the system rows, from the first drop on.
    - TURN-1, RUN-1, RUN-2: what the provider receives is the structured history converted;
      both agree on the kept turns (the event's kept_turns included).
    - LIMIT-1, LIMIT-2: the whole-turn limit holds after every turn.
    - Nothing the caller passed in (the restored session) is mutated.
    - A turn that fails was entitled to (a request over capacity, a script run out, an
      overflow with no turn left or no iteration left) and changed nothing; before every
      dispatch, a needed proactive trim happened (RUN-1).
    """
    watch, provider, bot = run_session(session)
    window = session.runtime.context_window
    assert [r.estimated_tokens for r in provider.requests if r.estimated_tokens > window] == []
    for request in provider.requests:
        assert pairing_problems(list(request.messages)) == []
    assert pairing_problems(bot.working_history()) == []
    assert watch.problems == []
    assert [o.event for o in watch.events] == bot.events
    # RUN-1, CAP-2: the logged estimates (kept by the agent's ledger) are the estimates of
    # what was sent, tool schemas included.
    sent = [
        r for i, r in enumerate(provider.requests)
        if r.outcome != "exhausted" and i not in watch.rolled_back
    ]
    assert [(c.history_tokens, c.tokens) for c in bot.calls] == [
        (estimate_history_tokens(r.messages), r.estimated_tokens) for r in sent
    ]
    assert bot.crumb_present == bool(bot.events)
    limit = max(session.runtime.profile.max_turns(), 1)
    if watch.last_ok:  # a restored past is not trimmed until a turn completes
        assert index_turns(bot.history, crumb_present=bot.crumb_present).turn_count <= limit
    for call in bot.calls:
        for event in call.trims:
            # CAP-1: a trim ends within its target unless only the newest turn is left
            if event.reason in ("token_budget", "context_overflow"):
                assert event.tokens_after <= event.budget or event.kept_turns == 1


@st.composite
def legacy_cases(draw: st.DrawFn) -> tuple[list[ChatMessage], int | None, list[ScriptStep]]:
    rows = [ChatMessage.system(SYSTEM)]
    for n in range(draw(st.integers(0, 6))):
        rows += [
            ChatMessage.user(f"u{n}"),
            ChatMessage.assistant_tool_calls(None, [ToolCall(id=f"p{n}", name="read_log")]),
            ChatMessage.tool_result(f"p{n}", "x"),
            ChatMessage.assistant("ok"),
        ]
    limit = draw(st.none() | st.integers(0, 4))
    script: list[ScriptStep] = [
        ProviderReply(tool_calls=(ToolCall(id=f"c{i}", name="read_log"),))
        for i in range(draw(st.integers(0, 3)))
    ]
    return rows, limit, [*script, ProviderReply(text="done")]


class ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@given(legacy_cases())
def test_seen_4_legacy_path_trims_turns_and_only_logs(
    case: tuple[list[ChatMessage], int | None, list[ScriptStep]],
) -> None:
    """SEEN-4, LIMIT-1, LIMIT-2: whole-turn count trim, a log line, no breadcrumb, no event;
    the caller's history is not changed."""
    rows, limit, script = case
    snapshot = copy.deepcopy(rows)
    logger = logging.getLogger("histtrim.test_legacy")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    handler = ListHandler()
    logger.addHandler(handler)
    try:
        runtime = resolve_runtime(
            RuntimeProfile(max_history_messages=limit), ProviderProfile(), None
        )
        provider = ScriptedProvider(script)
        result = legacy_run(provider, rows, "new", runtime=runtime, tools=[read_log], logger=logger)
    finally:
        logger.removeHandler(handler)
    assert rows == snapshot
    turns_before = index_turns(rows).turn_count + 1
    keep = max(runtime.profile.max_turns(), 1)
    assert index_turns(result.history).turn_count == min(turns_before, keep)
    assert BREADCRUMB not in [m.content for m in result.history]
    trimmed = turns_before > keep
    assert len(handler.messages) == trimmed
    assert all(m.startswith(LEGACY_TRIM_LOG) for m in handler.messages)
    for request in provider.requests:
        assert pairing_problems(list(request.messages)) == []
