"""USAGE-1..6 in the three frameworks, each driven by its own fake model reporting usage: the
provider counts every request at twice histtrim's estimate, so the estimate alone lets requests
grow to twice the budget. With the reported usage, a request reported over the budget is
followed by one trimmed to the budget (its low-water mark with a `Policy` target) in the
provider's units; a request reported within it is never followed by a moved cut (the next
request extends it: the prefix stays byte-stable); no two requests in a row are over. Bad or
missing usage (0, negative, absent, another model's) leaves the estimate alone in charge."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest

from histtrim import estimate_history_tokens
from histtrim.messages import ChatMessage
from histtrim.policy import SPEC, Policy

BUDGET = 1_000
TURNS = 24
FACTOR = 2
HELD = Policy(token_trim_target=Fraction(7, 10))
SYSTEM = "You are terse."


def question(i: int) -> str:
    return f"question {i} " + "x" * (230 + 17 * (i % 5))


def check_calibrated(requests: list[list[ChatMessage]], policy: Policy) -> None:
    """The sent requests, as rows, against USAGE-1..4 with a provider at FACTOR x."""
    reported = [FACTOR * estimate_history_tokens(rows) for rows in requests]
    assert max(reported) > BUDGET  # the estimate alone would let them grow past it
    fit = BUDGET * policy.token_trim_target
    moves = 0
    for i in range(len(requests) - 1):
        if reported[i] <= BUDGET:  # within the budget: the next request extends this one
            assert requests[i + 1][: len(requests[i])] == requests[i], i
        else:  # over: the next one is trimmed to the (low-water) budget in provider units
            assert reported[i + 1] <= fit, (i, reported[i], reported[i + 1])
            moves += 1
    assert moves >= 2
    assert estimate_history_tokens(requests[-1]) * FACTOR <= BUDGET or reported[-2] <= BUDGET


# ------------------------------------------------------------------------------ LangChain


def langchain_session(policy: Policy, usage: Callable[[int], Any]) -> list[list[ChatMessage]]:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from histtrim.adapters.langchain import from_langchain
    from histtrim.integrations.langchain import HisttrimMiddleware

    class Provider(GenericFakeChatModel):
        seen: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field
        model_name: str = "m1"

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> Any:
            self.seen.append(list(messages))
            count = FACTOR * estimate_history_tokens(from_langchain(messages))
            reply = AIMessage(f"answer {len(self.seen)}", **usage(count))
            return ChatResult(generations=[ChatGeneration(message=reply)])

    middleware = HisttrimMiddleware(budget_tokens=BUDGET, policy=policy)
    model = Provider(messages=iter(()), seen=[])
    agent = create_agent(model, system_prompt=SYSTEM, middleware=[middleware])
    messages: list[BaseMessage] = []
    for i in range(TURNS):
        messages = agent.invoke({"messages": [*messages, HumanMessage(question(i))]})[
            "messages"]
    return [from_langchain(request) for request in model.seen]


def langchain_usage(count: int) -> dict[str, Any]:
    return {"usage_metadata": {"input_tokens": count, "output_tokens": 1,
                               "total_tokens": count + 1},
            "response_metadata": {"model_name": "m1-2025-01-01"}}


@pytest.mark.parametrize("policy", [SPEC, HELD])
def test_usage_4_langchain_reported_usage_trims_once_per_crossing(policy: Policy) -> None:
    check_calibrated(langchain_session(policy, langchain_usage), policy)


def test_usage_5_langchain_bad_usage_leaves_the_estimate_in_charge() -> None:
    plain = langchain_session(HELD, lambda count: {})
    for bad in (0, -5):
        assert langchain_session(HELD, lambda count, bad=bad: {"usage_metadata": {
            "input_tokens": bad, "output_tokens": 1, "total_tokens": 1}}) == plain
    other = langchain_session(HELD, lambda count: {**langchain_usage(count), "response_metadata":
                                                   {"model_name": "m2"}})
    assert other == plain


# ---------------------------------------------------------------------------- pydantic-ai


def pydantic_ai_session(policy: Policy, usage: Callable[[int], Any]) -> list[list[ChatMessage]]:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from histtrim.integrations.pydantic_ai import HisttrimCapability, to_rows

    requests: list[list[ChatMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        rows = to_rows(messages)[1]
        requests.append(rows)
        count = FACTOR * estimate_history_tokens(rows)
        return ModelResponse(parts=[TextPart(f"answer {len(requests)}")], **usage(count))

    capability = HisttrimCapability(budget_tokens=BUDGET, policy=policy)
    agent = Agent(FunctionModel(model), system_prompt=SYSTEM, capabilities=[capability])
    history: list[ModelMessage] = []
    for i in range(TURNS):
        history = agent.run_sync(question(i), message_history=history).all_messages()
    return requests


def pydantic_ai_usage(count: int) -> dict[str, Any]:
    from pydantic_ai.usage import RequestUsage

    return {"usage": RequestUsage(input_tokens=count, output_tokens=1)}


@pytest.mark.parametrize("policy", [SPEC, HELD])
def test_usage_4_pydantic_ai_reported_usage_trims_once_per_crossing(policy: Policy) -> None:
    check_calibrated(pydantic_ai_session(policy, pydantic_ai_usage), policy)


def test_usage_5_pydantic_ai_a_negative_report_is_no_report() -> None:
    from pydantic_ai.usage import RequestUsage

    plain = pydantic_ai_session(HELD, lambda count: {"usage": RequestUsage(input_tokens=1)})
    bad = pydantic_ai_session(HELD, lambda count: {"usage": RequestUsage(input_tokens=-count)})
    assert bad == plain


def test_usage_5_another_models_report_is_no_report() -> None:
    """A report names the model that answered: the requested one, or it with a dated
    snapshot; a fallback's report (another model) is none (`FunctionModel` renames every
    response to itself, so this is checked on the rule)."""
    from histtrim.integrations._trimmer import same_model

    assert same_model("gpt-4o", "gpt-4o-2024-08-06") and same_model("m", "m")
    assert same_model(None, "m") and same_model("m", None)
    assert not same_model("gpt-4o", "gpt-4o-mini") and not same_model("m1", "m2")


# ------------------------------------------------------------------------- OpenAI Agents SDK


def sdk_session(policy: Policy, usage: Callable[[int], Any]) -> list[list[ChatMessage]]:
    pytest.importorskip("agents")
    from agents import Agent, RunConfig
    from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message

    from histtrim.integrations.openai_agents import HisttrimInputFilter, run_with_histtrim, to_rows

    requests: list[list[ChatMessage]] = []

    def respond(call: ModelCall) -> ModelStep:
        rows = [ChatMessage.system(SYSTEM), *to_rows(call.input)[1]]
        requests.append(rows)
        count = FACTOR * estimate_history_tokens(rows)
        return ModelStep(output=[assistant_message(f"answer {len(requests)}")],
                         usage=usage(count))

    trimming = HisttrimInputFilter(budget_tokens=BUDGET, policy=policy)
    items: list[Any] = []
    for i in range(TURNS):
        model = ScriptedModel([ModelStep.respond(respond)])
        agent = Agent(name="a", instructions=SYSTEM, model=model)
        result = asyncio.run(run_with_histtrim(
            agent, [*items, {"role": "user", "content": question(i)}], trimming=trimming,
            run_config=RunConfig(tracing_disabled=True)))
        items = result.to_input_list()
    return requests


def sdk_usage(count: int) -> Any:
    from agents.usage import Usage

    return Usage(requests=1, input_tokens=count, output_tokens=1, total_tokens=count + 1)


@pytest.mark.parametrize("policy", [SPEC, HELD])
def test_usage_4_sdk_reported_usage_trims_once_per_crossing(policy: Policy) -> None:
    check_calibrated(sdk_session(policy, sdk_usage), policy)


def test_usage_5_sdk_a_zero_report_is_no_report() -> None:
    from agents.usage import Usage

    assert sdk_session(HELD, lambda count: Usage()) == sdk_session(
        HELD, lambda count: Usage(requests=1, input_tokens=0, output_tokens=1, total_tokens=1))


def test_usage_1_a_streamed_sdk_response_reports_its_usage() -> None:
    """The SDK has no usage hook: `HisttrimModel` reads a streamed response's completed
    event, as it reads a whole response, and the next call of that history applies it."""
    pytest.importorskip("agents")
    from agents import Agent, ModelSettings
    from agents.models.interface import ModelTracing
    from agents.run_config import CallModelData, ModelInputData
    from agents.testing import ModelStep, ScriptedModel, assistant_message

    from histtrim.integrations.openai_agents import HisttrimInputFilter, HisttrimModel

    items = [item for i in range(8) for item in (
        {"role": "user", "content": question(i)}, {"role": "assistant", "content": "ok"})]
    items.append({"role": "user", "content": "and now?"})
    trimming = HisttrimInputFilter(budget_tokens=BUDGET)

    def call(history: list[Any]) -> list[Any]:
        data = CallModelData(model_data=ModelInputData(input=history, instructions=SYSTEM),
                             agent=Agent(name="a"), context=None)
        return list(trimming(data).input)

    sent = call(items)
    assert sent == items  # the estimate alone: under the budget
    model = HisttrimModel(ScriptedModel([ModelStep(output=[assistant_message("fine")],
                                                   usage=sdk_usage(4 * BUDGET))]), trimming)

    async def stream() -> None:
        async for _ in model.stream_response(
            SYSTEM, sent, ModelSettings(), [], None, [], ModelTracing.DISABLED,
            previous_response_id=None, conversation_id=None, prompt=None,
        ):
            pass

    asyncio.run(stream())
    later = call([*items, {"role": "assistant", "content": "fine"},
                  {"role": "user", "content": "more"}])
    estimated = estimate_history_tokens([ChatMessage.system(SYSTEM), *to_rows_sdk(sent)])
    kept = estimate_history_tokens([ChatMessage.system(SYSTEM), *to_rows_sdk(later)])
    assert len(later) < len(items)
    assert kept * 4 * BUDGET <= BUDGET * estimated  # cut to the budget in provider units


def to_rows_sdk(items: list[Any]) -> list[ChatMessage]:
    from histtrim.integrations.openai_agents import to_rows

    return to_rows(items)[1]
