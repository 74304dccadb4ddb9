"""What the framework integrations' tests drive them with: LangChain's fake chat model that
records every request (`langchain_model`), and the weather session (the held-cut and cold-cache
tests): one system prompt, `turns` questions, each answered by one tool call and a reply,
driven by each framework's own fake model. Each run returns every request the model received
and the framework's whole history at the end, as histtrim rows."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from histtrim.events import HistoryTrimmed
from histtrim.messages import ChatMessage
from histtrim.policy import Policy

SYSTEM = "You are terse."
Run = tuple[list[list[ChatMessage]], list[ChatMessage]]
"""The requests the model received, and the framework's history after the last turn."""


def question(i: int) -> str:
    return f"question {i} " + "x" * (200 + 37 * (i % 7))


def weather(city: str) -> str:
    return f"sunny in {city} " * 20


def langchain_model(replies: list[Any]) -> Any:
    """LangChain's fake chat model answering with `replies`, tools bound to itself, every
    request it receives recorded in `seen`."""
    from langchain_core.language_models import GenericFakeChatModel

    class Fake(GenericFakeChatModel):
        seen: list[list[Any]] = []  # noqa: RUF012 - a pydantic field

        def bind_tools(self, tools: Any, **kwargs: Any) -> Fake:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> Any:
            self.seen.append(list(messages))
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    return Fake(messages=iter(replies), seen=[])


def langchain_run(policy: Policy, clock: Callable[[], float] | None,
                  events: list[HistoryTrimmed], budget: int, turns: int) -> Run:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
    from langchain_core.tools import tool

    from histtrim.adapters.langchain import from_langchain
    from histtrim.integrations.langchain import HisttrimMiddleware

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return weather(city)

    middleware = HisttrimMiddleware(budget_tokens=budget, policy=policy, clock=clock,
                                    on_trim=events.append)
    messages: list[BaseMessage] = []
    sent: list[list[ChatMessage]] = []
    for i in range(turns):
        replies = [
            AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": f"C{i}"},
                                       "id": f"call_{i}"}]),
            AIMessage(f"answer {i}"),
        ]
        model = langchain_model(replies)
        agent = create_agent(model, tools=[get_weather], system_prompt=SYSTEM,
                             middleware=[middleware])
        messages = agent.invoke({"messages": [*messages, HumanMessage(question(i))]})[
            "messages"]
        sent += [from_langchain(request) for request in model.seen]
    return sent, from_langchain([SystemMessage(SYSTEM), *messages])


def pydantic_ai_run(policy: Policy, clock: Callable[[], float] | None,
                    events: list[HistoryTrimmed], budget: int, turns: int) -> Run:
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
    for i in range(turns):
        history = agent.run_sync(question(i), message_history=history).all_messages()
    return [to_rows(request)[1] for request in seen], to_rows(history)[1]


def openai_agents_run(policy: Policy, clock: Callable[[], float] | None,
                      events: list[HistoryTrimmed], budget: int, turns: int) -> Run:
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
    for i in range(turns):
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
    return sent, [*system, *to_rows(items)[1]]


RUNS: dict[str, Callable[..., Run]] = {
    "langchain": langchain_run, "pydantic-ai": pydantic_ai_run,
    "openai-agents": openai_agents_run,
}
