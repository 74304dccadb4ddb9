"""USAGE-7 in the integrations (issue 46, items 1, 2, 3 and 14): a report is kept for the
conversation whose request it counts, found again by that request's rows, so that
- one instance serving more conversations than it remembers histories still applies each
  conversation's report and holds its cut (item 2),
- a stored history trimmed by LangChain's `persist=True` or the SDK's
  `HisttrimSession(max_turns=...)` still gets its reports (item 14),
- the retry after a context overflow has its report recorded and its cut held (item 1),
- a report of 10^30 tokens is refused with a warning (item 3).
The provider counts every request at FACTOR times histtrim's estimate."""

from __future__ import annotations

import asyncio
import logging
from itertools import pairwise
from typing import Any

import pytest

from histtrim import estimate_history_tokens
from histtrim.messages import ChatMessage
from histtrim.policy import SPEC

BUDGET = 1_000
FACTOR = 2
SYSTEM = "You are terse."


def question(c: int, i: int) -> str:
    return f"conversation {c} question {i} " + "x" * (230 + 17 * (i % 5))


def over_after_over(requests: list[list[ChatMessage]]) -> int:
    """Requests over the budget right after one reported over it (the report's crossing is
    to be answered by the next request); 0 when each report is applied."""
    counts = [FACTOR * estimate_history_tokens(rows) for rows in requests]
    return sum(1 for a, b in pairwise(counts) if a > BUDGET and b > BUDGET)


def langchain_agent(usage: Any = None, **kwargs: Any) -> tuple[Any, Any, Any]:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from histtrim.adapters.langchain import from_langchain
    from histtrim.integrations.langchain import HisttrimMiddleware

    class Provider(GenericFakeChatModel):
        seen: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kw: Any) -> Any:
            self.seen.append(list(messages))
            count = FACTOR * estimate_history_tokens(from_langchain(messages))
            reported = count if usage is None else usage
            reply = AIMessage(f"answer {len(self.seen)}", usage_metadata={
                "input_tokens": reported, "output_tokens": 1, "total_tokens": reported + 1})
            return ChatResult(generations=[ChatGeneration(message=reply)])

    middleware = HisttrimMiddleware(budget_tokens=BUDGET, **kwargs)
    model = Provider(messages=iter(()), seen=[])
    return create_agent(model, system_prompt=SYSTEM, middleware=[middleware]), model, middleware


def test_item_2_one_langchain_instance_keeps_each_conversation_s_report() -> None:
    """5 conversations in turn on one middleware (it remembers 4 histories): each report is
    applied to its own conversation's next request (70 of 100 were over the budget)."""
    from langchain_core.messages import HumanMessage

    from histtrim.adapters.langchain import from_langchain

    agent, model, _ = langchain_agent()
    histories: list[list[Any]] = [[] for _ in range(5)]
    per: list[list[list[ChatMessage]]] = [[] for _ in range(5)]
    for i in range(16):
        for c in range(5):
            histories[c] = agent.invoke(
                {"messages": [*histories[c], HumanMessage(question(c, i))]})["messages"]
            per[c].append(from_langchain(model.seen[-1]))
    for c in range(5):
        assert max(FACTOR * estimate_history_tokens(r) for r in per[c]) > BUDGET
        assert over_after_over(per[c]) == 0, c


def test_item_14_langchain_persist_keeps_using_reports() -> None:
    """`persist=True` trims the stored state: the next history no longer extends the one
    the report was made for, yet the report counts the request it was (8 requests in a row
    were at twice the budget)."""
    from langchain_core.messages import HumanMessage

    from histtrim.adapters.langchain import from_langchain

    agent, model, _ = langchain_agent(persist=True)
    messages: list[Any] = []
    for i in range(24):
        messages = agent.invoke({"messages": [*messages, HumanMessage(question(0, i))]})[
            "messages"]
    requests = [from_langchain(r) for r in model.seen]
    assert max(FACTOR * estimate_history_tokens(r) for r in requests) > BUDGET
    assert over_after_over(requests) == 0


