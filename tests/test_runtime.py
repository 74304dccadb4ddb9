"""The agent loop: where the trims run (RUN-1..3, LIMIT-1..2), visible trimming (SEEN-1..4),
capacity before every dispatch (CAP-4) and the safety nets in the loop (PAIR-2..4)."""

from __future__ import annotations

import copy
import io
import json
import logging
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import histtrim.carriers
import histtrim.estimate
import histtrim.turns
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
    Tool,
    ToolCall,
    ToolResultMessage,
    ToolResults,
    UnrecoverableContextOverflow,
    estimate_history_tokens,
    index_turns,
    legacy_run,
    resolve_runtime,
    to_chat_messages,
)
from histtrim.agent.legacy import FINAL_SUMMARY_PROMPT
from histtrim.agent.providers import Overflow, ProviderError, ScriptedProvider
from histtrim.agent.runtime import UNRECOVERABLE_OVERFLOW
from histtrim.carriers import parse_tool_calls
from histtrim.estimate import ToolSchema
from histtrim.events import InMemoryTransport, JsonLinesTransport, ObservedTrim
from histtrim.pairing import OrphanRemoval

SYSTEM = "You help Ana run her online shop."


def runtime(window: int = 100_000, **profile: object) -> ResolvedRuntime:
    return resolve_runtime(
        RuntimeProfile.model_validate(profile),
        ProviderProfile(model="m", context_window=window),
        "m",
    )


def read_log(size: int = 40) -> str:
    """Read the shop's log."""
    return "L" * size


def calls(*ids: str, size: int = 40) -> ProviderReply:
    return ProviderReply(
        tool_calls=tuple(ToolCall(id=i, name="read_log", arguments={"size": size}) for i in ids)
    )


def say(text: str) -> ProviderReply:
    return ProviderReply(text=text)


def past_turns(count: int, size: int = 200) -> list[ConversationMessage]:
    """`count` earlier turns, each with one tool exchange."""
    rows: list[ConversationMessage] = []
    for n in range(count):
        rows += [
            ChatMessage.user(f"question {n} " + "q" * size),
            AssistantToolCalls(
                text=None, tool_calls=(ToolCall(id=f"p{n}", name="read_log", arguments="{}"),)
            ),
            ToolResults(results=(ToolResultMessage(tool_call_id=f"p{n}", content="r" * size),)),
            ChatMessage.assistant(f"answer {n}"),
        ]
    return rows


def user_texts(rows: list[ChatMessage] | list[ConversationMessage], crumb: bool) -> list[str]:
    index = index_turns(rows, crumb_present=crumb)
    return [rows[i].content for i in index.starts]  # type: ignore[union-attr]


def agent(provider: ScriptedProvider, rt: ResolvedRuntime, **kwargs: object) -> Agent:
    return Agent(provider, rt, system_prompt=SYSTEM, tools=[read_log], **kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------ TURN-1 / basic loop


def test_turn_1_two_histories_agree() -> None:
    """TURN-1: the structured history, and the provider-facing rows built from it."""
    provider = ScriptedProvider([calls("c1"), say("The log is clean.")])
    bot = agent(provider, runtime())
    outcome = bot.turn("Check the log.")
    assert outcome.reply == "The log is clean."
    assert [type(item).__name__ for item in bot.history] == [
        "ChatMessage",
        "AssistantToolCalls",
        "ToolResults",
        "ChatMessage",
    ]
    assert bot.working_history() == [ChatMessage.system(SYSTEM), *to_chat_messages(bot.history)]
    last = provider.requests[-1]
    assert list(last.messages) == bot.working_history()[:-1]
    assert [s.name for s in last.tool_schemas] == ["read_log"]
    assert [c.outcome for c in outcome.calls] == ["tool_calls", "reply"]


def test_tools_errors_are_reported_to_the_model() -> None:
    def boom() -> str:
        raise RuntimeError("disk gone")

    provider = ScriptedProvider(
        [
            ProviderReply(
                tool_calls=(
                    ToolCall(id="a", name="boom"),
                    ToolCall(id="b", name="nope"),
                    ToolCall(id="c", name="boom", arguments="[1]"),
                )
            ),
            say("sorry"),
        ]
    )
    bot = Agent(provider, runtime(), tools=[Tool.of(boom)])
    bot.turn("go")
    results = bot.history[2]
    assert isinstance(results, ToolResults)
    assert [r.content for r in results.results] == [
        "error: RuntimeError: disk gone",
        "error: unknown tool 'nope'",
        "error: ValueError: arguments must be a JSON object",
    ]


def test_duplicate_tool_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="tools: duplicate"):
        Agent(ScriptedProvider(), runtime(), tools=[read_log, read_log])


