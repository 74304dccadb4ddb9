"""What one model call costs inside each framework integration: the synchronous work the
integration does in the host's event loop before the request is sent.

A framework hands its hook the whole history on every model call; the history grows by a tool
round (an assistant call and its result) between calls. For each integration, history size
(1k, 10k, 50k messages; `--sizes`) and policy (the spec's trim to fit, the held cut at
`token_trim_target=7/10`, and that cut with a clear policy: pydantic-ai-harness's
`ClearToolResults` defaults, CTX-6..10, issue 46), it prints the median and the least CPU
ms per call (process time: how long the host's event loop is blocked) over `--calls` calls
after a first (cold) call, the median call over the median same-run baseline (`x dumps`:
`json.dumps` of the history's texts, timed right after each call, so a claim does not rest
on absolute ms on a shared machine), and how many times a `token_counter` was called per
call (one call per new row is the floor: two per call here). The budget is a quarter of
the history's estimate, so every call trims. Goals (issue 38): at most 20 ms per call (the
median) at 50k messages, and the held cut at most 1.5x the trim to fit; the clear too at
most 20 ms per call at 50k messages (issue 46).
Run: `python bench/integration_calls.py` (needs the three framework extras).

Hooks timed: LangChain `HisttrimMiddleware._request` (what `wrap_model_call` runs before the
handler), pydantic-ai `HisttrimCapability.prepare_model_request`, the Agents SDK
`HisttrimInputFilter.__call__`."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any, NamedTuple

from histtrim.messages import ChatMessage
from histtrim.policy import SPEC, Policy, ToolContext

HELD = Policy(token_trim_target=Fraction(7, 10))
CLEAR = HELD.model_copy(update={"tool_context": ToolContext(
    mode="clear", keep=3, trigger_tokens=0, placeholder="[tool result cleared]")})
SYSTEM = "You are a careful coding agent. " * 20


class Counter:
    """A token counter that counts its own calls (bytes / 4, like EST-1)."""

    def __init__(self) -> None:
        self.calls = 0
        self.__name__ = "counting"

    def __call__(self, row: ChatMessage) -> int:
        self.calls += 1
        return len(row.content) // 4


def question(i: int) -> str:
    return f"question {i}: " + "please look at the file and fix the failing test " * 3


def output(i: int) -> str:
    return f"result {i}\n" + "line of tool output with some numbers 12345\n" * 6


def drive(coroutine: Any) -> Any:
    """Run a coroutine that never suspends (the hook awaits nothing) without an event loop,
    whose task bookkeeping would be timed too."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("the hook suspended")


# Each framework: build(n) -> (history, grow(history, i) -> history, hook(history) -> None)


