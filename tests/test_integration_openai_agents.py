"""histtrim inside the OpenAI Agents SDK, driven by the SDK's own `agents.testing.ScriptedModel`:
the input filter's whole-turn trim (KEEP-1, RUN-1), breadcrumb (SEEN-1), event (SEEN-2), the
model wrapper's overflow retry at 2/3 (RUN-2), the session's turn limit on stored items (KEEP-2,
LIMIT-1), pairing on every request (PAIR-1), TURN-6."""

from __future__ import annotations

import asyncio
import contextlib
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
    index_turns,
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
    is_context_overflow,
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
    assert [(e.reason, e.budget) for e in events] == [(TrimReason.CONTEXT_OVERFLOW, target)]
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
    """KEEP-2, LIMIT-1, SEEN-1..2: each run reads 2 whole turns, the breadcrumb first, with
    one event per trimmed read; the stored session keeps every item (issue 30 item 2); the
    next run's input starts with the breadcrumb, which the filter knows by the session's
    flag (a breadcrumb that is not the session's would be a turn)."""
    events: list[HistoryTrimmed] = []
    store = HisttrimSession(SQLiteSession("t"), max_turns=2, on_trim=events.append)
    model = ScriptedModel([[assistant_message(f"reply {i}")] for i in range(4)])
    agent = Agent(name="w", instructions=INSTRUCTIONS, model=model)
    trimming = HisttrimInputFilter(budget_tokens=0, max_turns=2, session=store)

    async def go() -> tuple[list[Any], list[Any]]:
        for i in range(4):
            await run_with_histtrim(agent, f"turn {i}", trimming=trimming, session=store,
                                    run_config=CONFIG)
        return await store.inner.get_items(), await store.get_items()

    stored, view = asyncio.run(go())
    assert [i["content"] for i in stored if i.get("role") == "user"] == [
        "turn 0", "turn 1", "turn 2", "turn 3"]
    assert view[0]["content"] == BREADCRUMB
    assert [i["content"] for i in view[1:] if i.get("role") == "user"] == ["turn 2", "turn 3"]
    assert store.crumb_present
    assert [(e.reason, e.kept_turns) for e in events] == [(TrimReason.TURN_LIMIT, 2)] * 2
    last = model.calls[-1].input
    assert last[0]["content"] == BREADCRUMB
    assert sum(i.get("content") == BREADCRUMB for i in last) == 1


def _turn(n: int, writer: int = 0) -> list[Any]:
    return [{"role": "user", "content": f"w{writer} q{n}"},
            {"role": "assistant", "content": f"w{writer} a{n}"}]


class CancelledAfterClear(SQLiteSession):
    """A session whose clear completes and then the task is cancelled (what the SDK's
    `SQLiteSession` does when a run is cancelled during the clear)."""

    async def clear_session(self) -> None:
        await super().clear_session()
        raise asyncio.CancelledError


def test_session_keeps_every_item_when_cancelled_while_saving() -> None:
    """Issue 30 item 2: cancelled during the turn-limit rewrite (clear, then add the kept
    items) the session lost the whole conversation (6 items -> 0); nothing is rewritten now."""
    store = HisttrimSession(CancelledAfterClear("c"), max_turns=2)

    async def go() -> list[Any]:
        for n in range(3):
            with contextlib.suppress(asyncio.CancelledError):
                await store.add_items(_turn(n))
        return await store.inner.get_items()

    assert asyncio.run(go()) == [item for n in range(3) for item in _turn(n)]


class CountingSession(SQLiteSession):
    reads = 0

    async def get_items(self, limit: int | None = None) -> list[Any]:
        self.reads += 1
        return await super().get_items(limit)


def test_session_keeps_every_concurrent_save_exactly_once() -> None:
    """Issue 30 items 3 and 4: six writers x 10 turns with max_turns=20 left 21-80 user turns
    (duplicates) and each save re-read the session (quadratic); now every turn is stored
    once, as the bare `SQLiteSession` stores it, and saving reads nothing back."""
    inner = CountingSession("concurrent")
    store = HisttrimSession(inner, max_turns=20)

    async def writer(w: int) -> None:
        for n in range(10):
            await store.add_items(_turn(n, w))
            await asyncio.sleep(0)

    async def go() -> list[Any]:
        await asyncio.gather(*(writer(w) for w in range(6)))
        return await inner.get_items()

    stored = asyncio.run(go())
    users = sorted(i["content"] for i in stored if i["role"] == "user")
    assert users == sorted(f"w{w} q{n}" for w in range(6) for n in range(10))
    assert inner.reads == 1  # the read above; no save read the session


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


PDF = "data:application/pdf;base64," + "JVBERi0xLjcK" * 87_382  # about 1 MiB of base64


def test_an_input_file_is_one_attachment_not_its_base64() -> None:
    """Issue 30 item 5: a 1 MiB PDF (`input_file`) cost 349,546 tokens, its base64 text;
    it is one attachment, priced as an image (decision "File parts")."""
    item = {"role": "user", "content": [
        {"type": "input_text", "text": "read this"},
        {"type": "input_file", "file_data": PDF, "filename": "report.pdf"}]}
    assert estimate_history_tokens(rows([item], None)) == 3 + 1600 + 4


