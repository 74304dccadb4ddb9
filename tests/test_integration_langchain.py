"""histtrim inside a LangChain v1 agent, driven by LangChain's own fake chat model: whole-turn
trim of each request (KEEP-1, RUN-1), turn limit (KEEP-2, LIMIT-1), breadcrumb (SEEN-1), event
(SEEN-2), overflow retry at 2/3 (RUN-2), pairing on every request (PAIR-1), no trim no change
(TURN-6), and the stored-state variant."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool

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
from histtrim.adapters.langchain import from_langchain
from histtrim.integrations._trimmer import ToolPairingError
from histtrim.integrations.langchain import (
    BREADCRUMB_ID,
    HisttrimMiddleware,
    breadcrumb,
    has_breadcrumb,
)
from histtrim.policy import SPEC

SYSTEM = "You are terse."


class FakeModel(GenericFakeChatModel):
    """LangChain's fake chat model, with tools bound (to itself) and every request recorded."""

    seen: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field, copied per model
    overflows: int = 0

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeModel:
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        if self.overflows:
            self.overflows -= 1
            raise ContextOverflowError("prompt is too long (fake)")
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city} " * 20


def session(turns: int) -> list[BaseMessage]:
    """`turns` finished turns, each with one tool round, then a new question."""
    messages: list[BaseMessage] = []
    for i in range(turns):
        messages += [
            HumanMessage(f"question {i} " + "x" * 400),
            AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "P"},
                                       "id": f"call_{i}"}]),
            ToolMessage("sunny " * 60, tool_call_id=f"call_{i}"),
            AIMessage(f"answer {i}"),
        ]
    return [*messages, HumanMessage("and now?")]


def run(middleware: HisttrimMiddleware, messages: list[BaseMessage], *, overflows: int = 0,
        tool_round: bool = True) -> tuple[FakeModel, dict[str, Any]]:
    replies: list[AIMessage] = []
    if tool_round:
        replies.append(AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "R"},
                                                  "id": "call_new"}]))
    replies.append(AIMessage("done"))
    model = FakeModel(messages=iter(replies), overflows=overflows, seen=[])
    agent = create_agent(model, tools=[get_weather], system_prompt=SYSTEM,
                         middleware=[middleware])
    return model, agent.invoke({"messages": messages})


def test_keep_1_each_request_is_trimmed_by_whole_turns_with_breadcrumb_and_event() -> None:
    """KEEP-1, RUN-1, SEEN-1, SEEN-2: every model call fits, starts with the system prompt
    and the breadcrumb, and sends the state's own message objects."""
    events: list[HistoryTrimmed] = []
    messages = session(6)
    model, out = run(HisttrimMiddleware(budget_tokens=700, on_trim=events.append), messages)
    assert len(model.seen) == 2
    for sent in model.seen:
        assert isinstance(sent[0], SystemMessage) and sent[0].content == SYSTEM
        assert isinstance(sent[1], HumanMessage) and sent[1].content == BREADCRUMB
        assert estimate_history_tokens(from_langchain(sent)) <= 700
        assert validate_tool_pairing(from_langchain(sent)) == []
        state = {id(m) for m in out["messages"]}
        assert all(id(m) in state for m in sent[2:])
    assert [e.reason for e in events] == [TrimReason.TOKEN_BUDGET] * 2
    assert events[0].budget == 700 and events[0].tokens_after <= 700
    assert len(out["messages"]) == len(messages) + 3  # the stored history is not changed


def test_turn_6_no_trim_sends_the_history_unchanged() -> None:
    """TURN-6: under the budget, the model gets exactly the state's messages, no event."""
    events: list[HistoryTrimmed] = []
    messages = session(2)
    model, _ = run(HisttrimMiddleware(budget_tokens=100_000, on_trim=events.append), messages,
                   tool_round=False)
    assert model.seen[0][1:] == messages
    assert all(a is b for a, b in zip(model.seen[0][1:], messages, strict=True))
    assert events == []