def langchain_case(n: int, budget: int, policy: Policy, counter: Counter | None) -> Any:
    from langchain.agents.middleware import ModelRequest
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from histtrim.integrations.langchain import HisttrimMiddleware

    def turn(i: int) -> list[Any]:
        return [
            HumanMessage(question(i)),
            AIMessage("", tool_calls=[{"name": "run", "args": {"cmd": f"pytest -k t{i}"},
                                       "id": f"call_{i}"}]),
            ToolMessage(output(i), tool_call_id=f"call_{i}"),
            AIMessage(f"answer {i}: the test passes now."),
        ]

    def tool_round(i: int) -> list[Any]:
        return [
            AIMessage("", tool_calls=[{"name": "run", "args": {"cmd": f"ls {i}"},
                                       "id": f"more_{i}"}]),
            ToolMessage(output(i), tool_call_id=f"more_{i}"),
        ]

    history = [m for i in range(n // 4) for m in turn(i)] + [HumanMessage(question(-1))]
    middleware = HisttrimMiddleware(budget_tokens=budget, policy=policy, token_counter=counter)
    model = GenericFakeChatModel(messages=iter(()))
    system = SystemMessage(SYSTEM)

    def hook(messages: list[Any]) -> None:
        middleware._request(ModelRequest(model=model, messages=messages, system_message=system))

    return history, tool_round, hook


def pydantic_ai_case(n: int, budget: int, policy: Policy, counter: Counter | None) -> Any:
    from pydantic_ai import RunContext
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models import ModelRequestContext, ModelRequestParameters
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    from histtrim.integrations.pydantic_ai import HisttrimCapability

    def turn(i: int) -> list[Any]:
        return [
            ModelRequest(parts=[UserPromptPart(question(i))]),
            ModelResponse(parts=[ToolCallPart("run", {"cmd": f"pytest -k t{i}"},
                                              tool_call_id=f"call_{i}")]),
            ModelRequest(parts=[ToolReturnPart("run", output(i), tool_call_id=f"call_{i}")]),
            ModelResponse(parts=[TextPart(f"answer {i}: the test passes now.")]),
        ]

    def tool_round(i: int) -> list[Any]:
        return [
            ModelResponse(parts=[ToolCallPart("run", {"cmd": f"ls {i}"},
                                              tool_call_id=f"more_{i}")]),
            ModelRequest(parts=[ToolReturnPart("run", output(i), tool_call_id=f"more_{i}")]),
        ]

    history = [ModelRequest(parts=[SystemPromptPart(SYSTEM)])]
    history += [m for i in range(n // 4) for m in turn(i)]
    history.append(ModelRequest(parts=[UserPromptPart(question(-1))]))
    capability = HisttrimCapability(budget_tokens=budget, policy=policy, token_counter=counter)
    model = TestModel()
    ctx = RunContext(deps=None, model=model, usage=RunUsage(), run_id="bench")

    def hook(messages: list[Any]) -> None:
        context = ModelRequestContext(
            model=model, messages=messages, model_settings=None,
            model_request_parameters=ModelRequestParameters(),
        )
        drive(capability.prepare_model_request(ctx, context))

    return history, tool_round, hook


def openai_agents_case(n: int, budget: int, policy: Policy, counter: Counter | None) -> Any:
    from agents import Agent
    from agents.run_config import CallModelData, ModelInputData

    from histtrim.integrations.openai_agents import HisttrimInputFilter

    def turn(i: int) -> list[Any]:
        return [
            {"role": "user", "content": question(i)},
            {"type": "function_call", "call_id": f"call_{i}", "name": "run",
             "arguments": f'{{"cmd":"pytest -k t{i}"}}'},
            {"type": "function_call_output", "call_id": f"call_{i}", "output": output(i)},
            {"role": "assistant", "content": f"answer {i}: the test passes now."},
        ]

    def tool_round(i: int) -> list[Any]:
        return [
            {"type": "function_call", "call_id": f"more_{i}", "name": "run",
             "arguments": f'{{"cmd":"ls {i}"}}'},
            {"type": "function_call_output", "call_id": f"more_{i}", "output": output(i)},
        ]

    history = [m for i in range(n // 4) for m in turn(i)] + [
        {"role": "user", "content": question(-1)}]
    trimming = HisttrimInputFilter(budget_tokens=budget, policy=policy, token_counter=counter)
    agent = Agent(name="bench")

    def hook(items: list[Any]) -> None:
        trimming(CallModelData(model_data=ModelInputData(input=list(items), instructions=SYSTEM),
                               agent=agent, context=None))

    return history, tool_round, hook


CASES: dict[str, Callable[..., Any]] = {
    "langchain": langchain_case,
    "pydantic-ai": pydantic_ai_case,
    "openai-agents": openai_agents_case,
}


def run(name: str, n: int, policy: Policy, calls: int) -> Timing:
    """The cold call, then `calls` calls each growing the history by a tool round."""
    # the budget: a quarter of the history's size, measured with the spec's estimate
    probe, _, _ = CASES[name](n, 0, SPEC, None)
    size = sum(len(str(getattr(m, "content", m))) for m in probe) // 4 + 4 * len(probe)
    counter = Counter()
    history, tool_round, hook = CASES[name](n, max(size // 4, 1), policy, counter)
    start = time.process_time()
    hook(history)
    cold = (time.process_time() - start) * 1000
    times: list[float] = []
    bases: list[float] = []
    before = counter.calls
    for i in range(calls):
        history = [*history, *tool_round(i)]
        texts = [str(getattr(m, "content", m)) for m in history]
        start = time.process_time()
        hook(history)
        times.append((time.process_time() - start) * 1000)
        start = time.process_time()
        json.dumps(texts)  # the same-run baseline: serializing the history's text once
        bases.append((time.process_time() - start) * 1000)
    return Timing(cold, statistics.median(times), min(times), statistics.median(bases),
                  (counter.calls - before) / calls)


class Timing(NamedTuple):
    cold: float
    median: float
    """The median CPU ms of a warm call."""
    best: float
    """The least CPU ms of a warm call (the machine's noise only adds)."""
    base: float
    """The median CPU ms of `json.dumps` of the history's texts, timed right after each call."""
    counted: float
    """`token_counter` calls per warm call."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--only", default=",".join(CASES))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'integration':<14} {'messages':>8} {'policy':<7} {'cold ms':>8} {'ms/call':>8} "
          f"{'min ms':>7} {'x dumps':>7} {'counter calls/call':>18} {'x fit':>6}")
    worst, worst_ratio, worst_clear, worst_dumps = 0.0, 0.0, 0.0, 0.0
    for name in args.only.split(","):
        for n in sizes:
            fit_ms = 0.0
            for label, policy in (("fit", SPEC), ("held", HELD), ("clear", CLEAR)):
                t = run(name, n, policy, args.calls)
                ratio = "" if label == "fit" else f"{t.median / fit_ms:.2f}"
                if label == "fit":
                    fit_ms = t.median
                elif label == "held":
                    worst_ratio = max(worst_ratio, t.median / fit_ms)
                if n == max(sizes):
                    worst_dumps = max(worst_dumps, t.median / t.base)
                    if label == "clear":
                        worst_clear = max(worst_clear, t.median)
                    else:
                        worst = max(worst, t.median)
                print(f"{name:<14} {n:>8,} {label:<7} {t.cold:>8.1f} {t.median:>8.1f} "
                      f"{t.best:>7.1f} {t.median / t.base:>7.2f} {t.counted:>18.1f} {ratio:>6}")
    print(f"worst median ms per call at {max(sizes):,} messages: {worst:.1f} (goal <= 20): "
          f"{'met' if worst <= 20 else 'MISSED'}")
    print(f"worst held/fit: {worst_ratio:.2f} (goal <= 1.5): "
          f"{'met' if worst_ratio <= 1.5 else 'MISSED'}")
    print(f"worst clear median ms per call at {max(sizes):,} messages: {worst_clear:.1f} "
          f"(goal <= 20, issue 46): {'met' if worst_clear <= 20 else 'MISSED'}")
    print(f"worst call / json.dumps of the history's texts at {max(sizes):,} messages: "
          f"{worst_dumps:.2f}")


if __name__ == "__main__":
    main()
