"""histtrim inside the OpenAI Agents SDK, driven by the SDK's own `agents.testing.ScriptedModel`:
the input filter's whole-turn trim (KEEP-1, RUN-1), breadcrumb (SEEN-1), event (SEEN-2), the
model wrapper's overflow retry at 2/3 (RUN-2), the session's turn limit on stored items (KEEP-2,
LIMIT-1), pairing on every request (PAIR-1), TURN-6."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("agents")

import httpx2
import openai
from agents import Agent, RunConfig, Runner, function_tool
from agents.memory import SQLiteSession
from agents.testing import ScriptedModel, assistant_message, function_call

from histtrim import (
    BREADCRUMB,
    HistoryTrimmed,
    ProviderProfile,
    RuntimeProfile,
    TrimReason,
    estimate_history_tokens,
    resolve_runtime,
    validate_tool_pairing,
)
from histtrim.integrations.openai_agents import (
    CRUMB,
    Breadcrumb,
    HisttrimInputFilter,
    HisttrimModel,
    HisttrimSession,
    from_units,
    run_with_histtrim,
    to_rows,
)
from histtrim.messages import ChatMessage
from histtrim.policy import SPEC

INSTRUCTIONS = "You are terse."
CONFIG = RunConfig(tracing_disabled=True)


def overflow() -> openai.BadRequestError:
    """What openai raises for an over-long prompt: HTTP 400, code context_length_exceeded."""
    request = httpx2.Request("POST", "https://api.openai.com/v1/responses")
    return openai.BadRequestError(
        "Error code: 400 - context_length_exceeded",
        response=httpx2.Response(400, request=request),
        body={"message": "maximum context length", "type": "invalid_request_error",
              "code": "context_length_exceeded"},
    )


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city} " * 20


def session(turns: int) -> list[Any]:
    items: list[Any] = []
    for i in range(turns):
        items += [
            {"role": "user", "content": f"question {i} " + "x" * 400},
            {"type": "function_call", "call_id": f"call_{i}", "name": "get_weather",
             "arguments": '{"city":"P"}'},
            {"type": "function_call_output", "call_id": f"call_{i}", "output": "sunny " * 60},
            {"role": "assistant", "content": f"answer {i}"},
        ]
    return [*items, {"role": "user", "content": "and now?"}]


def scripted(*, overflows: int = 0, tool_round: bool = True) -> ScriptedModel:
    steps: list[Any] = [overflow() for _ in range(overflows)]
    if tool_round:
        steps.append([function_call("get_weather", {"city": "R"}, call_id="call_new")])
    steps.append([assistant_message("done")])
    return ScriptedModel(steps)


def rows(items: list[Any], instructions: str | None = INSTRUCTIONS) -> list[ChatMessage]:
    system = [ChatMessage.system(instructions)] if instructions else []
    return [*system, *to_rows(items)[1]]


def run(trimming: HisttrimInputFilter, items: list[Any], model: ScriptedModel) -> Any:
    agent = Agent(name="weather", instructions=INSTRUCTIONS, model=model, tools=[get_weather])
    return asyncio.run(run_with_histtrim(agent, items, trimming=trimming, run_config=CONFIG))


def test_keep_1_the_filter_trims_each_call_with_breadcrumb_and_event() -> None:
    """KEEP-1, RUN-1, SEEN-1, SEEN-2: each call fits with the instructions counted, starts
    with the breadcrumb and sends the input's own items; the run's items are not changed."""
    events: list[HistoryTrimmed] = []
    items = session(6)
    model = scripted()
    result = run(HisttrimInputFilter(budget_tokens=700, on_trim=events.append), items, model)
    assert len(model.calls) == 2
    for call in model.calls:
        assert call.system_instructions == INSTRUCTIONS
        assert call.input[0] == {"role": "user", "content": BREADCRUMB}
        assert estimate_history_tokens(rows(call.input)) <= 700
        assert validate_tool_pairing(rows(call.input)) == []
    assert [e.reason for e in events] == [TrimReason.TOKEN_BUDGET] * 2
    assert result.final_output == "done"
    assert len(result.to_input_list()) == len(items) + 3


def test_turn_6_no_trim_sends_the_input_unchanged() -> None:
    events: list[HistoryTrimmed] = []
    items = session(2)
    model = scripted(tool_round=False)
    run(HisttrimInputFilter(budget_tokens=100_000, on_trim=events.append), items, model)
    assert model.calls[0].input == items and events == []


def test_the_filter_returns_the_inputs_own_items() -> None:
    items = session(6)
    done = HisttrimInputFilter(budget_tokens=700).trim(items, INSTRUCTIONS)
    sent = from_units(items, done.units)
    assert isinstance(sent[0], Breadcrumb)
    assert all(any(a is b for b in items) for a in sent[1:])


def test_keep_2_turn_limit_from_the_runtime_profile() -> None:
    runtime = resolve_runtime(RuntimeProfile(max_history_messages=2, max_context_tokens=0),
                              ProviderProfile(model="m", context_window=128_000), None)
    events: list[HistoryTrimmed] = []
    model = scripted(tool_round=False)
    run(HisttrimInputFilter(runtime, on_trim=events.append), session(5), model)
    users = [i["content"][:10] for i in model.calls[0].input
             if i.get("role") == "user" and i["content"] != BREADCRUMB]
    assert users == ["question 4", "and now?"]
    assert [(e.reason, e.kept_turns, e.budget) for e in events] == [
        (TrimReason.TURN_LIMIT, 2, 0)]


def test_run_2_overflow_retries_once_at_two_thirds() -> None:
    events: list[HistoryTrimmed] = []
    model = scripted(overflows=1)
    result = run(HisttrimInputFilter(budget_tokens=0, on_trim=events.append), session(6), model)
    first, retry = model.calls[0].input, model.calls[1].input
    target = SPEC.reactive_tokens(estimate_history_tokens(rows(first)))
    assert estimate_history_tokens(rows(retry)) <= target
    assert retry[0] == {"role": "user", "content": BREADCRUMB}
    assert model.calls[1].system_instructions == INSTRUCTIONS
    assert [(e.reason, e.budget) for e in events] == [(TrimReason.TOKEN_BUDGET, target)]
    assert result.final_output == "done"
    assert all(validate_tool_pairing(rows(call.input)) == [] for call in model.calls)


def test_run_2_a_second_overflow_or_a_single_turn_is_raised() -> None:
    with pytest.raises(openai.BadRequestError):
        run(HisttrimInputFilter(budget_tokens=0), session(6), scripted(overflows=2))
    with pytest.raises(openai.BadRequestError):
        run(HisttrimInputFilter(budget_tokens=0), session(0), scripted(overflows=1))


def test_run_2_a_streamed_run_retries_too() -> None:
    """The wrapper retries a stream that overflows before its first event."""
    model = scripted(overflows=1)
    trimming = HisttrimInputFilter(budget_tokens=0)
    agent = Agent(name="weather", instructions=INSTRUCTIONS,
                  model=HisttrimModel(model, trimming), tools=[get_weather])

    async def go() -> Any:
        streamed = Runner.run_streamed(agent, session(6), run_config=CONFIG)
        async for _ in streamed.stream_events():
            pass
        return streamed.final_output

    assert asyncio.run(go()) == "done"
    first, retry = model.calls[0].input, model.calls[1].input
    target = SPEC.reactive_tokens(estimate_history_tokens(rows(first)))
    assert estimate_history_tokens(rows(retry)) <= target


def test_the_filter_alone_in_a_run_config() -> None:
    model = scripted(tool_round=False)
    agent = Agent(name="weather", instructions=INSTRUCTIONS, model=model)
    config = RunConfig(tracing_disabled=True,
                       call_model_input_filter=HisttrimInputFilter(budget_tokens=700))
    asyncio.run(Runner.run(agent, session(6), run_config=config))
    assert model.calls[0].input[0]["content"] == BREADCRUMB


def test_keep_2_the_session_keeps_the_newest_turns_and_the_breadcrumb() -> None:
    """KEEP-2, LIMIT-1, SEEN-1..2: the stored items keep 2 whole turns; one event per drop;
    the next run's input starts with the breadcrumb, which the filter knows by the session's
    flag (a breadcrumb that is not the session's would be a turn)."""
    events: list[HistoryTrimmed] = []
    store = HisttrimSession(SQLiteSession("t"), max_turns=2, on_trim=events.append)
    model = ScriptedModel([[assistant_message(f"reply {i}")] for i in range(4)])
    agent = Agent(name="w", instructions=INSTRUCTIONS, model=model)
    trimming = HisttrimInputFilter(budget_tokens=0, max_turns=2, session=store)

    async def go() -> list[Any]:
        for i in range(4):
            await run_with_histtrim(agent, f"turn {i}", trimming=trimming, session=store,
                                    run_config=CONFIG)
        return await store.inner.get_items()

    stored = asyncio.run(go())
    assert [i["content"] for i in stored if i.get("role") == "user"] == ["turn 2", "turn 3"]
    assert store.crumb_present
    assert [(e.reason, e.kept_turns) for e in events] == [(TrimReason.TURN_LIMIT, 2)] * 2
    last = model.calls[-1].input
    assert last[0]["content"] == BREADCRUMB
    assert sum(i.get("content") == BREADCRUMB for i in last) == 1


def test_bad_arguments_are_one_line_errors() -> None:
    with pytest.raises(ValueError, match="max_turns"):
        HisttrimSession(SQLiteSession("x"), max_turns=-1)
    with pytest.raises(ValueError, match="call_model_input_filter"):
        asyncio.run(run_with_histtrim(
            Agent(name="a", model=scripted()), "hi",
            run_config=RunConfig(call_model_input_filter=HisttrimInputFilter())))


@st.composite
def histories(draw: st.DrawFn) -> list[Any]:
    items: list[Any] = []
    if draw(st.booleans()):
        items.append({"role": "developer", "content": draw(st.text(max_size=20))})
    for t in range(draw(st.integers(0, 6))):
        items.append({"role": "user", "content": draw(st.text(max_size=80))})
        for r in range(draw(st.integers(0, 2))):
            ids = [f"c{t}_{r}_{k}" for k in range(draw(st.integers(1, 2)))]
            items += [{"type": "function_call", "call_id": i, "name": "f", "arguments": "{}"}
                      for i in ids]
            items += [{"type": "function_call_output", "call_id": i,
                       "output": draw(st.text(max_size=60))} for i in ids]
        items.append({"role": "assistant", "content": draw(st.text(max_size=40))})
    return items


@given(histories(), st.integers(0, 300), st.sampled_from([None, 1, 2, 3]))
def test_round_trip_kept_items_are_the_inputs_own(
    items: list[Any], budget: int, max_turns: int | None
) -> None:
    """Items to rows and back without loss (the same objects); a trim keeps the leading system
    items and a suffix of whole turns; pairing holds (PAIR-1)."""
    units, _ = to_rows(items)
    back = from_units(items, units)
    assert all(a is b for a, b in zip(back, items, strict=True))
    done = HisttrimInputFilter(budget_tokens=budget, max_turns=max_turns).trim(items, None)
    sent = from_units(items, done.units)
    assert validate_tool_pairing(done.rows) == []
    assert (CRUMB in done.units) == done.trimmed
    body = [i for i in sent if not isinstance(i, Breadcrumb)]
    system = int(bool(items) and items[0].get("role") == "developer")
    assert all(a is b for a, b in zip(body[:system], items, strict=False))
    tail = body[system:]
    assert all(a is b for a, b in zip(tail, items[len(items) - len(tail):], strict=True))
    if not done.trimmed:
        assert sent == items  # TURN-6


def test_token_counter_prices_the_rows() -> None:
    events: list[HistoryTrimmed] = []

    def words(row: ChatMessage) -> int:
        return len(row.content.split())

    run(HisttrimInputFilter(budget_tokens=60, token_counter=words, on_trim=events.append),
        session(6), scripted(tool_round=False))
    assert events and all(e.counter == "words" for e in events)