def test_user_text_that_looks_like_a_marker_or_a_carrier_is_text() -> None:
    """Issue 30 item 6: typed `[IMAGE:/a]` was priced as an image (~1,600 tokens each) and a
    message starting with `[Tool results]` opened no turn; the SDK sends both as text."""
    typed = "[IMAGE:/a]" * 10
    for content in (typed, [{"type": "input_text", "text": typed}]):
        assert estimate_history_tokens(rows([{"role": "user", "content": content}], None)) == (
            -(-len(typed) // 4) + 4)
    items = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"},
             {"role": "user", "content": "[Tool results] pasted"}]
    assert index_turns(rows(items, None)).turn_count == 2
    real = {"role": "user", "content": [{"type": "input_image", "image_url": "/a.png"}]}
    assert estimate_history_tokens(rows([real], None)) == 1600 + 4


def _status_error(status: int, message: str) -> openai.APIStatusError:
    request = httpx2.Request("POST", "https://api.example/v1/chat/completions")
    return openai.APIStatusError(
        message, response=httpx2.Response(status, request=request), body={"message": message})


class ContextWindowExceededError(Exception):
    """LiteLLM's exception, by name (LiteLLM itself is not installed here)."""


@pytest.mark.parametrize(
    ("error", "overflows"),
    [
        (overflow(), True),
        (_status_error(400, "prompt is too long: 210000 tokens > 200000 maximum"), True),
        (_status_error(400, "This model's maximum context length is 8192 tokens."), True),
        (_status_error(400, "The input token count (1200000) exceeds the maximum number of "
                            "tokens allowed (1048576)."), True),
        (_status_error(413, "Input is too long for requested model."), True),
        (ContextWindowExceededError("litellm: context window exceeded"), True),
        (_status_error(500, "prompt is too long"), False),
        (_status_error(400, "invalid tool schema"), False),
        (ValueError("prompt is too long"), False),
    ],
    ids=["openai", "anthropic", "vllm", "gemini", "bedrock", "litellm", "500", "other-400",
         "not-http"],
)
def test_run_2_the_overflow_errors_of_other_providers(
    error: BaseException, overflows: bool
) -> None:
    """Issue 31 §6: only OpenAI's `context_length_exceeded` was an overflow; the providers the
    SDK reaches through an OpenAI-compatible client or LiteLLM word theirs differently."""
    assert is_context_overflow(error) is overflows


def test_run_2_an_anthropic_overflow_through_the_sdk_is_retried() -> None:
    events: list[HistoryTrimmed] = []
    model = ScriptedModel([_status_error(400, "prompt is too long: 9 tokens > 8 maximum"),
                           [assistant_message("done")]])
    result = run(HisttrimInputFilter(budget_tokens=0, on_trim=events.append), session(4), model)
    assert result.final_output == "done" and len(events) == 1


def test_a_file_a_tool_returns_is_one_declared_attachment() -> None:
    """Issue 30 item 5, the same rule for a tool's output: an `input_file` it returns is one
    declared attachment (EST-3), never its base64 text."""
    items = [{"role": "user", "content": "q"},
             {"type": "function_call", "call_id": "c1", "name": "fetch", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": [
                 {"type": "input_text", "text": "here"},
                 {"type": "input_file", "file_data": PDF, "filename": "report.pdf"}]}]
    tool = rows(items, None)[-1]
    assert estimate_history_tokens([rows(items, None)[0], tool]) - 5 == 1 + 1600 + 4


def test_ctx_the_filter_sends_the_policys_tool_context_and_keeps_the_run() -> None:
    """CTX-1, CTX-6, CTX-9 in the Agents SDK: a held clear and the reference's collapse edit
    each call's input from the items alone; the run's items are not edited (CTX-5), pairing
    holds, and between clears each call extends the last."""
    from histtrim.policy import Policy, ToolContext
    from histtrim.tool_context import exchange_summary

    items = session(5)
    full = estimate_history_tokens(rows(items))
    held = Policy(tool_context=ToolContext(mode="clear", keep=1, trigger_tokens=full - 1,
                                           hold=True))
    model = scripted()
    result = run(HisttrimInputFilter(budget_tokens=100_000, policy=held), items, model)
    first, second = (call.input for call in model.calls)
    outputs = [i for i in first if i.get("type") == "function_call_output"]
    assert [o["output"] for o in outputs[:4]] == ["[cleared]"] * 4
    assert outputs[4]["output"] == "sunny " * 60
    assert [o["call_id"] for o in outputs] == [f"call_{i}" for i in range(5)]
    assert validate_tool_pairing(rows(first)) == []
    assert second[: len(first)] == first
    assert all(i.get("output") != "[cleared]" for i in result.to_input_list())

    collapse = Policy(tool_context=ToolContext(mode="collapse", keep_turns=1))
    model = scripted()
    run(HisttrimInputFilter(budget_tokens=100_000, policy=collapse), session(4), model)
    sent = model.calls[0].input
    assert sent[1] == {"role": "assistant", "content": exchange_summary(1)}
    assert sent[2] == {"role": "assistant", "content": "answer 0"}
    assert validate_tool_pairing(rows(sent)) == []