# ------------------------------------------------------------------ RUN-1


def test_run_1_proactive_trim_before_the_first_call() -> None:
    """RUN-1: a history already over the budget is trimmed before the first provider call."""
    provider = ScriptedProvider([say("hi")])
    bot = agent(provider, runtime(max_context_tokens=400))
    bot.restore(past_turns(4))
    outcome = bot.turn("New question.")
    first = provider.requests[0]
    assert first.messages[1].content == BREADCRUMB
    assert estimate_history_tokens(first.messages) <= 400
    assert len(outcome.events) == 1 and outcome.calls[0].trims == outcome.events
    assert outcome.events[0].reason == "token_budget"
    assert outcome.events[0].budget == 400


def test_run_1_proactive_trim_between_tool_iterations() -> None:
    """RUN-1: tool results grow the history mid-turn; the next call is trimmed first."""
    provider = ScriptedProvider([calls("c1", size=2000), say("done")])
    bot = agent(provider, runtime(max_context_tokens=500))
    bot.restore(past_turns(1, size=100))
    outcome = bot.turn("Read the big log.")
    first, second = provider.requests
    assert user_texts(list(first.messages), False)[0].startswith("question 0")
    assert second.messages[1].content == BREADCRUMB
    assert user_texts(list(second.messages), True) == ["Read the big log."]
    assert outcome.calls[0].trims == () and len(outcome.calls[1].trims) == 1


def test_run_1_no_trim_when_within_budget_or_disabled() -> None:
    """RUN-1, BUDGET-2: within the budget, or with max_context_tokens = 0, nothing is dropped."""
    for rt in (runtime(max_context_tokens=100_000), runtime(max_context_tokens=0)):
        provider = ScriptedProvider([say("hi")])
        bot = agent(provider, rt)
        bot.restore(past_turns(4))
        before = bot.history
        assert bot.turn("More.").events == ()
        assert bot.history[:-2] == before
        assert BREADCRUMB not in [m.content for m in provider.requests[0].messages]


class CountingProvider:
    """Calls a tool whenever it may (replies when offered no tools), recording at each call
    the request size and the agent's row work so far; it does no estimating of its own."""

    def __init__(self, work: Callable[[], int]) -> None:
        self.work = work
        self.marks: list[tuple[int, int]] = []  # (request rows, agent row work so far)

    def complete(
        self, messages: Sequence[ChatMessage], tool_schemas: Sequence[ToolSchema]
    ) -> ProviderReply:
        self.marks.append((len(messages), self.work()))
        return calls(f"c{len(self.marks)}") if tool_schemas else say("Done.")