def test_keep_2_turn_limit_from_the_runtime_profile() -> None:
    """KEEP-2, LIMIT-1: `max_history_messages` counts whole turns; the event names the limit
    and reports the budget in force beside it (BUDGET-2: 0 turns proactive trimming off)."""
    runtime = resolve_runtime(RuntimeProfile(max_history_messages=2, max_context_tokens=0),
                              ProviderProfile(model="m", context_window=128_000), None)
    events: list[HistoryTrimmed] = []
    model, _ = run(HisttrimMiddleware(runtime, on_trim=events.append), session(5),
                   tool_round=False)
    sent = model.seen[0]
    humans = [m for m in sent if isinstance(m, HumanMessage) and m.id != BREADCRUMB_ID]
    assert [h.content[:10] for h in humans] == ["question 4", "and now?"]
    assert [(e.reason, e.kept_turns, e.budget) for e in events] == [
        (TrimReason.TURN_LIMIT, 2, 0)]


def test_budget_comes_from_the_resolved_runtime() -> None:
    """BUDGET-3, BUDGET-7: a ratio of the selected model's window is the request budget."""
    runtime = resolve_runtime(RuntimeProfile(context_compact_ratio=0.5),
                              ProviderProfile(model="m", context_window=1_200), None)
    middleware = HisttrimMiddleware(runtime)
    assert middleware.trimmer.budget_tokens == 600
    model, _ = run(middleware, session(6), tool_round=False)
    assert estimate_history_tokens(from_langchain(model.seen[0])) <= 600


def test_run_2_overflow_retries_once_at_two_thirds() -> None:
    """RUN-2: on ContextOverflowError the request is trimmed to 2/3 of its estimate and sent
    once more; the run finishes."""
    events: list[HistoryTrimmed] = []
    model, out = run(HisttrimMiddleware(budget_tokens=0, on_trim=events.append), session(6),
                     overflows=1)
    first, retry = model.seen[0], model.seen[1]
    target = SPEC.reactive_tokens(estimate_history_tokens(from_langchain(first)))
    assert estimate_history_tokens(from_langchain(retry)) <= target
    assert retry[1].content == BREADCRUMB and retry[0].content == SYSTEM
    assert [(e.reason, e.budget) for e in events] == [(TrimReason.CONTEXT_OVERFLOW, target)]
    assert out["messages"][-1].content == "done"
    for sent in model.seen:
        assert validate_tool_pairing(from_langchain(sent)) == []


def test_run_2_a_second_overflow_or_a_single_turn_is_raised() -> None:
    with pytest.raises(ContextOverflowError):
        run(HisttrimMiddleware(budget_tokens=0), session(6), overflows=2)
    with pytest.raises(ContextOverflowError):  # one turn: nothing older to drop
        run(HisttrimMiddleware(budget_tokens=0), session(0), overflows=1)


def test_async_agent_runs_the_async_hooks() -> None:
    events: list[HistoryTrimmed] = []
    model = FakeModel(messages=iter([AIMessage("done")]), overflows=1, seen=[])
    agent = create_agent(model, tools=[get_weather], system_prompt=SYSTEM,
                         middleware=[HisttrimMiddleware(budget_tokens=700, persist=True,
                                                        on_trim=events.append)])
    out = asyncio.run(agent.ainvoke({"messages": session(6)}))
    assert out["messages"][-1].content == "done"
    assert len(model.seen) == 2 and len(events) == 2  # state trim, then the reactive one


def test_persist_trims_the_stored_state_once() -> None:
    """`persist=True`: `before_model` removes the dropped turns from the graph state, with the
    breadcrumb stored after them; later calls find it by its id and trim no more."""
    events: list[HistoryTrimmed] = []
    messages = session(6)
    _, out = run(HisttrimMiddleware(budget_tokens=700, persist=True, on_trim=events.append),
                 messages)
    stored = out["messages"]
    assert stored[0].id == BREADCRUMB_ID and stored[0].content == BREADCRUMB
    assert len(stored) < len(messages)
    assert sum(m.id == BREADCRUMB_ID for m in stored) == 1
    assert validate_tool_pairing(from_langchain(stored)) == []
    assert events[0].reason is TrimReason.TOKEN_BUDGET


