"""CACHE-1..3 in the frameworks: each integration, given a clock (a list of times: every test
runs on a given clock), cuts a cold request over `cut_from` of the budget to the cold
low-water mark now, as the Agent does (`ColdCache.cold_trim`, one mechanism), says so in its
event (`cold_cache`), and then holds that cut: the requests after it extend it row for row.
Warm (or with no clock) nothing changes. Driven by each framework's own fake model."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest

from histtrim.events import HistoryTrimmed, TrimReason
from histtrim.messages import ChatMessage
from histtrim.policy import ColdCache, Policy, ToolContext

COLD = Policy(token_trim_target=Fraction(7, 10),
              cold_cache=ColdCache(lifetime=300, cut_from=Fraction(3, 4)))
TURNS = 14
BUDGET = 2_400
SYSTEM = "You are terse."
IDLE_FROM = 7
"""From this turn on, the user comes back after 1,000 idle seconds (the cache is cold)."""


def question(i: int) -> str:
    return f"question {i} " + "x" * (200 + 37 * (i % 7))


def weather(city: str) -> str:
    return f"sunny in {city} " * 20


def clock(idle: bool) -> Callable[[], float]:
    """A given clock, called once per model call (two a turn): 10 s between calls, and with
    `idle` 1,000 s before the first call of each turn from `IDLE_FROM` on."""
    state = {"calls": 0, "now": 0.0}

    def now() -> float:
        calls = state["calls"]
        state["calls"] = calls + 1
        turn, first = divmod(int(calls), 2)
        state["now"] += 1000.0 if idle and first == 0 and turn >= IDLE_FROM else 10.0
        return state["now"]

    return now


def langchain_run(
        policy: Policy, clock: Callable[[], float] | None,
        events: list[HistoryTrimmed], budget: int = BUDGET,
) -> list[list[ChatMessage]]:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
    from langchain_core.tools import tool

    from histtrim.adapters.langchain import from_langchain
    from histtrim.integrations.langchain import HisttrimMiddleware

    class FakeModel(GenericFakeChatModel):
        seen: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field

        def bind_tools(self, tools: Any, **kwargs: Any) -> FakeModel:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> Any:
            self.seen.append(list(messages))
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return weather(city)

    middleware = HisttrimMiddleware(budget_tokens=budget, policy=policy, clock=clock,
                                    on_trim=events.append)
    messages: list[BaseMessage] = []
    sent: list[list[ChatMessage]] = []
    for i in range(TURNS):
        replies = [
            AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": f"C{i}"},
                                       "id": f"call_{i}"}]),
            AIMessage(f"answer {i}"),
        ]
        model = FakeModel(messages=iter(replies), seen=[])
        agent = create_agent(model, tools=[get_weather], system_prompt=SYSTEM,
                             middleware=[middleware])
        messages = agent.invoke({"messages": [*messages, HumanMessage(question(i))]})[
            "messages"]
        sent += [from_langchain(request) for request in model.seen]
    return sent


def pydantic_ai_run(
        policy: Policy, clock: Callable[[], float] | None,
        events: list[HistoryTrimmed], budget: int = BUDGET,
) -> list[list[ChatMessage]]:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from histtrim.integrations.pydantic_ai import HisttrimCapability, to_rows

    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        turn = sum(1 for m in messages if isinstance(m, ModelResponse)) // 2
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart(f"answer {turn}")])
        return ModelResponse(parts=[ToolCallPart("get_weather", {"city": f"C{turn}"},
                                                 tool_call_id=f"call_{turn}")])

    capability = HisttrimCapability(budget_tokens=budget, policy=policy, clock=clock,
                                    on_trim=events.append)
    agent = Agent(FunctionModel(model), system_prompt=SYSTEM, capabilities=[capability])

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return weather(city)

    history: list[ModelMessage] = []
    for i in range(TURNS):
        history = agent.run_sync(question(i), message_history=history).all_messages()
    return [to_rows(request)[1] for request in seen]


def openai_agents_run(
        policy: Policy, clock: Callable[[], float] | None,
        events: list[HistoryTrimmed], budget: int = BUDGET,
) -> list[list[ChatMessage]]:
    pytest.importorskip("agents")
    from agents import Agent, RunConfig, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    from histtrim.integrations.openai_agents import (
        HisttrimInputFilter,
        run_with_histtrim,
        to_rows,
    )

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return weather(city)

    trimming = HisttrimInputFilter(budget_tokens=budget, policy=policy, clock=clock,
                                   on_trim=events.append)
    system = [ChatMessage.system(SYSTEM)]
    items: list[Any] = []
    sent: list[list[ChatMessage]] = []
    for i in range(TURNS):
        model = ScriptedModel([
            [function_call("get_weather", {"city": f"C{i}"}, call_id=f"call_{i}")],
            [assistant_message(f"answer {i}")],
        ])
        agent = Agent(name="weather", instructions=SYSTEM, model=model, tools=[get_weather])
        result = asyncio.run(run_with_histtrim(
            agent, [*items, {"role": "user", "content": question(i)}], trimming=trimming,
            run_config=RunConfig(tracing_disabled=True),
        ))
        items = result.to_input_list()
        sent += [[*system, *to_rows(call.input)[1]] for call in model.calls]
    return sent


RUNS = {"langchain": langchain_run, "pydantic-ai": pydantic_ai_run,
        "openai-agents": openai_agents_run}


def first_cut(sent: list[list[ChatMessage]]) -> int:
    """The first request that is not the whole history (its second row is not the first
    question: the breadcrumb or a later turn stands there)."""
    return next(k for k, rows in enumerate(sent) if not rows[1].content.startswith("question 0 "))


def extends(longer: list[ChatMessage], shorter: list[ChatMessage]) -> bool:
    return len(longer) >= len(shorter) and longer[: len(shorter)] == shorter


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_cold_request_cuts_deep_and_the_cut_is_held(name: str) -> None:
    run = RUNS[name]
    plain: list[HistoryTrimmed] = []
    warm: list[HistoryTrimmed] = []
    cold: list[HistoryTrimmed] = []
    unclocked = run(COLD, None, plain)
    warm_sent = run(COLD, clock(idle=False), warm)
    cold_sent = run(COLD, clock(idle=True), cold)
    # warm, the clock changes nothing: today's cut, no cold event
    assert warm_sent == unclocked and warm == plain and plain
    assert all(e.cold_cache is None for e in warm)
    # cold: the first cut comes earlier, at a turn's first request after the idle gap,
    # before the budget forces it, down to 7/10 of the budget
    at = first_cut(cold_sent)
    assert at < first_cut(warm_sent) and at % 2 == 0 and at >= 2 * IDLE_FROM
    event = next(e for e in cold if e.cold_cache)
    assert event.reason is TrimReason.TOKEN_BUDGET and event.target == "7/10"
    assert event.tokens_before <= BUDGET and event.tokens_after <= BUDGET * 7 // 10
    assert event.budget == BUDGET * 7 // 10
    # the cut is held: the call after the cold cut extends it row for row
    assert extends(cold_sent[at + 1], cold_sent[at])


def test_a_clock_is_a_callable_and_a_failing_clock_is_no_time() -> None:
    from histtrim.integrations._trimmer import Trimmer

    with pytest.raises(ValueError, match="clock"):
        Trimmer(budget_tokens=100, clock=3.0)  # type: ignore[arg-type]
    broken = Trimmer(budget_tokens=100, policy=COLD, clock=lambda: float("nan"))
    assert broken._now() is None  # logged; the cache is never cold then


CLEAR = COLD.model_copy(update={"tool_context": ToolContext(
    mode="clear", keep=1, trigger_tokens=1_600, hold=True, clear_to=Fraction(1, 2),
    clear_at_least=0)})


def cleared(request: list[ChatMessage]) -> int:
    return sum("[cleared]" in row.content for row in request)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_cold_request_clears_in_one_batch_and_the_clear_is_held(name: str) -> None:
    run = RUNS[name]
    warm_events: list[HistoryTrimmed] = []
    events: list[HistoryTrimmed] = []
    warm = run(CLEAR, clock(idle=False), warm_events, 100_000)
    cold = run(CLEAR, clock(idle=True), events, 100_000)
    assert not warm_events and not events  # no whole turn dropped: only the clear acts
    first_warm = next(k for k, rows in enumerate(warm) if cleared(rows))
    first_cold = next(k for k, rows in enumerate(cold) if cleared(rows))
    # the cold request (a turn's first after the idle gap) clears before the trigger
    # forces it, several results at once; the next request extends it row for row
    assert first_cold < first_warm and first_cold % 2 == 0 and first_cold >= 2 * IDLE_FROM
    assert cleared(cold[first_cold]) >= 2
    assert extends(cold[first_cold + 1], cold[first_cold])


@pytest.mark.parametrize("name", sorted(RUNS))
def test_with_the_cut_and_the_clear_the_prefix_moves_only_on_cold_requests(name: str) -> None:
    # the cold cut and the cold clear together (a 2,400-token budget): every request that
    # does not extend the one before is a cold one (a turn's first after the idle gap)
    events: list[HistoryTrimmed] = []
    sent = RUNS[name](CLEAR, clock(idle=True), events, BUDGET)
    moved = [k for k in range(1, len(sent)) if not extends(sent[k], sent[k - 1])]
    assert moved and all(k % 2 == 0 and k >= 2 * IDLE_FROM for k in moved)
    assert any(cleared(rows) for rows in sent) and any(e.cold_cache for e in events)