def count_row_work(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count every row that anything in histtrim prices, indexes or converts: the rows passed
    to `message_costs` / `index_turns` / `to_chat_messages`, and each `message_cost` call,
    wherever those names are bound."""
    counter: Counter[str] = Counter()

    def counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(rows: Any, *args: Any, **kwargs: Any) -> Any:
            rows = rows if name == "message_cost" else list(rows)
            counter[name] += 1 if name == "message_cost" else len(rows)
            return fn(rows, *args, **kwargs)

        return wrapper

    originals = {
        "message_costs": histtrim.estimate.message_costs,
        "message_cost": histtrim.estimate.message_cost,
        "index_turns": histtrim.turns.index_turns,
        "to_chat_messages": histtrim.carriers.to_chat_messages,
    }
    for module in [m for n, m in sys.modules.items() if n.split(".")[0] == "histtrim"]:
        for name, fn in originals.items():
            if getattr(module, name, None) is fn:
                monkeypatch.setattr(module, name, counted(name, fn))
    return counter


def boundary_work(past: int, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(rows added, row work) up to each provider call of one turn that runs 10 tool
    iterations and the final summary, on a restored history of `past` turns."""
    with monkeypatch.context() as patch:
        counter = count_row_work(patch)
        rt = runtime(
            window=10**9,
            max_context_tokens=10**8,
            max_history_messages=10**6,
            max_tool_iterations=10,
        )
        bot: Agent

        def work() -> int:
            return counter.total() + bot._ledger.priced

        provider = CountingProvider(work)
        bot = agent(provider, rt)  # type: ignore[arg-type]
        bot.restore(past_turns(past, size=20))
        start = work()
        # Positive control: the counter sees a whole-history estimate as O(history) work.
        estimate_history_tokens(bot.working_history())
        assert work() - start >= 2 * len(bot.working_history())
        rows_before, start = len(bot.working_history()), work()
        outcome = bot.turn("Check the log again.")
        assert outcome.hit_iteration_limit and len(outcome.calls) == 11
        sizes = [rows_before, *(rows for rows, _ in provider.marks)]
        works = [start, *(done for _, done in provider.marks)]
    return [(sizes[n + 1] - sizes[n], works[n + 1] - works[n]) for n in range(len(provider.marks))]


def test_run_1_boundary_check_costs_the_new_rows_not_the_history(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RUN-1: the trim check runs at every provider-call boundary, so it must be cheap: the
    work between two boundaries is bounded by the rows added since the previous one (each
    priced and converted once, the check itself O(1)), the same on a 40-row history and on
    an 8,000-row one (rebuilding the rows at every boundary costs ~9 per history row)."""
    short, long = boundary_work(10, monkeypatch), boundary_work(2000, monkeypatch)
    assert short == long
    assert [added for added, _ in long] == [1, *[2] * 9, 3]  # the last adds the summary prompt
    for added, work in long:
        assert work <= 2 * added + 2


# ------------------------------------------------------------------ RUN-2 / PAIR-4


def test_run_2_overflow_trims_to_two_thirds_and_retries() -> None:
    """RUN-2, PAIR-4: a provider overflow triggers the reactive trim to estimate * 2 // 3."""
    provider = ScriptedProvider([Overflow(), say("fits now")])
    bot = agent(provider, runtime(max_context_tokens=0))
    bot.restore(past_turns(4))
    outcome = bot.turn("Again.")
    overflowed, retried = provider.requests
    target = estimate_history_tokens(overflowed.messages) * 2 // 3
    assert overflowed.outcome == "overflow" and retried.outcome == "reply"
    (event,) = outcome.events
    assert event.reason == "context_overflow" and event.budget == target
    assert event.description == "provider reported a context overflow"
    assert event.tokens_before == estimate_history_tokens(overflowed.messages)
    assert event.tokens_after == estimate_history_tokens(retried.messages) <= target
    assert retried.messages[1].content == BREADCRUMB
    assert outcome.reply == "fits now"


def test_run_2_target_does_not_come_from_capacity() -> None:
    """RUN-2: the same history overflowing under two capacities gets the same target."""
    targets = []
    for window in (20_000, 90_000):
        provider = ScriptedProvider([Overflow(), say("ok")])
        bot = agent(provider, runtime(window=window, max_context_tokens=0))
        bot.restore(past_turns(4))
        targets.append(bot.turn("Again.").events[0].budget)
    assert targets[0] == targets[1]


def test_pair_4_hidden_provider_window_recovers() -> None:
    """PAIR-4: provider-side enforcement is separate (a window smaller than configured);
    its overflows drive the reactive trim until the request fits."""
    provider = ScriptedProvider([say("ok")], hidden_window=500)
    bot = agent(provider, runtime(max_context_tokens=0))
    bot.restore(past_turns(8))
    outcome = bot.turn("Again.")
    assert [r.outcome for r in provider.requests][-1] == "reply"
    assert all(r.outcome == "overflow" for r in provider.requests[:-1])
    assert len(outcome.events) == len(provider.requests) - 1 >= 1
    assert provider.requests[-1].estimated_tokens <= 500


def test_run_2_one_turn_left_is_unrecoverable() -> None:
    """RUN-2: when no older turn is left to drop, the overflow cannot be recovered."""
    provider = ScriptedProvider([Overflow()])
    bot = agent(provider, runtime())
    with pytest.raises(UnrecoverableContextOverflow) as info:
        bot.turn("Only turn.")
    assert str(info.value) == UNRECOVERABLE_OVERFLOW
    assert (
        str(info.value) == "context overflow unrecoverable: only one turn left, cannot trim further"
    )
    assert isinstance(info.value.__cause__, ContextOverflowError)


def test_run_2_retries_are_bounded_by_the_tool_iterations() -> None:
    """RUN-2: each retry uses a tool iteration; with none left the overflow propagates, and
    the turn is rolled back whole (the two reactive trims it made included)."""
    provider = ScriptedProvider([Overflow(), Overflow(), Overflow(), say("never")])
    bot = agent(provider, runtime(max_tool_iterations=3, max_context_tokens=0))
    bot.restore(past_turns(10))
    before = bot.history
    with pytest.raises(ContextOverflowError):
        bot.turn("Again.")
    assert len(provider.requests) == 3
    assert len(provider.requests[0].messages) > len(provider.requests[1].messages)
    assert len(provider.requests[1].messages) > len(provider.requests[2].messages)
    assert bot.events == [] and bot.calls == [] and bot.turn_id == 0
    assert bot.history == before


# ------------------------------------------------------------------ RUN-3


def test_run_3_both_paths_keep_whole_turns() -> None:
    """RUN-3: after proactive and reactive trims, every call still has its result."""
    provider = ScriptedProvider([calls("c1", "c2", size=300), Overflow(), say("ok")])
    bot = agent(provider, runtime(max_context_tokens=900))
    bot.restore(past_turns(5))
    bot.turn("Go.")
    for request in provider.requests:
        issued = {c.id for m in request.messages if (p := _calls(m)) for c in p}
        answered = {
            json.loads(m.content)["tool_call_id"] for m in request.messages if m.role == "tool"
        }
        assert issued == answered


def _calls(message: ChatMessage) -> tuple[ToolCall, ...]:
    parsed = parse_tool_calls(message)
    return parsed.calls if parsed else ()


# ------------------------------------------------------------------ CAP-4


def test_cap_4_final_summary_after_the_iteration_limit() -> None:
    """CAP-4: after max_tool_iterations, one final request without tools, capacity-checked."""
    provider = ScriptedProvider([calls("a"), calls("b"), say("Summary: read twice.")])
    bot = agent(provider, runtime(max_tool_iterations=2))
    outcome = bot.turn("Keep reading.")
    assert outcome.hit_iteration_limit and outcome.reply == "Summary: read twice."
    final = provider.requests[-1]
    assert final.tool_schemas == ()
    assert final.messages[-1] == ChatMessage.system(FINAL_SUMMARY_PROMPT)
    assert [c.kind for c in outcome.calls] == ["tool_loop", "tool_loop", "final_summary"]
    assert bot.history[-1] == ChatMessage.assistant("Summary: read twice.")
    assert FINAL_SUMMARY_PROMPT not in [getattr(m, "content", "") for m in bot.history]


def test_cap_4_final_summary_over_capacity_is_not_dispatched() -> None:
    """CAP-4: with proactive trimming off, an over-capacity final summary fails before dispatch."""
    provider = ScriptedProvider([calls("a", size=2000), calls("b", size=2000), say("never")])
    bot = agent(provider, runtime(window=1000, max_tool_iterations=2, max_context_tokens=0))
    with pytest.raises(ContextCapacityExceeded):
        bot.turn("Read everything.")
    assert len(provider.requests) == 2
    assert all(r.estimated_tokens <= 1000 for r in provider.requests)


def test_cap_2_over_capacity_request_is_never_dispatched() -> None:
    """CAP-2, CAP-4: the check runs before every dispatch, proactive trimming off included."""
    provider = ScriptedProvider([say("never")])
    bot = agent(provider, runtime(window=300, max_context_tokens=0))
    with pytest.raises(ContextCapacityExceeded):
        bot.turn("x" * 2000)
    assert provider.requests == []


def test_zero_tool_iterations_goes_straight_to_the_final_request() -> None:
    provider = ScriptedProvider([say("summary")])
    outcome = agent(provider, runtime(max_tool_iterations=0)).turn("hi")
    assert outcome.hit_iteration_limit and [c.kind for c in outcome.calls] == ["final_summary"]


# ------------------------------------------------------------------ LIMIT-1 / LIMIT-2


def test_limit_1_unit_is_a_whole_user_turn() -> None:
    """LIMIT-1: tool calls and results use no slots of their own."""
    provider = ScriptedProvider([calls("a", "b", "c"), calls("d"), say("ok")])
    bot = agent(provider, runtime(max_history_messages=2))
    bot.restore(past_turns(1))
    outcome = bot.turn("Second turn with many tool rows.")
    assert outcome.events == ()
    assert len(bot.history) == 4 + 1 + 4 + 1
    provider.extend([say("ok")])
    (event,) = bot.turn("Third.").events
    assert event.reason == "turn_limit" and event.kept_turns == 2
    assert event.dropped_messages == 4
    assert user_texts(bot.history, True) == ["Second turn with many tool rows.", "Third."]


def test_limit_2_default_is_50_turns() -> None:
    """LIMIT-2: unset means 50 turns."""
    provider = ScriptedProvider([say("ok")])
    bot = agent(provider, runtime())
    bot.restore(past_turns(50, size=1))
    (event,) = bot.turn("Turn 51.").events
    assert event.kept_turns == 50 and event.reason == "turn_limit"
    assert index_turns(bot.history, crumb_present=True).turn_count == 50


def test_limit_2_explicit_zero_keeps_the_newest_turn() -> None:
    """LIMIT-2, KEEP-3: an explicit 0 is authoritative; the newest complete turn stays."""
    provider = ScriptedProvider([calls("a"), say("ok")])
    bot = agent(provider, runtime(max_history_messages=0))
    bot.restore(past_turns(3))
    outcome = bot.turn("Only this one.")
    assert user_texts(bot.history, True) == ["Only this one."]
    assert [e.reason for e in outcome.events] == ["turn_limit"]
    assert isinstance(bot.history[2], AssistantToolCalls)


# ------------------------------------------------------------------ SEEN-1..3


def test_seen_1_breadcrumb_once_after_the_system_rows() -> None:
    """SEEN-1: every drop inserts the note once, before the first kept turn."""
    provider = ScriptedProvider([say("ok")] * 6)
    bot = agent(provider, runtime(max_history_messages=1))
    for n in range(6):
        bot.turn(f"turn {n}")
    for request in provider.requests[1:]:
        contents = [m.content for m in request.messages]
        assert contents.count(BREADCRUMB) == 1 and contents[1] == BREADCRUMB
    assert BREADCRUMB not in [m.content for m in provider.requests[0].messages]
    assert bot.crumb_present and len(bot.events) == 5


def test_seen_1_user_text_equal_to_the_breadcrumb_is_a_turn() -> None:
    """SEEN-1, TURN-2: presence is the owner's flag; a user typing the note is a real turn."""
    provider = ScriptedProvider([say("ok")] * 3)
    bot = agent(provider, runtime(max_history_messages=1))
    bot.turn(BREADCRUMB)
    assert not bot.crumb_present and bot.events == []
    bot.turn("next")
    contents = [m.content for m in provider.requests[-1].messages]
    assert contents.count(BREADCRUMB) == 1


def test_seen_2_and_3_events_reach_clients_and_observers() -> None:
    """SEEN-2, SEEN-3: one event per drop, to the JSON Lines client and to observers with
    channel, agent alias and turn id."""
    stream, memory, seen = io.StringIO(), InMemoryTransport(), []
    bus = EventBus([JsonLinesTransport(stream), memory], [seen.append])
    provider = ScriptedProvider([say("ok")] * 3)
    bot = agent(
        provider, runtime(max_history_messages=1), bus=bus, channel="telegram", alias="shop-bot"
    )
    for n in range(3):
        bot.turn(f"turn {n}")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert lines == [
        {
            "budget": 32_000,
            "description": "history turn limit exceeded",
            "dropped_messages": 2,
            "kept_turns": 1,
            "reason": "turn_limit",
            "tokens_after": lines[n]["tokens_after"],
            "tokens_before": lines[n]["tokens_before"],
            "type": "history_trimmed",
        }
        for n in range(2)
    ]
    assert memory.events == bot.events
    assert [(o.channel, o.agent_alias, o.turn_id) for o in seen] == [
        ("telegram", "shop-bot", 2),
        ("telegram", "shop-bot", 3),
    ]
    assert all(isinstance(o, ObservedTrim) for o in seen)
    # the figures are estimates of the provider-facing history around the drop
    for event, (before, after) in zip(bot.events, [(0, 1), (1, 2)], strict=True):
        grown = [*provider.requests[before].messages, ChatMessage.assistant("ok")]
        assert event.tokens_before == estimate_history_tokens(
            [*grown, ChatMessage.user(f"turn {after}")]
        )
        assert event.tokens_after == estimate_history_tokens(provider.requests[after].messages)


# ------------------------------------------------------------------ SEEN-4


def test_seen_4_legacy_run_logs_only(caplog: pytest.LogCaptureFixture) -> None:
    """SEEN-4: the legacy path trims by turn count and reports it only in its logs."""
    history = [ChatMessage.system(SYSTEM), *to_chat_messages(past_turns(3))]
    snapshot = copy.deepcopy(history)
    provider = ScriptedProvider([calls("c1"), say("done")])
    with caplog.at_level(logging.INFO, logger="histtrim.legacy"):
        result = legacy_run(
            provider,
            history,
            "Fourth.",
            runtime=runtime(max_history_messages=2),
            tools=[read_log],
        )
    assert history == snapshot
    assert [r.getMessage() for r in caplog.records] == [
        f"{LEGACY_TRIM_LOG}: dropped_turns=2 dropped_messages=8 kept_turns=2 max_turns=2"
    ]
    assert BREADCRUMB not in [m.content for m in result.history]
    assert user_texts(result.history, False) == [user_texts(history, False)[-1], "Fourth."]
    assert result.reply == "done" and result.provider_calls == 2
    assert result.history[-4:-1] == [*provider.requests[-1].messages[-3:]]


def test_seen_4_legacy_run_without_trim_is_silent(caplog: pytest.LogCaptureFixture) -> None:
    provider = ScriptedProvider([say("hi")])
    with caplog.at_level(logging.INFO, logger="histtrim.legacy"):
        result = legacy_run(provider, [], "hello", runtime=runtime())
    assert caplog.records == []
    assert result.history == [ChatMessage.user("hello"), ChatMessage.assistant("hi")]


def test_seen_4_legacy_run_final_summary_and_capacity() -> None:
    """SEEN-4, CAP-4: the legacy loop also ends with a capacity-checked summary request."""
    provider = ScriptedProvider([calls("a"), say("summary")])
    result = legacy_run(
        provider, [], "go", runtime=runtime(max_tool_iterations=1), tools=[read_log]
    )
    assert result.reply == "summary" and provider.requests[-1].tool_schemas == ()
    with pytest.raises(ContextCapacityExceeded):
        legacy_run(ScriptedProvider(), [], "x" * 4000, runtime=runtime(window=200))


class _DictProvider(ScriptedProvider):
    """Replays its script, then answers with a dict instead of a `ProviderReply`."""

    def complete(
        self, messages: Sequence[ChatMessage], tool_schemas: Sequence[ToolSchema]
    ) -> ProviderReply:
        if self.remaining:
            return super().complete(messages, tool_schemas)
        return {"text": "hi"}  # type: ignore[return-value]


@pytest.mark.parametrize("script", [[], [calls("a")]], ids=["tool loop", "final summary"])
def test_seen_4_legacy_run_refuses_a_non_reply(script: list[ProviderReply]) -> None:
    """SEEN-4: the legacy loop checks what the provider returns, like the agent does, and
    leaves the caller's history as it was."""
    history = [ChatMessage.user("earlier"), ChatMessage.assistant("ok")]
    before = list(history)
    with pytest.raises(ProviderError, match="_DictProvider returned dict, not a ProviderReply"):
        legacy_run(
            _DictProvider(script), history, "go", runtime=runtime(max_tool_iterations=1),
            tools=[read_log],
        )
    assert history == before


# ------------------------------------------------------------------ PAIR-2 / PAIR-3


def test_pair_2_restore_sweeps_and_reports() -> None:
    """PAIR-2: a restored session is swept; the agent reports what was removed."""
    saved = [
        {"role": "user", "content": "Find LegacyPay."},
        {
            "kind": "assistant_tool_calls",
            "text": "Looking.",
            "tool_calls": [{"id": "c1", "name": "read_log"}],
        },
        {"kind": "tool_results", "results": [{"tool_call_id": "zz", "content": "stale"}]},
    ]
    snapshot = copy.deepcopy(saved)
    bot = agent(ScriptedProvider([say("ok")]), runtime())
    swept = bot.restore(saved)
    assert saved == snapshot
    assert swept.removed == (OrphanRemoval("call", "c1", 1), OrphanRemoval("result", "zz", 2))
    assert bot.history == [ChatMessage.user("Find LegacyPay."), ChatMessage.assistant("Looking.")]


def test_pair_2_restore_checks_the_crumb_flag() -> None:
    bot = agent(ScriptedProvider(), runtime())
    with pytest.raises(ValueError, match="breadcrumb"):
        bot.restore([ChatMessage.assistant("hi")], crumb_present=True)
    assert not bot.crumb_present and bot.history == []
    bot.restore([ChatMessage.user(BREADCRUMB), ChatMessage.user("hi")], crumb_present=True)
    assert bot.crumb_present
    # The flag is authoritative: a localized or older crumb text is the slot too (issue 9).
    bot.restore([ChatMessage.user("[historial anterior omitido]"), ChatMessage.user("hi")],
                crumb_present=True)
    assert bot.crumb_present and len(bot.history) == 2


def test_pair_3_tool_result_capped_when_recorded() -> None:
    """PAIR-3: one over-long result is bounded; the conversation is not trimmed."""
    provider = ScriptedProvider([calls("big", size=5000), say("ok")])
    bot = agent(provider, runtime(max_tool_result_chars=300))
    bot.restore(past_turns(2))
    outcome = bot.turn("Read it all.")
    results = bot.history[-2]
    assert isinstance(results, ToolResults)
    content = results.results[0].content
    assert content == "L" * 200 + "\n\n[... 4700 characters truncated ...]\n\n" + "L" * 100
    assert outcome.events == () and index_turns(bot.history).turn_count == 3


def test_pair_3_zero_turns_the_cap_off() -> None:
    provider = ScriptedProvider([calls("big", size=5000), say("ok")])
    bot = agent(provider, runtime(max_tool_result_chars=0))
    bot.turn("Read it all.")
    results = bot.history[-2]
    assert isinstance(results, ToolResults) and results.results[0].content == "L" * 5000
