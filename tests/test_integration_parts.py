"""Issue 38, items 1-4 and 7, in each framework with its own fake model: a non-text part is
priced by one rule, by kind, whoever sent it (EST-2, decision "File parts": one image's price,
never the text of its encoding); an empty tool-call id or tool name is priced and paired as the
reference's row would be, and never fails the host's run (PAIR-2); the Agents SDK's
`tool_search_call` pairs with its `tool_search_output` (PAIR-1); `trim_messages(max_tokens=0)`
keeps the newest turn under every policy (KEEP-3)."""

from __future__ import annotations

import asyncio
import base64
from fractions import Fraction
from typing import Any

import pytest
from framework_runs import langchain_model

from histtrim import IMAGE_TOKENS, validate_tool_pairing
from histtrim.policy import SPEC, Policy

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4096).decode()
"""A 1 MiB image as base64 (1.4 MB of text: about 350k tokens if priced as text)."""
HELD = Policy(token_trim_target=Fraction(7, 10))


# ------------------------------------------------------------------------------ LangChain


def test_est_2_a_langchain_models_generated_image_costs_one_image() -> None:
    """Item 1: the next request keeps the turn with the generated image (1 MiB, one image)."""
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage

    from histtrim.adapters.langchain import trim_messages
    from histtrim.integrations.langchain import HisttrimMiddleware

    drawn = AIMessage([{"type": "text", "text": "Here it is."},
                       {"type": "image", "base64": PNG, "mime_type": "image/png"}])
    middleware = HisttrimMiddleware(budget_tokens=4_000)
    first = create_agent(langchain_model([drawn]), middleware=[middleware])
    messages = first.invoke({"messages": [HumanMessage("Draw a cat")]})["messages"]
    model = langchain_model([AIMessage("A tabby.")])
    second = create_agent(model, middleware=[middleware])
    second.invoke({"messages": [*messages, HumanMessage("What breed is it?")]})
    assert [m.content for m in model.seen[0]][:1] == ["Draw a cat"]  # the turn was kept
    (priced,) = middleware.priced([drawn])
    assert priced.older == IMAGE_TOKENS + 3 + 4
    history = [*messages, HumanMessage("What breed is it?")]
    for policy in (SPEC, HELD):  # the adapter prices it by the same rule
        assert trim_messages(history, max_tokens=4_000, policy=policy) == history


def test_pair_2_a_langchain_tool_call_with_an_empty_id_or_name_completes_the_run() -> None:
    """Item 3: Gemini's OpenAI-compatible endpoint and LM Studio send `id: ""`; the agent
    completes the run and the next request holds the call and its result, paired."""
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool

    from histtrim.adapters.langchain import from_langchain
    from histtrim.integrations.langchain import HisttrimMiddleware

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    call = AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "R"}, "id": ""}])
    model = langchain_model([call, AIMessage("Sunny.")])
    agent = create_agent(model, tools=[get_weather], middleware=[HisttrimMiddleware()])
    out = agent.invoke({"messages": [HumanMessage("Weather in R?")]})["messages"]
    assert out[-1].content == "Sunny." and len(model.seen) == 2
    assert [type(m).__name__ for m in model.seen[1]] == ["HumanMessage", "AIMessage",
                                                         "ToolMessage"]
    rows = from_langchain(model.seen[1])
    assert not [p for p in validate_tool_pairing(rows) if p.is_error]
    nameless = [HumanMessage("q"), AIMessage("", tool_calls=[{"name": "", "args": {}, "id": ""}]),
                ToolMessage("no such tool", tool_call_id="")]
    done = HisttrimMiddleware(budget_tokens=1).trim(nameless)  # priced, paired, kept
    assert done.units == nameless and '"name":""' in done.rows[1].content


def test_keep_3_trim_messages_max_tokens_0_keeps_the_newest_turn_under_every_policy() -> None:
    """Item 7: a budget of 0 is over at every request, held or not: the newest turn."""
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    from histtrim.adapters.langchain import trim_messages

    history = [SystemMessage("s"), HumanMessage("q0"), AIMessage("a0"), HumanMessage("q1"),
               AIMessage("a1"), HumanMessage("q2")]
    for policy in (SPEC, HELD, Policy(turn_trim_target=Fraction(1, 2))):
        assert trim_messages(history, max_tokens=0, policy=policy) == [history[0], history[-1]]


# ---------------------------------------------------------------------------- pydantic-ai