def test_item_3_langchain_refuses_a_report_of_ten_to_the_thirty(
        caplog: pytest.LogCaptureFixture) -> None:
    """A 10^30-token report used to cut every request to the newest question."""
    from langchain_core.messages import HumanMessage

    agent, model, _ = langchain_agent(usage=10**30)
    messages: list[Any] = []
    with caplog.at_level(logging.WARNING):
        for i in range(4):
            messages = agent.invoke({"messages": [*messages, HumanMessage(question(0, i))]})[
                "messages"]
    assert [len(r) for r in model.seen] == [2, 4, 6, 8]  # system + every turn: nothing cut
    assert "refused" in caplog.text


def test_item_14_sdk_session_max_turns_keeps_using_reports() -> None:
    """`HisttrimSession(max_turns=...)` hands each run the newest turns: the history moves
    under the report, which still counts the request it was."""
    pytest.importorskip("agents")
    from agents import Agent, RunConfig, SQLiteSession
    from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message
    from agents.usage import Usage

    from histtrim.integrations.openai_agents import (
        HisttrimInputFilter,
        HisttrimSession,
        run_with_histtrim,
        to_rows,
    )

    requests: list[list[ChatMessage]] = []

    def respond(call: ModelCall) -> ModelStep:
        rows = [ChatMessage.system(SYSTEM), *to_rows(call.input)[1]]
        requests.append(rows)
        count = FACTOR * estimate_history_tokens(rows)
        return ModelStep(output=[assistant_message(f"answer {len(requests)}")],
                         usage=Usage(requests=1, input_tokens=count, output_tokens=1,
                                     total_tokens=count + 1))

    session = HisttrimSession(SQLiteSession("s"), max_turns=6)
    trimming = HisttrimInputFilter(budget_tokens=BUDGET, session=session)
    for i in range(16):
        model = ScriptedModel([ModelStep.respond(respond)])
        agent = Agent(name="a", instructions=SYSTEM, model=model)
        asyncio.run(run_with_histtrim(agent, question(0, i), trimming=trimming,
                                      session=session,
                                      run_config=RunConfig(tracing_disabled=True)))
    assert max(FACTOR * estimate_history_tokens(r) for r in requests) > BUDGET
    assert over_after_over(requests) == 0


def test_item_1_langchain_overflow_retry_reports_and_holds_its_cut() -> None:
    """After an overflow the retry's report is recorded and its cut held: the next calls of
    the resumed session no longer overflow (4 of 4 did)."""
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.exceptions import ContextOverflowError
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from histtrim.adapters.langchain import from_langchain
    from histtrim.integrations.langchain import HisttrimMiddleware

    window = 3 * BUDGET

    class Provider(GenericFakeChatModel):
        seen: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field
        overflows: int = 0

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kw: Any) -> Any:
            self.seen.append(list(messages))
            count = FACTOR * estimate_history_tokens(from_langchain(messages))
            if count > window:
                self.overflows += 1
                raise ContextOverflowError("prompt is too long")
            reply = AIMessage("ok", usage_metadata={
                "input_tokens": count, "output_tokens": 1, "total_tokens": count + 1})
            return ChatResult(generations=[ChatGeneration(message=reply)])

    # a long stored history (a resumed session) under a budget the estimate thinks it fits
    middleware = HisttrimMiddleware(budget_tokens=2 * window, policy=SPEC)
    model = Provider(messages=iter(()), seen=[])
    agent = create_agent(model, system_prompt=SYSTEM, middleware=[middleware])
    stored: list[Any] = []
    for i in range(8):
        stored += [HumanMessage(question(0, i) + "y" * 800), AIMessage("ok")]
    messages = stored
    for i in range(4):
        messages = agent.invoke({"messages": [*messages, HumanMessage(f"next {i}")]})[
            "messages"]
    assert model.overflows == 1


