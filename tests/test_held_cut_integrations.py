"""RUN-1, SEEN-1 in the frameworks: each integration, given the framework's whole history on
every model call and `Policy(token_trim_target=7/10)`, rewrites the prompt prefix as often as
the Agent would on the same session (±1) and pays the Agent's input cost with a prompt cache
(within 10 %, both cache models). Driven by each framework's own fake model."""

from __future__ import annotations

import asyncio
from fractions import Fraction
from typing import Any

import pytest

from histtrim.messages import ChatMessage
from histtrim.policy import Policy
from histtrim.review.prefix import agent_prompts, prefix_cost, request_prompts

LOW = Policy(token_trim_target=Fraction(7, 10))
TURNS = 36
BUDGET = 2_400
SYSTEM = "You are terse."


def question(i: int) -> str:
    return f"question {i} " + "x" * (200 + 37 * (i % 7))


def weather(city: str) -> str:
    return f"sunny in {city} " * 20


def assert_pays_what_the_agent_pays(
    name: str, sent: list[list[ChatMessage]], history: list[ChatMessage]
) -> None:
    whole = prefix_cost(request_prompts(sent))
    agent = prefix_cost(agent_prompts(name, history, BUDGET, LOW))
    assert agent.cut_moves >= 3  # over the budget several times
    assert whole.requests == agent.requests == 2 * TURNS
    assert abs(whole.cut_moves - agent.cut_moves) <= 1
    assert whole.anthropic == pytest.approx(agent.anthropic, rel=0.1)
    assert whole.openai == pytest.approx(agent.openai, rel=0.1)


def test_langchain_middleware_holds_the_agents_cut() -> None:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
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

    middleware = HisttrimMiddleware(budget_tokens=BUDGET, policy=LOW)
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
    history = from_langchain([SystemMessage(SYSTEM), *messages])
    assert_pays_what_the_agent_pays("langchain", sent, history)


def test_pydantic_ai_capability_holds_the_agents_cut() -> None:
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

    capability = HisttrimCapability(budget_tokens=BUDGET, policy=LOW)
    agent = Agent(FunctionModel(model), system_prompt=SYSTEM, capabilities=[capability])

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return weather(city)

    history: list[ModelMessage] = []
    for i in range(TURNS):
        history = agent.run_sync(question(i), message_history=history).all_messages()
    sent = [to_rows(request)[1] for request in seen]
    assert_pays_what_the_agent_pays("pydantic-ai", sent, to_rows(history)[1])


def test_openai_agents_filter_holds_the_agents_cut() -> None:
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

    trimming = HisttrimInputFilter(budget_tokens=BUDGET, policy=LOW)
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
    assert_pays_what_the_agent_pays("openai-agents", sent, [*system, *to_rows(items)[1]])