def test_est_2_pydantic_ai_generated_files_and_tool_images_cost_one_image_each() -> None:
    """Items 1 and 2: a `FilePart` the model generated costs one image (not its bytes'
    repr); twenty screenshots a tool returns cost twenty images (not 0), so the earlier turn
    is dropped to fit them."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        BinaryContent,
        FilePart,
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from histtrim.integrations.pydantic_ai import HisttrimCapability

    image = BinaryContent(base64.b64decode(PNG), media_type="image/png")
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            return ModelResponse(parts=[TextPart("Here it is."), FilePart(image)])
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("Twenty screenshots.")])
        return ModelResponse(parts=[ToolCallPart("screenshots", {}, tool_call_id="c1")])

    capability = HisttrimCapability(budget_tokens=20_000)
    agent = Agent(FunctionModel(model), capabilities=[capability])

    @agent.tool_plain
    def screenshots() -> Any:
        """Twenty screenshots of the page."""
        return [BinaryContent(b"\x89PNG" + bytes([i]) * 64, media_type="image/png")
                for i in range(20)]

    history = agent.run_sync("Draw a cat").all_messages()
    agent.run_sync("What breed?", message_history=history)
    assert any(isinstance(p, FilePart) for m in seen[1] for p in m.parts)  # kept: one image
    _, priced = capability.priced(history)
    assert priced[-1].older == IMAGE_TOKENS + 3 + 4
    history = agent.run_sync("Take screenshots", message_history=history).all_messages()
    assert not any(isinstance(p, FilePart) for m in seen[-1] for p in m.parts)  # dropped
    done = capability.trim(history)[1]
    assert done.tokens >= 20 * IMAGE_TOKENS


def test_pair_2_a_pydantic_ai_tool_call_with_an_empty_id_completes_the_run() -> None:
    """Item 3: a call with `tool_call_id=""` (and one with an empty tool name, which the
    framework answers with a retry prompt) is priced and paired: the run completes."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from histtrim.integrations.pydantic_ai import HisttrimCapability, to_rows

    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart("get_weather", {"city": "R"},
                                                     tool_call_id="")])
        if len(seen) == 2:
            return ModelResponse(parts=[ToolCallPart("", {}, tool_call_id="")])
        return ModelResponse(parts=[TextPart("Sunny.")])

    agent = Agent(FunctionModel(model), capabilities=[HisttrimCapability()])

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    result = agent.run_sync("Weather in R?")
    assert result.output == "Sunny." and len(seen) == 3
    rows = to_rows(seen[2])[1]  # the retry answers the nameless call under an id it made
    assert len(rows) == 5 and '"id":""' in rows[1].content and '"name":""' in rows[3].content


# ------------------------------------------------------------------------- OpenAI Agents SDK


def sdk_filter_call(trimming: Any, items: list[Any]) -> list[Any]:
    from agents import Agent
    from agents.run_config import CallModelData, ModelInputData

    data = CallModelData(model_data=ModelInputData(input=items, instructions="terse"),
                         agent=Agent(name="a"), context=None)
    return list(trimming(data).input)


def test_est_2_an_sdk_generated_image_costs_one_image() -> None:
    """Item 1: an `image_generation_call`'s base64 `result` is one image, not its text."""
    pytest.importorskip("agents")
    from histtrim.integrations.openai_agents import HisttrimInputFilter

    items = [
        {"role": "user", "content": "Draw a cat"},
        {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": PNG},
        {"role": "assistant", "content": "Here it is."},
        {"role": "user", "content": "What breed?"},
    ]
    trimming = HisttrimInputFilter(budget_tokens=4_000)
    assert sdk_filter_call(trimming, items) == items
    _, priced = trimming.priced(items)
    assert IMAGE_TOKENS < priced[1].older < IMAGE_TOKENS + 100


def test_pair_1_sdk_tool_search_call_pairs_with_its_output_and_empty_ids_pass() -> None:
    """Items 3 and 4: `tool_search_call` + `tool_search_output` (the SDK's documented pairing)
    and a `function_call` with `call_id: ""` are sent, priced, paired, never refused."""
    pytest.importorskip("agents")
    from agents import Agent, RunConfig, function_tool
    from agents.testing import ScriptedModel, assistant_message

    from histtrim.integrations.openai_agents import HisttrimInputFilter, run_with_histtrim, to_rows

    tools = [{"type": "function", "name": f"tool_{i}", "description": "d" * 400,
              "parameters": {}} for i in range(5)]
    items = [
        {"role": "user", "content": "Find a tool"},
        {"type": "tool_search_call", "id": "ts_1", "call_id": "call_ts", "arguments": {},
         "execution": "client", "status": "completed"},
        {"type": "tool_search_output", "id": "tso_1", "call_id": "call_ts",
         "execution": "client", "status": "completed", "tools": tools},
        {"role": "assistant", "content": "Found."},
        {"role": "user", "content": "Use it"},
    ]
    assert sdk_filter_call(HisttrimInputFilter(), items) == items
    rows = to_rows(items)[1]
    assert [r.role for r in rows] == ["user", "assistant", "tool", "assistant", "user"]
    assert rows[2].facts.utf8_bytes > 2_000  # the tools it loaded are priced

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    # The SDK refuses to run a call with an empty id itself, but a session recorded from such
    # a provider holds them: the next run sends it, priced and paired.
    recorded = [{"role": "user", "content": "Weather in P?"},
                {"type": "function_call", "call_id": "", "name": "", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "", "output": "sunny"},
                {"role": "assistant", "content": "Sunny."}]
    model = ScriptedModel([[assistant_message("Still sunny.")]])
    agent = Agent(name="w", model=model, tools=[get_weather])
    result = asyncio.run(run_with_histtrim(
        agent, [*recorded, {"role": "user", "content": "And now?"}],
        trimming=HisttrimInputFilter(), run_config=RunConfig(tracing_disabled=True)))
    assert result.final_output == "Still sunny."
    sent = to_rows(model.calls[0].input)[1]
    assert len(sent) == 5 and '"id":""' in sent[1].content
    assert not [p for p in validate_tool_pairing(sent) if p.is_error]