def test_item_1_pydantic_ai_overflow_retry_reports_and_holds_its_cut() -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import ModelContextWindowExceededError
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart
    from pydantic_ai.messages import UserPromptPart as Prompt
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    from histtrim.integrations.pydantic_ai import HisttrimCapability, to_rows

    window, overflows = 3 * BUDGET, []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        count = FACTOR * estimate_history_tokens(to_rows(messages)[1])
        if count > window:
            overflows.append(count)
            raise ModelContextWindowExceededError("function:fake", "prompt is too long")
        return ModelResponse(parts=[TextPart("ok")],
                             usage=RequestUsage(input_tokens=count, output_tokens=1))

    capability = HisttrimCapability(budget_tokens=2 * window)
    agent = Agent(FunctionModel(model), system_prompt=SYSTEM, capabilities=[capability])
    history: list[ModelMessage] = []
    for i in range(8):
        history += [ModelRequest(parts=[Prompt(question(0, i) + "y" * 800)]),
                    ModelResponse(parts=[TextPart("ok")])]
    for i in range(4):
        history = agent.run_sync(f"next {i}", message_history=history).all_messages()
    assert len(overflows) == 1


def test_item_1_sdk_overflow_retry_reports_and_holds_its_cut() -> None:
    pytest.importorskip("agents")
    import httpx
    import openai
    from agents import Agent, RunConfig
    from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message
    from agents.usage import Usage

    from histtrim.integrations.openai_agents import (
        HisttrimInputFilter,
        run_with_histtrim,
        to_rows,
    )

    window, overflows = 3 * BUDGET, []

    def respond(call: ModelCall) -> ModelStep:
        rows = [ChatMessage.system(SYSTEM), *to_rows(call.input)[1]]
        count = FACTOR * estimate_history_tokens(rows)
        if count > window:
            overflows.append(count)
            request = httpx.Request("POST", "https://api.openai.com/v1/responses")
            raise openai.BadRequestError(
                "Error code: 400 - context_length_exceeded",
                response=httpx.Response(400, request=request),
                body={"message": "maximum context length", "code": "context_length_exceeded"})
        return ModelStep(output=[assistant_message("ok")], usage=Usage(
            requests=1, input_tokens=count, output_tokens=1, total_tokens=count + 1))

    trimming = HisttrimInputFilter(budget_tokens=2 * window)
    items: list[Any] = []
    for i in range(8):
        items += [{"role": "user", "content": question(0, i) + "y" * 800},
                  {"role": "assistant", "content": "ok"}]
    for i in range(4):
        model = ScriptedModel([ModelStep.respond(respond), ModelStep.respond(respond)])
        agent = Agent(name="a", instructions=SYSTEM, model=model)
        result = asyncio.run(run_with_histtrim(
            agent, [*items, {"role": "user", "content": f"next {i}"}], trimming=trimming,
            run_config=RunConfig(tracing_disabled=True)))
        items = result.to_input_list()
    assert len(overflows) == 1


def test_the_book_is_bounded_in_bytes_and_finds_each_conversation() -> None:
    """10,000 conversations' reports on one instance: the book never holds more than its
    limit in bytes (the oldest go first), the newest are found by their rows, and a history
    holding none of a report's rows finds nothing."""
    from histtrim.integrations._trimmer import Priced, ReportBook, Seen

    def history(c: int, turns: int) -> list[Priced]:
        out = []
        for i in range(turns):
            for row in (ChatMessage.user(f"c{c} q{i}"), ChatMessage.assistant(f"c{c} a{i}")):
                out.append(Priced(row, 1, 1))
        return out

    book = ReportBook(limit=64 * 1024)
    for c in range(10_000):
        seen = Seen([], [], history(c, 3), floor=2, report=(5000, 900, 0), pairs=((900, 5000),))
        book.write(seen)
        assert book.bytes <= book.limit
    assert 0 < len(book) < 10_000
    later = Seen([], [], history(9_999, 5))  # the newest conversation, two turns on
    book.restore(later)
    assert later.report == (5000, 900, 0) and later.floor == 2 and later.pairs == ((900, 5000),)
    forgotten = Seen([], [], history(0, 5))
    book.restore(forgotten)
    assert forgotten.report is None and forgotten.floor == 0
    stranger = Seen([], [], history(10_001, 5))
    book.restore(stranger)
    assert stranger.report is None