def test_a_broken_history_is_not_sent() -> None:
    """PAIR-1: a ToolMessage whose call is not in the history is refused before the call."""
    broken = [HumanMessage("hi"), ToolMessage("x", tool_call_id="ghost")]
    with pytest.raises(ToolPairingError, match="ghost"):
        run(HisttrimMiddleware(budget_tokens=0), broken, tool_round=False)


def test_token_counter_prices_the_rows() -> None:
    events: list[HistoryTrimmed] = []

    def words(row: Any) -> int:
        return len(row.content.split())

    run(HisttrimMiddleware(budget_tokens=60, token_counter=words, on_trim=events.append),
        session(6), tool_round=False)
    assert events and all(e.counter == "words" for e in events)


def test_bad_arguments_are_one_line_errors() -> None:
    with pytest.raises(ValueError, match="budget_tokens"):
        HisttrimMiddleware(budget_tokens=-1)
    with pytest.raises(ValueError, match="persist"):
        HisttrimMiddleware(persist="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="runtime or a budget"):
        HisttrimMiddleware(resolve_runtime(RuntimeProfile(), None, None), budget_tokens=5)


@st.composite
def histories(draw: st.DrawFn) -> list[BaseMessage]:
    messages: list[BaseMessage] = []
    if draw(st.booleans()):
        messages.append(SystemMessage(draw(st.text(max_size=20))))
    for t in range(draw(st.integers(0, 6))):
        messages.append(HumanMessage(draw(st.text(max_size=80))))
        for r in range(draw(st.integers(0, 2))):
            ids = [f"c{t}_{r}_{k}" for k in range(draw(st.integers(1, 2)))]
            messages.append(AIMessage("", tool_calls=[
                {"name": "f", "args": {"a": draw(st.integers())}, "id": i} for i in ids]))
            messages += [ToolMessage(draw(st.text(max_size=60)), tool_call_id=i) for i in ids]
        messages.append(AIMessage(draw(st.text(max_size=40))))
    return messages


@given(histories(), st.integers(0, 300), st.sampled_from([None, 1, 2, 3]))
def test_round_trip_kept_messages_are_the_inputs_own(
    messages: list[BaseMessage], budget: int, max_turns: int | None
) -> None:
    """Rows and back without loss: the trim keeps a prefix of system messages and a suffix of
    whole turns, as the same objects; kept + dropped = the input; pairing holds (PAIR-1)."""
    middleware = HisttrimMiddleware(budget_tokens=budget, max_turns=max_turns)
    done = middleware.trim(messages)
    kept = [m for m in done.units if m.id != BREADCRUMB_ID]
    prefix = len([m for m in kept if isinstance(m, SystemMessage)])
    assert all(a is b for a, b in zip(kept[:prefix], messages, strict=False))
    tail = kept[prefix:]
    assert all(a is b for a, b in zip(tail, messages[len(messages) - len(tail):], strict=True))
    assert done.rows == from_langchain(done.units)
    assert validate_tool_pairing(done.rows) == []
    if not done.trimmed:
        assert done.units == messages  # TURN-6


def test_chat_and_function_messages_run_as_without_the_middleware() -> None:
    """Issue 30 item 8: `ChatMessage` and `FunctionMessage` are part of `AnyMessage` and run
    in `create_agent`; the middleware refused them, so every model call failed. A
    `ChatMessage`'s role is read as the providers read it."""
    history: list[BaseMessage] = [
        ChatMessage(content="an old question " + "x" * 400, role="user"),
        ChatMessage(content="an old answer", role="assistant"),
        FunctionMessage(content='{"temp": 21}', name="get_temp"),
        HumanMessage("and now?"),
    ]
    model, result = run(HisttrimMiddleware(budget_tokens=0), history, tool_round=False)
    assert result["messages"][-1].content == "done"
    assert model.seen[0][1:] == history
    assert index_turns(from_langchain(history)).turn_count == 2
    system = from_langchain([ChatMessage(content="be brief", role="developer")])
    assert system[0].role == "system"


def test_a_message_with_the_breadcrumb_id_is_not_a_breadcrumb() -> None:
    """Issue 30 item 9: a client sets message ids (LangGraph's server API), so one using the
    breadcrumb's id pinned its own message as the breadcrumb: never dropped, never a turn."""
    pinned = HumanMessage("remember: you are a pirate " + "y" * 400, id=BREADCRUMB_ID)
    middleware = HisttrimMiddleware(budget_tokens=0, max_turns=2)
    done = middleware.trim([SystemMessage(SYSTEM), pinned, *session(3)])
    assert pinned not in done.units
    assert not has_breadcrumb([SystemMessage(SYSTEM), pinned])
    assert has_breadcrumb([SystemMessage(SYSTEM), breadcrumb()])


def test_a_file_block_is_one_attachment_and_typed_markers_are_text() -> None:
    """Issue 30 items 5 and 6: a 1 MiB PDF `file` block cost 349,546 tokens (its JSON) and
    typed `[IMAGE:/a]` cost an image each; LangChain sends a file and a text as such."""
    pdf = {"type": "file", "base64": "JVBERi0xLjcK" * 87_382, "mime_type": "application/pdf"}
    rows = from_langchain([HumanMessage(content=[{"type": "text", "text": "read"}, pdf])])
    assert estimate_history_tokens(rows) == 1 + 1600 + 4
    typed = "[IMAGE:/a]" * 10
    for content in (typed, [{"type": "text", "text": typed}]):
        assert estimate_history_tokens(from_langchain([HumanMessage(content)])) == (
            -(-len(typed) // 4) + 4)
    pasted = from_langchain([HumanMessage("q"), AIMessage("a"), HumanMessage("[Tool results] x")])
    assert index_turns(pasted).turn_count == 2


def test_a_file_a_tool_returns_is_one_declared_attachment() -> None:
    """Issue 30 item 5: a `file` block in a `ToolMessage` is one declared attachment (EST-3),
    never its JSON."""
    pdf = {"type": "file", "base64": "JVBERi0xLjcK" * 87_382, "mime_type": "application/pdf"}
    call = AIMessage("", tool_calls=[{"name": "fetch", "args": {}, "id": "c1"}])
    rows = from_langchain([HumanMessage("q"), call,
                           ToolMessage(content=[{"type": "text", "text": "here"}, pdf],
                                       tool_call_id="c1")])
    assert estimate_history_tokens([rows[0], rows[2]]) - 5 == 1 + 1600 + 4


def test_ctx_the_middleware_sends_the_policys_tool_context_and_keeps_the_state() -> None:
    """CTX-1, CTX-6, CTX-9 in LangChain: a held clear (and the reference's collapse) edits
    each request from the state alone; the state keeps every message (CTX-5), pairing holds,
    and between clears each request extends the last."""
    from histtrim.policy import Policy, ToolContext
    from histtrim.tool_context import exchange_summary

    messages = session(5)
    full = estimate_history_tokens(from_langchain([SystemMessage(SYSTEM), *messages]))
    held = Policy(tool_context=ToolContext(mode="clear", keep=1, trigger_tokens=full - 1,
                                           hold=True))
    model, out = run(HisttrimMiddleware(budget_tokens=100_000, policy=held), messages)
    first, second = model.seen
    tools = [m for m in first if isinstance(m, ToolMessage)]
    assert [m.content for m in tools[:4]] == ["[cleared]"] * 4 and tools[4].content != "[cleared]"
    assert [m.tool_call_id for m in tools] == [f"call_{i}" for i in range(5)]
    assert validate_tool_pairing(from_langchain(first)) == []
    assert second[: len(first)] == first  # no new clear: the prefix is the same
    assert all(not isinstance(m, ToolMessage) or m.content != "[cleared]"
               for m in out["messages"])

    collapse = Policy(tool_context=ToolContext(mode="collapse", keep_turns=1))
    model, out = run(HisttrimMiddleware(budget_tokens=100_000, policy=collapse), session(4))
    sent = model.seen[0]
    assert [m.content for m in sent[1:4]] == ["question 0 " + "x" * 400,
                                            exchange_summary(1), "answer 0"]
    assert validate_tool_pairing(from_langchain(sent)) == []
    assert len(out["messages"]) == len(session(4)) + 3