@pytest.mark.parametrize("calibrate", [False, True])
def test_usage_8_langchain_calibrated_prefix_holds_requests_under_the_budget(
        calibrate: bool) -> None:
    """USAGE-8: a provider that adds a hidden prefix of 600 tokens and counts the rows at
    1.5x. The single ratio (the reference) lets a request over the budget after each cut;
    the calibrated prefix, fitted on the session's reports, keeps every request after the
    first report within it, and its events record the prefix and the ratio."""
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from histtrim.adapters.langchain import from_langchain
    from histtrim.events import HistoryTrimmed
    from histtrim.integrations.langchain import HisttrimMiddleware
    from histtrim.policy import Policy

    counts: list[int] = []

    class Provider(GenericFakeChatModel):
        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kw: Any) -> Any:
            count = 600 + 3 * estimate_history_tokens(from_langchain(messages)) // 2
            counts.append(count)
            reply = AIMessage("ok", usage_metadata={
                "input_tokens": count, "output_tokens": 1, "total_tokens": count + 1})
            return ChatResult(generations=[ChatGeneration(message=reply)])

    events: list[HistoryTrimmed] = []
    policy = Policy(hidden_prefix="calibrated") if calibrate else SPEC
    middleware = HisttrimMiddleware(budget_tokens=2 * BUDGET, policy=policy,
                                    on_trim=events.append)
    agent = create_agent(Provider(messages=iter(())), system_prompt=SYSTEM,
                         middleware=[middleware])
    messages: list[Any] = []
    for i in range(30):
        messages = agent.invoke({"messages": [*messages, HumanMessage(question(0, i))]})[
            "messages"]
    over = [c for c in counts[2:] if c > 2 * BUDGET]
    if calibrate:
        assert over == []
        assert events and all(e.hidden_prefix is not None and e.ratio for e in events)
        assert all(590 <= e.hidden_prefix <= 610 for e in events if e.hidden_prefix)
    else:
        assert len(over) >= 3
        assert all(e.hidden_prefix is None and "hidden_prefix" not in e.to_json()
                   for e in events)


def test_the_integrations_price_the_tool_schemas_they_are_given() -> None:
    """Each framework hands its tool schemas to the model call; the integrations price them
    (`schema_tokens`, EST-1 per tool) as the reports' `tool_schema_tokens`, and a schema they
    cannot read counts 0 rather than failing the run."""
    from histtrim.estimate import estimate_tool_schemas
    from histtrim.integrations._trimmer import schema_tokens

    params = {"type": "object", "properties": {"path": {"type": "string"}},
              "required": ["path"]}
    expected = estimate_tool_schemas([{"name": "read", "description": "Read a file.",
                                       "parameters": params}])
    assert schema_tokens([("read", "Read a file.", params)]) == expected > 0
    assert schema_tokens([("read", None, None)]) > 0
    assert schema_tokens([(object(), object(), {"bad": float("nan")})]) == 0
    pytest.importorskip("langchain_core")
    from langchain_core.tools import tool

    from histtrim.integrations.langchain import _tool_schema

    @tool
    def read(path: str) -> str:
        """Read a file."""
        return path

    name, text, schema = _tool_schema(read)
    assert (name, text) == ("read", "Read a file.") and "path" in str(schema)
    assert _tool_schema({"type": "function", "function": {
        "name": "read", "description": "Read a file.", "parameters": params}}) == (
        "read", "Read a file.", params)
